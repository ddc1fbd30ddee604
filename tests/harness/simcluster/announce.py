"""Which hazard of a `diff --format json --kubeconfig` report announces each disruption the
day-2 harness measured, and whether the hazard's live radius covers what was measured
(issue 38, items 7 and 8).

A hazard announces a disruption only if it is of the right kind (`ANNOUNCED_BY`) and about the
same pool or the same work:

- its `subject` names a pool (`Pool X`, `Job templates for pool X`), a flavor (`ResourceFlavor
  F`: the pool of F), nodes (`NodeFeatureRule rule R`: the pools of the nodes its message
  lists, else pool R), a Topology (every pool: each topology-bound flavor names it), or a
  ClusterQueue (the pools of the flavors it lists, for `stops covering R` only those covering
  R), or a DeviceClass (`dra-pool-moved`: the pools it names `on pool P (R)`); pods deleted,
  workloads evicted, pods never bound and double bookings are matched by pool;
- stranded Workloads are matched by the work: `Namespace N` (in N), `LocalQueue N/Q` (naming
  Q in N), `ClusterQueue C` (its LocalQueue points at C; with `stops covering R` it requests
  R), or a pool (its pod sets select the pool's label);
- a double booking only by a hazard whose text says the pool is overbooked or double-booked;
- a Volcano gang waiting in a deleted Queue by a hazard about that Queue (`Queue Q`).

Each announced count is then held against the live radius of the hazards that announce it,
per pool (or per cause for stranded work): pods deleted against the pods they name; pods never
bound against the pods they name, or against the amount an overbooking hazard states (what
they request must fit in it: a flavor rename's live line gives the usage Kueue stops counting,
the room the newly admitted work will not find); workloads evicted against the workloads plus
the pods they name (a pod-scoped radius, `taint-evicts`, reaches a workload through its pods);
stranded workloads against the workloads they name; stranded gangs against the waiting
PodGroups they name; the size of a double booking (taken - held) against the amount of that
resource the hazard states (the usage its live line says it stops counting, else the amount
its message gives).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hetgitops.live.workloads import podgroup_queue
from hetgitops.model import quantities

from .busy import ACCELERATOR_PREFIXES, POOL_LABEL, Load, Pools
from .stranding import split

Obj = Mapping[str, Any]

ANNOUNCED_BY: dict[str, set[str]] = {
    # queue-stopped: a team's kueue.stopPolicy HoldAndDrain evicts what its queues admitted.
    "pods-deleted": {"taint-evicts", "mig-mode-flip", "mig-repartition", "queue-stopped"},
    "workloads-evicted": {"taint-evicts", "mig-mode-flip", "mig-repartition", "queue-stopped"},
    "queue-gone": {"localqueue-removed", "namespace-removed", "clusterqueue-removed"},
    "localqueue-inactive": {"queue-stopped"},  # a team's kueue.stopPolicy
    "inactive": {"clusterqueue-removed", "kueue-flavor-removed", "kueue-topology-renamed"},
    "unselected": {"namespace-unselected"},
    # A flavor transition holds the new flavor's quota back ("new work on the pool pends"):
    # work that fits only there has no quota until the retiring entry goes (stranding.py).
    "no-flavor": {
        "kueue-resource-uncovered",
        "jobs-unmatched",
        "dra-pool-moved",
        "kueue-flavor-transition",
    },
    "unbound": {"taint-evicts", "kueue-flavor-renamed", "node-moved", "node-removed"},
    "double-booked": {
        "kueue-flavor-renamed",
        "node-removed",
        "node-moved",
        "sharing-reduced",
        "mig-mode-flip",
        "mig-repartition",
        "kueue-resource-uncovered",
    },
    "namespaces-deleted": set(),
    # A Queue pruned while a gang waits in it (its pool or team gone, or the team's queue
    # layout switched): the gang is never scheduled.
    "volcano-queue-gone": {"volcano-queue-pruned", "volcano-queue-layout-switched"},
}
OVERBOOKED = re.compile(r"overbook|double[- ]book", re.IGNORECASE)
_COUNT = re.compile(r"(\d+) admitted and (\d+) pending workload|(\d+) pod\(s\)")
_NODES = re.compile(r"node\(s\) \(([^)]*)\)")
_COVERING = re.compile(r"stops covering (\S+?):")
_ON_POOL = re.compile(r"on pool (\S+) \(")  # dra-pool-moved: the pools it leaves plain work on
_GANGS = re.compile(r"(\d+) running and (\d+) waiting PodGroup")


def live_counts(hazard: Obj) -> tuple[int, int]:
    """(workloads, pods) the hazard's live line names."""
    workloads = pods = 0
    for match in _COUNT.finditer(hazard.get("live", "")):
        if match.group(3):
            pods += int(match.group(3))
        else:
            workloads += int(match.group(1)) + int(match.group(2))
    return workloads, pods


