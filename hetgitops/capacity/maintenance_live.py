"""`capacity --without ... --kubeconfig`: the admitted Workloads whose pods run on the nodes a
maintenance window takes out, read once (read-only: one LIST each of Workloads, Pods and batch
Jobs, the Jobs to reach a JobSet's Workload from its pods) and judged only through
`hetgitops.live.workloads` (habit 11: the one reader of those shapes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetgitops.live import resources
from hetgitops.live import workloads as wl
from hetgitops.live.session import Unavailable, reading

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class WorkloadOnNodes:
    namespace: str
    name: str
    cluster_queue: str
    priority: int
    pods: int  # its unfinished pods on the nodes
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class LiveOnNodes:
    server: str
    # Admitted (holds quota) Workloads with pods on the nodes, lowest priority first.
    workloads: tuple[WorkloadOnNodes, ...]
    other_pods: int  # unfinished pods on the nodes of no admitted Workload, DaemonSets apart
    daemon_pods: int  # recreated there by their DaemonSet; drain leaves them
    requests: int = 0
    # Every quota-holding Workload of the cluster, as read: what the preemption model asks the
    # ones on the nodes back among (`capacity.maintenance.PreemptionModel`).
    admitted: tuple[Obj, ...] = ()


def _daemon(pod: Obj) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(o, Mapping) and o.get("kind") == "DaemonSet" for o in owners)


def on_nodes(
    workloads: Sequence[Obj],
    pods: Sequence[Obj],
    nodes: Set[str],
    *,
    jobs: Sequence[Obj] = (),
    server: str = "",
) -> LiveOnNodes:
    """Which admitted Workloads have unfinished pods on `nodes` (pure: the tests feed it);
    `jobs` (batch Jobs) match the pods of a JobSet's Jobs to the JobSet's Workload."""
    admitted = [w for w in workloads if wl.holds_quota(w)]
    by_owner = {uid: w for w in admitted for uid in wl.owner_uids(w)}
    parents = {
        str(j["metadata"]["uid"]): wl.owner_uids(j) for j in jobs if j["metadata"].get("uid")
    }
    counts: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[str]] = {}
    found: dict[tuple[str, str], Obj] = {}
    other = daemon = 0
    for pod in pods:
        node = wl.pod_node(pod)
        if wl.pod_finished(pod) or node not in nodes:
            continue
        workload = wl.pod_workload(pod, by_owner, parents)
        if workload is None:
            daemon, other = (daemon + 1, other) if _daemon(pod) else (daemon, other + 1)
            continue
        meta = workload.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        counts[key] += 1
        where.setdefault(key, set()).add(node)
        found[key] = workload
    rows = [
        WorkloadOnNodes(
            key[0],
            key[1],
            wl.cluster_queue(found[key]),
            wl.priority(found[key]),
            counts[key],
            tuple(sorted(where[key])),
        )
        for key in counts
    ]
    rows.sort(key=lambda r: (r.priority, r.namespace, r.name))
    return LiveOnNodes(server, tuple(rows), other, daemon, admitted=tuple(admitted))


LiveUnavailable = Unavailable  # what `capacity --without --kubeconfig` raises: exit 4


def read(
    nodes: Set[str], *, kueue_api_version: str, kubeconfig: Path | None, context: str | None
) -> LiveOnNodes:
    with reading(kubeconfig, context) as cluster:
        listed = cluster.list(resources.workloads(kueue_api_version))
        pods = cluster.list(resources.PODS)
        jobs = cluster.list(resources.JOBS)
    found = on_nodes(listed, pods, nodes, jobs=jobs, server=cluster.server)
    return LiveOnNodes(
        found.server,
        found.workloads,
        found.other_pods,
        found.daemon_pods,
        cluster.requests,
        found.admitted,
    )
