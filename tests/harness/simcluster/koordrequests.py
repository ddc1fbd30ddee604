"""Seeded requests for koord-scheduler, for the differential of explain's Koordinator view
(tests/sim/test_sim_koordinator_explain.py, issue 34): bare pods of `schedulerName:
koord-scheduler`, some labelled with a team's leaf quota and asking within its min, between its
min and its max (the parent's runtime decides) or over its max; some unlabelled in a team's
namespace (the quota binding it); some with a misspelled quota label (the default quota) or a
parent quota's name (the pod webhook refuses them).

Cards per pod divide every node's units of the pool, so the pods of one request pack the
pool's nodes whole and only the quota can hold them back; `batches` keeps two requests of one
quota tree apart."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from hetgitops.explain.koordinator import quota_of
from hetgitops.explain.nodes import pool_nodes
from hetgitops.explain.workload import KOORD_QUOTA, Workload
from hetgitops.model.policy import Policy
from hetgitops.plan.koordinator_quota import QuotaNode, quota_nodes

Obj = dict[str, Any]
SCHEDULER = "koord-scheduler"
BATCH = "hetgitops.io/koord-diff"
KINDS = ("within-min", "parent-runtime", "over-max", "namespace", "misspelled", "parent-label")
WEIGHTS = (3, 3, 3, 1, 1, 1)
FREE_NAMESPACE = "default"


@dataclass(frozen=True)
class KoordRequest:
    name: str
    kind: str
    quota: str  # what koord-scheduler charges (explain's rule), or the parent named
    tree: str | None  # the pool whose nodes and quotas it touches; None: nothing (refused)
    pods: tuple[Obj, ...]

    @property
    def manifest(self) -> Obj:
        """What explain is asked about: the pod, or a Job of the pods' template."""
        if len(self.pods) == 1:
            return self.pods[0]
        pod = self.pods[0]
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": self.name, "namespace": pod["metadata"]["namespace"]},
            "spec": {
                "parallelism": len(self.pods),
                "template": {
                    "metadata": {"labels": pod["metadata"]["labels"]},
                    "spec": pod["spec"],
                },
            },
        }


def _pod(name: str, namespace: str, label: str | None, key: str, per_pod: int) -> Obj:
    request = {"cpu": "1", "memory": "1Gi", key: str(per_pod)}
    labels = {BATCH: "0", **({KOORD_QUOTA: label} if label else {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "schedulerName": SCHEDULER,
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": request, "limits": request},
                }
            ],
        },
    }


def _sizes(policy: Policy, leaf: QuotaNode) -> list[tuple[str, list[int]]]:
    """(accelerator key, cards per pod that divide every node's units) of the leaf's pool."""
    nodes = pool_nodes(policy, policy.pools[leaf.pool])
    found = []
    for key in leaf.max:
        if key in ("cpu", "memory") or int(leaf.max[key]) == 0:
            continue
        units = [n.units.get(key, 0) for n in nodes]
        if not units or min(units) == 0:
            continue
        common = math.gcd(*units)
        found.append((key, [d for d in range(1, min(common, 8) + 1) if common % d == 0]))
    return found


def _count(rng: random.Random, kind: str, least: int, most: int, per_pod: int) -> int | None:
    """How many pods of `per_pod` land the request in the band `kind` names (at most 8)."""
    if kind == "within-min":
        top = least // per_pod
        return rng.randint(1, min(top, 8)) if top >= 1 else None
    if kind == "over-max":
        low = most // per_pod + 1
        return rng.randint(low, low + 1) if low + 1 <= 8 else None
    low, high = least // per_pod + 1, most // per_pod  # parent-runtime: min < asked <= max
    return rng.randint(low, min(high, 8)) if low <= min(high, 8) else None


def generate(policy: Policy, seed: int, count: int, prefix: str = "kd") -> list[KoordRequest]:
    rng = random.Random(seed)
    nodes = quota_nodes(policy)
    leaves = [n for n in nodes if not n.is_parent and _sizes(policy, n)]
    parents = [n for n in nodes if n.is_parent]
    bound = [n for n in leaves if n.namespaces]
    found: list[KoordRequest] = []
    while len(found) < count:
        name = f"{prefix}-{len(found):04d}"
        kind = rng.choices(KINDS, WEIGHTS)[0]
        if kind == "parent-label":
            parent = rng.choice(parents)
            pod = _pod(f"{name}-0", FREE_NAMESPACE, parent.name, "cpu", 1)
            pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
            found.append(KoordRequest(name, kind, parent.name, None, (pod,)))
            continue
        leaf = rng.choice(bound if kind in ("namespace", "misspelled") else leaves)
        key, sizes = rng.choice(_sizes(policy, leaf))
        per_pod = rng.choice(sizes)
        least, most = int(leaf.min[key]), int(leaf.max[key])
        # the default quota holds a misspelled request back nowhere: keep it within the max
        # (never above the pool's units), so the nodes hold it all
        bands = KINDS[:2] if kind == "misspelled" else KINDS[:3]
        band = rng.choice(bands) if kind in ("namespace", "misspelled") else kind
        pods = _count(rng, band, least, most, per_pod)
        if pods is None:
            continue
        namespace = rng.choice(leaf.namespaces) if leaf.namespaces else FREE_NAMESPACE
        label = {"namespace": None, "misspelled": leaf.name + "x"}.get(kind, leaf.name)
        made = tuple(_pod(f"{name}-{i}", namespace, label, key, per_pod) for i in range(pods))
        quota, _ = quota_of(policy, Workload("Pod", name, namespace, (), queue=label))
        # a misspelled label counts in the default quota, but the pod webhook pins the pods to
        # the tree of the quota binding their namespace: leaf's pool either way
        shown = f"{kind}/{band}" if band != kind else kind
        found.append(KoordRequest(name, shown, quota, leaf.pool, made))
    return found


def batches(requests: list[KoordRequest]) -> list[list[KoordRequest]]:
    """Requests in submission order, grouped so that no two of a batch touch one tree."""
    found: list[list[KoordRequest]] = []
    open_batch: list[KoordRequest] = []
    for request in requests:
        if request.tree is not None and any(r.tree == request.tree for r in open_batch):
            found.append(open_batch)
            open_batch = []
        open_batch.append(request)
    return [b for b in [*found, open_batch] if b]
