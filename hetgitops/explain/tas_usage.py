"""What Kueue v0.19.2's topology-aware cache counts on each node, read from the live cluster:
every node's allocatable, less the requests of the bound pods that are not topology-aware, less
the topology assignments of the admitted Workloads (`placed`).

Why apart from `state`: two answers read it, explain's placement of a new job (`topology.place`
through `LiveState.node_free`) and the preemption model's "does the job fit once these are
gone" (`preemption.Preemptor.fits`, which gives a victim's `placed` units back). Kueue builds
the same view per TAS flavor (tas_flavor.go, snapshot: addTASUsageForHeldDomains, then the
non-TAS pods' usage), where a topology-aware pod is counted through its Workload, never twice.
A Workload's assignment counts the pod set's per-pod request (its template's) times the pods
of each domain (workload.go, totalRequestsFromAdmission)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hetgitops.explain.podspec import pod_requests
from hetgitops.live import workloads
from hetgitops.plan.flavors import HOSTNAME
from hetgitops.plan.quota_plan import kueue_amount

Obj = Mapping[str, Any]
PerNode = dict[str, dict[str, int]]


def placed(workload: Obj) -> tuple[PerNode, int]:
    """Node -> resource -> units the Workload's topology assignments hold there, and how many
    of its pods are placed at a level above the node (a Topology whose lowest level is not the
    hostname: Kueue counts those per domain, which this per-node view cannot say)."""
    held: PerNode = {}
    above = 0
    for assignment in workloads.admission(workload).get("podSetAssignments") or []:
        levels, domains = workloads.topology_domains(assignment)
        if not domains:
            continue
        if not levels or levels[-1] != HOSTNAME:
            above += sum(count for _, count in domains)
            continue
        name = str(assignment.get("name") or "main")
        per_pod = pod_requests(workloads.podset_template(workload, name))
        for values, count in domains:
            node = held.setdefault(values[-1] if values else "", {})
            for resource, amount in per_pod.items():
                node[resource] = node.get(resource, 0) + amount * count
    return held, above


def add(into: PerNode, more: Mapping[str, Mapping[str, int]], sign: int = 1) -> None:
    """Add (sign 1) or take away (sign -1) per-node units."""
    for node, units in more.items():
        mine = into.setdefault(node, {})
        for resource, amount in units.items():
            mine[resource] = mine.get(resource, 0) + sign * amount


def node_free(
    wanted: Mapping[str, Iterable[str]],
    nodes: Iterable[Obj],
    pods: Iterable[Obj],
    admitted: Iterable[Obj],
    notes: list[str],
) -> PerNode:
    """Per node of `wanted` (node -> the accelerator resources the policy gives it): what Kueue's
    TAS cache has free; a node the cluster lacks has nothing free. cpu and memory are counted
    where the node's allocatable lists them."""
    live = {n["metadata"]["name"]: n for n in nodes if n["metadata"]["name"] in wanted}
    used: PerNode = {}
    for pod in pods:
        node = workloads.pod_node(pod)
        if node not in live or workloads.pod_finished(pod) or workloads.pod_uses_topology(pod):
            continue
        add(used, {node: pod_requests(pod.get("spec") or {})})
    above = 0
    for workload in admitted:
        held, higher = placed(workload)
        add(used, held)
        above += higher
    free: PerNode = {}
    for name, units in sorted(wanted.items()):
        if name not in live:
            free[name] = {r: 0 for r in units}
            continue
        allocatable = (live[name].get("status") or {}).get("allocatable") or {}
        free[name] = {
            r: kueue_amount(r, str(allocatable.get(r, "0"))) - used.get(name, {}).get(r, 0)
            for r in [*units, *(h for h in ("cpu", "memory") if h in allocatable)]
        }
    missing = len(wanted) - len(live)
    if missing:
        notes.append(f"{missing} node(s) of the policy are not in the cluster (counted as full)")
    if above:
        notes.append(
            f"{above} pod(s) of admitted Workloads are placed at a topology level above the "
            "node: their units are not taken from any node here"
        )
    return free