def waiting_gangs(hazard: Obj) -> int:
    """The waiting PodGroups the hazard's live line names."""
    return sum(int(m.group(2)) for m in _GANGS.finditer(hazard.get("live", "")))


def stated_amount(hazard: Obj, resource: str) -> Decimal:
    """How much of `resource` the hazard says is at stake: the admitted usage its live line
    says (`R: 'N'`, summed over queues) or the replicas above capacity it counts, else the
    amount its message gives (`double-booked (up to N R)`, `overbooked ... by N R`)."""
    name = re.escape(resource)
    live = hazard.get("live", "")
    held = [Decimal(m) for m in re.findall(rf"{name}: '(\d+)'", live)]
    above = [Decimal(m) for m in re.findall(rf"(\d+) {name} above", live)]
    if held or above:
        return sum(held, Decimal(0)) + sum(above, Decimal(0))
    said = re.findall(rf"(?:up to|by) (\d+) {name}\b", hazard.get("message", ""))
    return max((Decimal(m) for m in said), default=Decimal(0))


@dataclass
class Context:
    """What maps a hazard's subject onto pools: the pool map and the ClusterQueues and
    LocalQueues of the baseline and the settled readings."""

    pools: Pools
    baseline: Load
    final: Load
    every_pool: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.every_pool = set(self.pools.node_pool.values())

    def queue_pools(self, queue: str, resource: str = "") -> set[str]:
        found = set()
        for load in (self.baseline, self.final):
            spec = (load.queue_specs.get(queue) or {}).get("spec") or {}
            for group in spec.get("resourceGroups") or []:
                if resource and resource not in (group.get("coveredResources") or []):
                    continue
                for flavor in group.get("flavors") or []:
                    pool = self.pools.flavor_pool.get(str(flavor.get("name", "")))
                    if pool:
                        found.add(pool)
        return found

    def cluster_queue(self, namespace: str, queue: str) -> str:
        key = f"{namespace}/{queue}"
        return self.baseline.localqueues.get(key) or self.final.localqueues.get(key) or ""


def pools_of(hazard: Obj, ctx: Context) -> set[str]:
    """The physical pools a hazard is about (empty: not about a pool)."""
    kind, _, name = str(hazard.get("subject", "")).partition(" ")
    if kind == "Pool" or hazard["subject"].startswith("Job templates for pool "):
        pool = ctx.pools.pool_name.get(name.rsplit(" ", 1)[-1])
        return {pool} if pool else set()
    if kind == "ResourceFlavor":
        pool = ctx.pools.flavor_pool.get(name)
        return {pool} if pool else set()
    if kind == "NodeFeatureRule":
        listed = _NODES.search(hazard.get("message", ""))
        nodes = [n.strip() for n in listed.group(1).split(",")] if listed else []
        found = {ctx.pools.node_pool[n] for n in nodes if n in ctx.pools.node_pool}
        rule = name.removeprefix("rule ")
        return found or ({ctx.pools.pool_name[rule]} if rule in ctx.pools.pool_name else set())
    if kind == "Topology":
        return set(ctx.every_pool)
    if kind == "DeviceClass":
        named = _ON_POOL.findall(hazard.get("message", ""))
        return {ctx.pools.pool_name[p] for p in named if p in ctx.pools.pool_name}
    if kind == "ClusterQueue":
        covering = _COVERING.search(hazard.get("message", ""))
        return ctx.queue_pools(name, covering.group(1) if covering else "")
    if kind == "LocalQueue" and "/" in name:  # the pools of the ClusterQueue behind it
        return ctx.queue_pools(ctx.cluster_queue(*name.split("/", 1)))
    return set()


def pool_of_pod(pod: Obj, pools: Pools) -> str:
    spec = pod.get("spec") or {}
    node = pools.node_pool.get(spec.get("nodeName") or "")
    label = (spec.get("nodeSelector") or {}).get(POOL_LABEL, "")
    return node or pools.pool_name.get(label, "?")


