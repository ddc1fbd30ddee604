"""The live cluster's state, read once for `explain` (live mode): what every ClusterQueue holds,
who is admitted and who waits, Volcano's queues, what each node has free.

Why a module of its own: reading is kept apart from judging. One pass of LISTs (through
`hetgitops.live`, nothing is written) gives a frozen `LiveState`; the answer lines (`lines.py`)
and the replay (`explanation.py`) then work on it and can be tested without a cluster.
(`existing.py` reads too, but only the one object `explain workload` names.)
Reads ClusterQueues' `status.flavorsUsage` (what every queue holds per flavor and resource,
Kueue's Usage that Available subtracts) and Workloads (who is admitted, who waits in which
ClusterQueue: the `live.workloads` reader the diff blast radius uses too, Kueue v0.19.2's own
definitions); flavor names go back to pools through the flavors render writes (`quotas`);
what koord-scheduler counts in each ElasticQuota (`koord_state`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hetgitops.explain import quotas, tas_usage
from hetgitops.explain.koord_runtime import KoordUsage
from hetgitops.explain.koord_state import read_koordinator
from hetgitops.live import resources, workloads
from hetgitops.live.client import Cluster, Forbidden, NotServed
from hetgitops.model.policy import Policy
from hetgitops.plan.quota_plan import kueue_amount


def kueue_api(policy: Policy) -> str:
    """The Kueue API version the fleet renders (its Workloads and ClusterQueues live there)."""
    return policy.fleet.kueue_api_version if policy.fleet else resources.KUEUE_API


def flavor_pools(policy: Policy) -> dict[str, str]:
    """ResourceFlavor name -> pool, as the teams' ClusterQueues name them."""
    found: dict[str, str] = {}
    for team in policy.teams.values():
        for flavor in quotas.flavors(policy, team):
            found[flavor.name] = flavor.plan.pool.name
    return found


def pool_of(policy: Policy, flavor: str, pools: Mapping[str, str]) -> str | None:
    """The pool of a live flavor name."""
    if flavor in pools:
        return pools[flavor]
    # A flavor renamed by an earlier render (`<pool>-<digest>`): the longest pool name prefix.
    matches = [p for p in policy.pools if flavor == p or flavor.startswith(p + "-")]
    return max(matches, key=len) if matches else None


@dataclass(frozen=True)
class Waiting:
    name: str  # namespace/name
    cluster_queue: str
    priority: int
    created: str
    message: str


@dataclass(frozen=True)
class Holder:
    """An admitted Workload: what it holds per (pool, resource), Kueue's integers."""

    name: str  # namespace/name
    cluster_queue: str
    priority: int
    usage: Mapping[tuple[str, str], int]
    # RFC 3339 times as Kueue wrote them ("" unknown): quota reserved, created; and whether it
    # is being evicted already. The preemption model orders candidates by them.
    admitted: str = ""
    created: str = ""
    evicted: bool = False
    # Node -> resource -> units its topology assignments hold there (`tas_usage.placed`):
    # what a preemption gives back to topology-aware placement.
    placed: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class QueueStatus:
    """A Volcano Queue's status: its state, PodGroups per phase, what it has allocated."""

    name: str
    state: str
    allocated: Mapping[str, int]
    pending: int
    running: int
    inqueue: int


@dataclass(frozen=True)
class LiveState:
    usage: quotas.Usage
    admitted: Mapping[str, tuple[str, ...]]  # ClusterQueue -> admitted workloads
    waiting: tuple[Waiting, ...]
    server: str
    notes: tuple[str, ...] = field(default=())
    holders: tuple[Holder, ...] = ()
    volcano: Mapping[str, QueueStatus] = field(default_factory=dict)
    # Node -> accelerator units free now (allocatable minus the requests of the pods bound
    # to it that have not finished): what topology-aware placement has left.
    node_free: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # What koord-scheduler counts in each quota of the policy's trees (koord_state.py); None
    # when the fleet renders no Koordinator quotas.
    koordinator: KoordUsage | None = None
    # The policy's team Namespaces as the cluster labels them (`read_namespaces`): what Kueue
    # matches a ClusterQueue's namespaceSelector against; None when not read.
    namespaces: Mapping[str, Mapping[str, str]] | None = None


