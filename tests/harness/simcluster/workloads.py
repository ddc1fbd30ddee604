"""Seeded workload generator over a policy: random team, card type, count, per-pod split, MIG
profile, tolerations and tier, as `hetgitops explain` requests and as the batch Jobs a user
would submit for them. Reusable by any sim test that needs many realistic workloads."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hetgitops.explain import request as requests
from hetgitops.explain.workload import KUEUE_PRIORITY, KUEUE_QUEUE, Workload
from hetgitops.model.policy import Policy
from hetgitops.plan.flavors import toleration

LABEL = "hetgitops.io/sim-workload"


@dataclass(frozen=True)
class Generated:
    name: str
    request: requests.Request
    workload: Workload  # what the request asks, before it became a manifest
    job: dict[str, Any]  # the batch Job submitted for it
    card: str  # the card type it selects (jobs of different card types never interact)


def _units(rng: random.Random, largest: int) -> tuple[int, int]:
    """(per pod, pods): mostly fitting sizes, sometimes more than any node or quota holds."""
    per_pod = rng.choice([1, 1, 2, 4, 8, 8, largest + 1 if rng.random() < 0.1 else largest])
    pods = rng.choice([1, 1, 2, 2, 3, 4, 6, 8, 12, 20])
    return max(per_pod, 1), pods


def requests_for(policy: Policy, seed: int, count: int) -> Iterator[requests.Request]:
    rng = random.Random(seed)
    teams = sorted(policy.teams)
    cards = sorted(policy.card_types)
    tiers = [None, *sorted(policy.tiers)]
    for _ in range(count):
        team = policy.teams[rng.choice(teams)]
        own = sorted(
            {policy.pools[q.pool].card_type for q in team.quotas if q.pool in policy.pools}
        )
        card = rng.choice(own) if own and rng.random() < 0.8 else rng.choice(cards)
        pools = [p for p in policy.pools.values() if p.card_type == card]
        largest = max((n.cards for p in pools for n in p.nodes), default=1)
        profiles = sorted({name for p in pools for d in p.mig for name in d.profiles})
        tier = rng.choice([t for t in tiers if t is None or t in team.tiers] or [None])
        if profiles and rng.random() < 0.4:
            profile = rng.choice([*profiles, "2g.20gb"]) if rng.random() < 0.9 else "7g.80gb"
            per_pod = rng.choice([1, 1, 2])
            pods = rng.choice([1, 2, 4, 8, 16, 30])
            yield requests.Request(
                team.name, card=card, per_node=per_pod, mig=((profile, per_pod * pods),), tier=tier
            )
            continue
        per_pod, pods = _units(rng, largest)
        yield requests.Request(
            team.name, gpus=per_pod * pods, card=card, per_node=per_pod, tier=tier
        )


def _quantity(resource: str, amount: int) -> str:
    return f"{amount}m" if resource == "cpu" else str(amount)


def job(name: str, workload: Workload, *, tolerate: bool, policy: Policy) -> dict[str, Any]:
    (pod_set,) = workload.pod_sets
    labels = {KUEUE_QUEUE: workload.queue or "", LABEL: "true"}
    if workload.tier:
        labels[KUEUE_PRIORITY] = workload.tier
    requests_ = {r: _quantity(r, v) for r, v in sorted(pod_set.requests.items())}
    card = pod_set.node_selector.get(next(iter(pod_set.node_selector), ""), "")
    tolerations = (
        [toleration(t) for p in policy.pools.values() if p.card_type == card for t in p.taints]
        if tolerate
        else []
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": workload.namespace, "labels": labels},
        "spec": {
            "suspend": True,
            "parallelism": pod_set.count,
            "completions": pod_set.count,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": dict(pod_set.node_selector),
                    "tolerations": tolerations,
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": requests_, "limits": requests_},
                        }
                    ],
                }
            },
        },
    }


def generate(policy: Policy, seed: int, count: int, prefix: str = "sim-wl") -> list[Generated]:
    rng = random.Random(seed + 1)
    found = []
    for index, asked in enumerate(requests_for(policy, seed, count)):
        workload = requests.from_request(policy, asked)
        obj = job(f"{prefix}-{index:04d}", workload, tolerate=rng.random() < 0.8, policy=policy)
        found.append(Generated(obj["metadata"]["name"], asked, workload, obj, asked.card or ""))
    return found


def rounds(generated: list[Generated]) -> list[list[Generated]]:
    """Batches holding at most one workload per card type: every card type is one pool in the
    bundled fleet and requests select their card, so workloads of one batch never share a
    flavor, and each meets the cluster as it was before the batch."""
    queues: dict[str, list[Generated]] = {}
    for item in generated:
        queues.setdefault(item.card, []).append(item)
    batches = []
    while any(queues.values()):
        batches.append([q.pop(0) for q in queues.values() if q])
    return batches