def pools_of_workload(workload: Obj, pools: Pools) -> set[str]:
    """The pools of the flavors its admission names, else of the pool its pod sets select."""
    status = workload.get("status") or {}
    found = {
        pools.flavor_pool.get(str(f), "?")
        for a in (status.get("admission") or {}).get("podSetAssignments") or []
        for f in (a.get("flavors") or {}).values()
    }
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        selector = ((pod_set.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
        if not found and POOL_LABEL in selector:
            found.add(pools.pool_name.get(selector[POOL_LABEL], "?"))
    return found or {"?"}


def strands(hazard: Obj, workload: Obj, ctx: Context) -> bool:
    """The hazard is about this stranded workload's namespace, queues or pool."""
    meta, spec = workload.get("metadata") or {}, workload.get("spec") or {}
    namespace, queue = str(meta.get("namespace", "")), str(spec.get("queueName", ""))
    kind, _, name = str(hazard.get("subject", "")).partition(" ")
    if kind == "Namespace":
        return name == namespace
    if kind == "LocalQueue":
        return name == f"{namespace}/{queue}"
    if kind == "ClusterQueue":
        covering = _COVERING.search(hazard.get("message", ""))
        asked = {
            r
            for p in spec.get("podSets") or []
            for c in ((p.get("template") or {}).get("spec") or {}).get("containers") or []
            for r in ((c.get("resources") or {}).get("requests") or {})
        }
        wanted = not covering or covering.group(1) in asked
        return wanted and name == ctx.cluster_queue(namespace, queue)
    return bool(pools_of(hazard, ctx) & pools_of_workload(workload, ctx.pools))


def _requests(pods: Iterable[Obj]) -> dict[str, Decimal]:
    """What the pods' containers request, per accelerator resource."""
    total: dict[str, Decimal] = {}
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            for name, value in ((container.get("resources") or {}).get("requests") or {}).items():
                if name.startswith(ACCELERATOR_PREFIXES):
                    total[name] = total.get(name, Decimal(0)) + quantities.value_of(str(value))
    return total


@dataclass
class Verdict:
    """Per kind of disruption: the rules that announced it, the radius they give, and what no
    hazard announced or the radius does not cover."""

    announced_by: dict[str, list[str]] = field(default_factory=dict)
    radius: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def _by_pool(
    verdict: Verdict,
    kind: str,
    items: Mapping[str, set[str]],  # measured item -> its pools
    hazards: Sequence[Obj],
    ctx: Context,
    radius: Callable[[list[Obj], list[str]], int],  # (hazards, items) -> how many they cover
) -> None:
    per_pool: dict[str, list[str]] = {}
    for item, where in sorted(items.items()):
        for pool in sorted(where)[:1]:
            per_pool.setdefault(pool, []).append(item)
    for pool, found in sorted(per_pool.items()):
        said = [h for h in hazards if h["rule"] in ANNOUNCED_BY[kind] and pool in pools_of(h, ctx)]
        _judge(verdict, kind, pool, found, said, radius(said, found))


def _judge(
    verdict: Verdict, kind: str, where: str, found: list[str], said: list[Obj], covered: Any
) -> None:
    rules = sorted({h["rule"] for h in said})
    verdict.announced_by.setdefault(kind, [])
    verdict.announced_by[kind] = sorted(set(verdict.announced_by[kind]) | set(rules))
    verdict.radius[f"{kind} {where}"] = f"{len(found)} measured, radius {covered}"
    if not said:
        verdict.failures.append(
            f"{kind} on {where}: {len(found)} measured ({found[:5]}), no hazard of "
            f"{sorted(ANNOUNCED_BY[kind])} about it"
        )
    elif len(found) > covered:
        verdict.failures.append(
            f"{kind} on {where}: {len(found)} measured, the live radius of {rules} said {covered}"
        )


def _gangs_stranded(
    verdict: Verdict, keys: list[str], hazards: Sequence[Obj], ctx: Context
) -> None:
    """Gangs waiting in a deleted Volcano Queue, each held against the hazards about its
    Queue; their radius is the waiting PodGroups they name."""
    if not keys:
        return
    said: list[Obj] = []
    for key in keys:
        group = ctx.final.podgroups.get(key) or ctx.baseline.podgroups.get(key) or {}
        subject = f"Queue {podgroup_queue(group)}"
        about = [
            h
            for h in hazards
            if h["rule"] in ANNOUNCED_BY["volcano-queue-gone"] and h["subject"] == subject
        ]
        if not about:
            verdict.failures.append(
                f"volcano-queue-gone {key}: no hazard of "
                f"{sorted(ANNOUNCED_BY['volcano-queue-gone'])} about {subject}"
            )
        said += [h for h in about if h not in said]
    if said:
        covered = sum(waiting_gangs(h) for h in said)
        _judge(verdict, "volcano-queue-gone", "its gangs", keys, said, covered)


def judge(
    *,
    hazards: Sequence[Obj],
    ctx: Context,
    pods_deleted: Iterable[str],
    workloads_evicted: Iterable[str],
    stranded: Iterable[str],
    double_booked: Mapping[tuple[str, str], tuple[Decimal, Decimal]],
    namespaces_deleted: Iterable[str],
) -> Verdict:
    verdict = Verdict()
    base, final = ctx.baseline, ctx.final

    def pods(said: list[Obj], _: list[str]) -> int:
        return sum(live_counts(h)[1] for h in said)

    def work(said: list[Obj], _: list[str]) -> int:
        return sum(sum(live_counts(h)) for h in said)

    def unplaced(said: list[Obj], found: list[str]) -> int:
        """Pods never bound: the pods the hazards name, or all of them when what they request
        is within the amount an overbooking hazard about the pool states (a flavor rename's
        live line gives the usage it stops counting, not the pods that will not fit)."""
        asked = _requests(final.live_pods.get(k) or {} for k in found)
        over = [h for h in said if OVERBOOKED.search(h["message"] + h.get("live", ""))]
        stated = {r: sum((stated_amount(h, r) for h in over), Decimal(0)) for r in asked}
        if over and all(amount <= stated[r] for r, amount in asked.items()):
            return len(found)
        return pods(said, found)

    def workloads(said: list[Obj]) -> int:
        return sum(live_counts(h)[0] for h in said)

    deleted = {k: {pool_of_pod(base.live_pods.get(k) or {}, ctx.pools)} for k in pods_deleted}
    _by_pool(verdict, "pods-deleted", deleted, hazards, ctx, pods)
    evicted = {
        k: pools_of_workload(base.workloads.get(k) or {}, ctx.pools) for k in workloads_evicted
    }
    _by_pool(verdict, "workloads-evicted", evicted, hazards, ctx, work)
    by_cause: dict[str, list[str]] = {}
    for cause, key in split(stranded):
        by_cause.setdefault(cause, []).append(key)
    unbound = {
        k: {pool_of_pod(final.live_pods.get(k) or {}, ctx.pools)}
        for k in by_cause.pop("unbound", [])
    }
    _by_pool(verdict, "unbound", unbound, hazards, ctx, unplaced)
    _gangs_stranded(verdict, by_cause.pop("volcano-queue-gone", []), hazards, ctx)
    for cause, keys in sorted(by_cause.items()):
        said = []
        for key in keys:
            workload = final.workloads.get(key) or base.workloads.get(key) or {}
            said += [
                h
                for h in hazards
                if h["rule"] in ANNOUNCED_BY[cause] and h not in said and strands(h, workload, ctx)
            ]
            if not any(strands(h, workload, ctx) for h in said):
                verdict.failures.append(
                    f"{cause} {key}: no hazard of {sorted(ANNOUNCED_BY[cause])} about it"
                )
        if said:
            _judge(verdict, cause, "its work", keys, said, workloads(said))
    for (pool, resource), (taken, held) in sorted(double_booked.items()):
        said = [
            h
            for h in hazards
            if h["rule"] in ANNOUNCED_BY["double-booked"]
            and pool in pools_of(h, ctx)
            and OVERBOOKED.search(h["message"] + h.get("live", ""))
        ]
        stated = sum((stated_amount(h, resource) for h in said), Decimal(0))
        excess = taken - held
        _judge(verdict, "double-booked", f"{pool}|{resource}", [f"{taken}/{held}"], said, 1)
        if said and excess > stated:
            verdict.failures.append(
                f"double-booked {pool}|{resource}: {excess} above what the nodes hold, "
                f"{sorted({h['rule'] for h in said})} said {stated}"
            )
        verdict.radius[f"double-booked {pool}|{resource}"] = f"{excess} above, stated {stated}"
    for name in namespaces_deleted:
        verdict.failures.append(f"namespace {name} deleted (never allowed)")
    return verdict
