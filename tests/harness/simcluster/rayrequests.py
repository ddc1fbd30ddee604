"""Seeded Ray objects over a policy for the explain differential (issue 35 item 5): random team,
kind (RayCluster, RayJob, RayService), one to three worker groups each on a random card type
(mostly the team's own; sometimes one it has no quota on), a random per-pod split and size
(sometimes more than a node or the quota holds), MIG profiles, `numOfHosts`, tolerations or
none; the head CPU-only and unpinned (Kueue gives it the first flavor of the team's order that
fits) or pinned to a worker group's pool; a RayJob's submitter KubeRay's default (500m, 200Mi,
no selector) or pinned beside the head. Each group's requests come from `explain`'s own request
arithmetic (`request.from_request`: the team's cpu and memory per card), as the Jobs of
tests/harness/simcluster/workloads.py do."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from hetgitops.compilers.kueue_queues import local_queue_name
from hetgitops.explain import request as requests
from hetgitops.explain.workload import PodSet
from hetgitops.model.policy import Policy, Team

from .raymanifests import Group, ray_cluster, ray_job, ray_service

KINDS = ("RayCluster", "RayCluster", "RayJob", "RayJob", "RayService")
HEAD_REQUESTS = {"cpu": "1", "memory": "4Gi"}


@dataclass(frozen=True)
class GeneratedRay:
    name: str
    kind: str
    obj: dict[str, Any]
    cards: tuple[str, ...]  # the card types its groups select


def _quantity(resource: str, amount: int) -> str:
    return f"{amount}m" if resource == "cpu" else str(amount)


def _group(name: str, pod_set: PodSet, replicas: int, hosts: int, tolerate: bool) -> Group:
    return Group(
        name,
        {r: _quantity(r, v) for r, v in sorted(pod_set.requests.items())},
        replicas=replicas,
        num_of_hosts=hosts,
        node_selector=dict(pod_set.node_selector),
        tolerations=list(pod_set.tolerations) if tolerate else [],
    )


def _worker(policy: Policy, rng: random.Random, team: Team, name: str) -> tuple[Group, str]:
    """One worker group of `team` and the card type it selects."""
    own = sorted({policy.pools[q.pool].card_type for q in team.quotas if q.pool in policy.pools})
    cards = sorted({p.card_type for p in policy.pools.values()})
    card = rng.choice(own) if own and rng.random() < 0.85 else rng.choice(cards)
    pools = [p for p in policy.pools.values() if p.card_type == card]
    largest = max((n.cards for p in pools for n in p.nodes), default=1)
    profiles = sorted({name for p in pools for d in p.mig for name in d.profiles})
    replicas = rng.choice([1, 1, 2, 2, 3, 4, 8])
    hosts = rng.choice([1, 1, 1, 2])
    if profiles and rng.random() < 0.35:
        per_pod = rng.choice([1, 1, 2])
        asked = requests.Request(
            team.name,
            card=card,
            per_node=per_pod,
            mig=((rng.choice(profiles), per_pod * replicas * hosts),),
        )
    else:
        per_pod = rng.choice([1, 1, 2, 4, 8, largest, largest + 1 if rng.random() < 0.15 else 1])
        asked = requests.Request(
            team.name, gpus=per_pod * replicas * hosts, card=card, per_node=per_pod
        )
    (pod_set,) = requests.from_request(policy, asked).pod_sets
    return _group(name, pod_set, replicas, hosts, rng.random() < 0.85), card


def _head(rng: random.Random, workers: list[Group]) -> Group:
    if rng.random() < 0.6:
        return Group("head", HEAD_REQUESTS)
    pinned = rng.choice(workers)
    return Group(
        "head", HEAD_REQUESTS, node_selector=pinned.node_selector, tolerations=pinned.tolerations
    )


def generate(policy: Policy, seed: int, count: int, prefix: str = "sim-ray") -> list[GeneratedRay]:
    rng = random.Random(seed)
    teams = sorted(policy.teams)
    found: list[GeneratedRay] = []
    while len(found) < count:
        team = policy.teams[rng.choice(teams)]
        if not team.namespaces:
            continue
        built = [_worker(policy, rng, team, f"w{i}") for i in range(rng.choice([1, 1, 2, 3]))]
        workers = [g for g, _ in built]
        head = _head(rng, workers)
        name = f"{prefix}-{len(found):04d}"
        namespace = team.namespaces[0]
        assert policy.fleet is not None
        queue = local_queue_name(policy.fleet, team)
        kind = rng.choice(KINDS)
        if kind == "RayCluster":
            obj = ray_cluster(name, namespace, queue, head, workers)
        elif kind == "RayService":
            obj = ray_service(name, namespace, queue, head, workers)
        else:
            submitter = None
            if rng.random() < 0.5:
                submitter = Group(
                    "submitter",
                    {"cpu": "500m", "memory": "512Mi"},
                    node_selector=head.node_selector,
                    tolerations=head.tolerations,
                )
            obj = ray_job(name, namespace, queue, head, workers, submitter=submitter)
        found.append(GeneratedRay(name, kind, obj, tuple(sorted({c for _, c in built}))))
    return found