def read_state(policy: Policy, cluster: Cluster) -> LiveState:
    pools = flavor_pools(policy)
    usage: dict[tuple[str, str, str], int] = {}
    notes: list[str] = []
    for cq in cluster.list(resources.cluster_queues(kueue_api(policy))):
        name = cq["metadata"]["name"]
        for flavor in (cq.get("status") or {}).get("flavorsUsage") or []:
            pool = pool_of(policy, flavor["name"], pools)
            if pool is None:
                notes.append(f"ClusterQueue {name} uses flavor {flavor['name']} of no pool")
                continue
            for resource in flavor.get("resources") or []:
                total = kueue_amount(resource["name"], str(resource.get("total", "0")))
                if total:
                    key = (name, pool, resource["name"])
                    usage[key] = usage.get(key, 0) + total
    admitted: dict[str, list[str]] = {}
    waiting: list[Waiting] = []
    holders: list[Holder] = []
    held: list[Mapping[str, Any]] = []
    for wl in cluster.list(resources.workloads(kueue_api(policy))):
        meta = wl["metadata"]
        ref = f"{meta.get('namespace', '')}/{meta['name']}"
        if workloads.holds_quota(wl):
            holder = holder_of(policy, wl, pools)
            admitted.setdefault(holder.cluster_queue, []).append(ref)
            holders.append(holder)
            held.append(wl)
            continue
        reserved = workloads.condition(wl, "QuotaReserved")
        if workloads.waiting(wl) and reserved is not None and reserved.get("status") == "False":
            waiting.append(
                Waiting(
                    ref,
                    cluster_queue_of(policy, wl) or "",
                    int((wl.get("spec") or {}).get("priority") or 0),
                    str(meta.get("creationTimestamp", "")),
                    str(reserved.get("message", "")),
                )
            )
    volcano = _volcano_queues(policy, cluster, notes)
    node_free = live_node_free(policy, cluster, held, notes)
    koordinator = read_koordinator(policy, cluster, notes)
    namespaces = read_namespaces(policy, cluster, notes)
    return LiveState(
        usage,
        {k: tuple(sorted(v)) for k, v in sorted(admitted.items())},
        tuple(sorted(waiting, key=lambda w: (w.cluster_queue, -w.priority, w.created, w.name))),
        cluster.server,
        tuple(notes),
        tuple(sorted(holders, key=lambda h: h.name)),
        volcano,
        node_free,
        koordinator,
        namespaces,
    )


def holder_of(policy: Policy, wl: Mapping[str, Any], pools: Mapping[str, str]) -> Holder:
    """An admitted Workload (one that `workloads.holds_quota`) as the preemption model and the
    live lines read it."""
    meta = wl["metadata"]
    return Holder(
        f"{meta.get('namespace', '')}/{meta['name']}",
        workloads.cluster_queue(wl),
        int((wl.get("spec") or {}).get("priority") or 0),
        _held(policy, workloads.admission(wl), pools),
        workloads.quota_reserved_at(wl),
        workloads.created_at(wl),
        workloads.evicted(wl),
        tas_usage.placed(wl)[0],
    )


def _held(
    policy: Policy, admission: Mapping[str, Any], pools: Mapping[str, str]
) -> dict[tuple[str, str], int]:
    """An admission's resourceUsage per (pool, resource), through its flavors."""
    held: dict[tuple[str, str], int] = {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        for resource, amount in (assignment.get("resourceUsage") or {}).items():
            pool = pool_of(policy, str(flavors.get(resource, "")), pools)
            if pool is not None:
                key = (pool, str(resource))
                held[key] = held.get(key, 0) + kueue_amount(str(resource), str(amount))
    return held


def read_namespaces(
    policy: Policy, cluster: Cluster, notes: list[str]
) -> dict[str, dict[str, str]] | None:
    """The labels of the policy's team Namespaces the cluster has (one LIST of Namespaces;
    Kueue reads the live Namespace, resources.go:237-246), when the fleet renders them (the core
    target); None when not rendered or not readable (a note says so)."""
    if policy.fleet is None or "core" not in policy.fleet.targets:
        return None
    wanted = {n for team in policy.teams.values() for n in team.namespaces}
    try:
        items = cluster.list(resources.NAMESPACES)
    except Forbidden as exc:
        notes.append(f"Namespaces not read (judged by the labels the policy renders): {exc}")
        return None
    found = {}
    for item in items:
        meta = item.get("metadata") or {}
        if meta.get("name") in wanted:
            labels = meta.get("labels") or {}
            found[str(meta["name"])] = {str(k): str(v) for k, v in sorted(labels.items())}
    return dict(sorted(found.items()))


def _volcano_queues(policy: Policy, cluster: Cluster, notes: list[str]) -> dict[str, QueueStatus]:
    """The Volcano Queues' status (when the fleet renders Volcano): state, allocated, PodGroups
    per phase."""
    if policy.fleet is None or "volcano" not in policy.fleet.targets:
        return {}
    try:
        items = cluster.list(resources.VOLCANO_QUEUES)
    except (NotServed, Forbidden) as exc:
        notes.append(f"Volcano Queues not read: {exc}")
        return {}
    found = {}
    for queue in items:
        status = queue.get("status") or {}
        allocated = {
            str(r): kueue_amount(str(r), str(v)) for r, v in (status.get("allocated") or {}).items()
        }
        name = queue["metadata"]["name"]
        found[name] = QueueStatus(
            name,
            str(status.get("state", "")),
            allocated,
            int(status.get("pending") or 0),
            int(status.get("running") or 0),
            int(status.get("inqueue") or 0),
        )
    return found


def live_node_free(
    policy: Policy, cluster: Cluster, admitted: Sequence[Mapping[str, Any]], notes: list[str]
) -> dict[str, dict[str, int]]:
    """Per policy node: what Kueue's topology-aware cache has free (`tas_usage.node_free`),
    from one LIST of Nodes and one of Pods; `admitted`: the Workloads that hold quota."""
    from hetgitops.explain.nodes import pool_nodes

    wanted = {
        n.name: list(n.units) for pool in policy.pools.values() for n in pool_nodes(policy, pool)
    }
    nodes, pods = cluster.list(resources.NODES), cluster.list(resources.PODS)
    return tas_usage.node_free(wanted, nodes, pods, admitted, notes)


def cluster_queue_of(policy: Policy, wl: Mapping[str, Any]) -> str | None:
    """A waiting Workload's ClusterQueue: the team owning its namespace (its LocalQueue)."""
    namespace = wl["metadata"].get("namespace")
    for team in policy.teams.values():
        if namespace in team.namespaces:
            return team.name
    return None
