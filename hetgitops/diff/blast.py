"""Diff stage, live blast radius (`diff --kubeconfig`): how much running and pending work each
day-2 hazard reaches in the cluster as it is now.

Read-only, through the one live client (`hetgitops.live.client`): one LIST each of Kueue
Workloads, Pods and (when Volcano is served) PodGroups. Each hazard carries its `scope` (the
flavor, nodes, namespace, queue or class it is about, set by `diff/hazards/`); this module
counts what the live objects hold in that scope, per team, and writes one line into
`Hazard.live`. Nothing is written to the cluster.

Admitted and pending are `hetgitops.live.workloads`' `holds_quota` and `waiting` (Kueue v0.19.2's
HasActiveQuotaReservation and IsAdmissible), the answer `explain` gives too. What counts, per
scope (Kueue v0.19 Workload status; Kubernetes Pod spec):
- flavor: admitted workloads whose `status.admission` assigns that flavor to some pod set;
- nodes (+ taint, + requests): pods bound to those nodes (`spec.nodeName`), not finished, that
  do not tolerate the taint key and request one of the listed resources (DaemonSet pods are
  counted apart: their controller recreates them);
- namespace: workloads and unfinished pods in it;
- localqueue: workloads in its namespace that name it (`spec.queueName`);
- drained (a LocalQueue): unfinished pods of the workloads admitted through it, which a
  HoldAndDrain stopPolicy evicts (`pod_workload`: the pod, or its owner, owns the Workload);
- clusterqueue: workloads admitted by it (`status.admission.clusterQueue`);
- volcanoqueue: PodGroups in that Volcano Queue (`spec.queue`), those with pods running and
  those waiting apart (a gang still waiting in a deleted queue is never scheduled);
- priorityclass: unfinished pods with that `priorityClassName` that a controller owns (what is
  recreated and refused);
- resource (CQ|R): workloads admitted by the ClusterQueue, or pending in it, that request R.
- plain (POOL|R): workloads pending with a pod set that selects POOL (its nodeSelector's pool
  label) and requests R (a pool moved to DRA claims no longer gives R quota).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from hetgitops.diff.hazards import Hazard
from hetgitops.diff.hazards.jobs import unmatched_workload
from hetgitops.diff.live_capacity import capacity_text, value
from hetgitops.live import resources
from hetgitops.live.client import Cluster, NotServed
from hetgitops.live.session import Unavailable, reading
from hetgitops.live.workloads import (
    admission,
    assigned_flavors,
    cluster_queue,
    finished,
    holds_quota,
    local_queue,
    owner_uids,
    pod_finished,
    pod_node,
    pod_requests,
    pod_workload,
    podgroup_queue,
    podgroup_running,
    podgroup_waiting,
    requested,
    waiting,
)
from hetgitops.model import quantities
from hetgitops.model.tolerations import tolerates
from hetgitops.plan.node_labels import pool_label

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class LiveWork:
    """The running and pending work of a cluster, as one LIST per kind returned it."""

    workloads: Sequence[Obj] = ()
    pods: Sequence[Obj] = ()
    podgroups: Sequence[Obj] = ()
    team_of_namespace: Mapping[str, str] = field(default_factory=dict)
    requests: int = 0

    def team(self, obj: Obj) -> str:
        namespace = str(obj.get("metadata", {}).get("namespace", ""))
        return self.team_of_namespace.get(namespace, namespace or "-")


def read(
    cluster: Cluster, kueue_api_version: str, team_of_namespace: Mapping[str, str]
) -> LiveWork:
    """One LIST per kind; a cluster without Volcano simply has no PodGroups."""
    before = cluster.requests
    workloads = cluster.list(resources.workloads(kueue_api_version))
    pods = cluster.list(resources.PODS)
    try:
        podgroups = cluster.list(resources.PODGROUPS)
    except NotServed:
        podgroups = []
    return LiveWork(workloads, pods, podgroups, team_of_namespace, cluster.requests - before)


def _tolerates(pod: Obj, taints: Sequence[str]) -> bool:
    """The pod tolerates every NoExecute taint (`key=value`) the hazard adds: the kubelet
    evicts it otherwise."""
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or [] if t]
    return all(
        tolerates(tolerations, key, value, "NoExecute")
        for key, _, value in (t.partition("=") for t in taints)
    )


def _daemon(pod: Obj) -> bool:
    owners = pod.get("metadata", {}).get("ownerReferences") or []
    return any(owner.get("kind") == "DaemonSet" for owner in owners)


def _owned(pod: Obj) -> bool:
    return bool(pod.get("metadata", {}).get("ownerReferences"))


@dataclass
class Radius:
    running: Counter[str] = field(default_factory=Counter)  # per team
    pending: Counter[str] = field(default_factory=Counter)
    pods: Counter[str] = field(default_factory=Counter)
    daemon_pods: int = 0
    gangs: Counter[str] = field(default_factory=Counter)  # running Volcano PodGroups
    waiting_gangs: Counter[str] = field(default_factory=Counter)  # ... and waiting ones

    def text(self, noun: str) -> str:
        parts = []
        if self.running or self.pending:
            parts.append(
                f"{sum(self.running.values())} admitted and {sum(self.pending.values())} "
                f"pending workload(s){_teams(self.running + self.pending)}"
            )
        if self.pods:
            parts.append(f"{sum(self.pods.values())} pod(s){_teams(self.pods)}")
        if self.daemon_pods:
            parts.append(f"{self.daemon_pods} DaemonSet pod(s) (node agents)")
        if self.gangs or self.waiting_gangs:
            parts.append(
                f"{sum(self.gangs.values())} running and {sum(self.waiting_gangs.values())} "
                f"waiting PodGroup(s){_teams(self.gangs + self.waiting_gangs)}"
            )
        return f"live: {noun} " + "; ".join(parts) if parts else f"live: {noun} nothing now"


def _teams(counts: Counter[str]) -> str:
    shown = ", ".join(f"{team} {n}" for team, n in sorted(counts.items()))
    return f" ({shown})" if shown else ""


def _count_workloads(radius: Radius, work: LiveWork, chosen: Iterable[Obj]) -> None:
    for workload in chosen:
        if holds_quota(workload):
            radius.running[work.team(workload)] += 1
        elif waiting(workload):
            radius.pending[work.team(workload)] += 1


def radius(hazard: Hazard, work: LiveWork) -> Radius:
    found = Radius()
    scope = dict(hazard.scope)
    live_workloads = [w for w in work.workloads if not finished(w)]
    if "flavor" in scope:
        flavor = scope["flavor"]
        _count_workloads(
            found,
            work,
            (w for w in live_workloads if holds_quota(w) and flavor in assigned_flavors(w)),
        )
    if "nodes" in scope:
        nodes = set(scope["nodes"].split(","))
        taints = [value for what, value in hazard.scope if what == "taint"]
        wanted = [value for what, value in hazard.scope if what == "requests"]
        for pod in work.pods:
            if pod_finished(pod) or pod_node(pod) not in nodes:
                continue
            if taints and _tolerates(pod, taints):
                continue
            if wanted and not _requests_any(pod, wanted):
                continue
            if _daemon(pod):
                found.daemon_pods += 1
            else:
                found.pods[work.team(pod)] += 1
    if "namespace" in scope:
        namespace = scope["namespace"]
        _count_workloads(found, work, (w for w in live_workloads if _in(w, namespace)))
        for pod in work.pods:
            if _in(pod, namespace) and not pod_finished(pod):
                found.pods[work.team(pod)] += 1
    if "localqueue" in scope:
        namespace, name = scope["localqueue"].split("/", 1)
        _count_workloads(
            found,
            work,
            (w for w in live_workloads if _in(w, namespace) and _queue(w) == name),
        )
    if "drained" in scope:
        namespace, name = scope["drained"].split("/", 1)
        by_owner = {
            uid: w
            for w in live_workloads
            if _in(w, namespace) and _queue(w) == name and holds_quota(w)
            for uid in owner_uids(w)
        }
        for pod in work.pods:
            if _in(pod, namespace) and not pod_finished(pod) and pod_workload(pod, by_owner):
                found.pods[work.team(pod)] += 1
    if "clusterqueue" in scope:
        queue = scope["clusterqueue"]
        _count_workloads(
            found,
            work,
            (w for w in live_workloads if holds_quota(w) and cluster_queue(w) == queue),
        )
    if "priorityclass" in scope:
        name = scope["priorityclass"]
        for pod in work.pods:
            spec = pod.get("spec") or {}
            if spec.get("priorityClassName") == name and _owned(pod) and not pod_finished(pod):
                found.pods[work.team(pod)] += 1
    if "volcanoqueue" in scope:
        queue = scope["volcanoqueue"]
        for group in work.podgroups:
            if podgroup_queue(group) != queue:
                continue
            if podgroup_running(group):
                found.gangs[work.team(group)] += 1
            elif podgroup_waiting(group):
                found.waiting_gangs[work.team(group)] += 1
    if "unmatched" in scope:
        value = scope["unmatched"]
        _count_workloads(found, work, (w for w in live_workloads if unmatched_workload(w, value)))
    for what, value in hazard.scope:
        if what != "plain":
            continue
        pool, resource = value.split("|", 1)
        _count_workloads(
            found,
            work,
            (
                w
                for w in live_workloads
                if waiting(w) and resource in requested(w) and pool in _selected_pools(w)
            ),
        )
    for what, value in hazard.scope:
        if what != "resource":
            continue
        queue, resource = value.split("|", 1)
        _count_workloads(
            found,
            work,
            (
                w
                for w in live_workloads
                if resource in requested(w) and (cluster_queue(w) == queue or not holds_quota(w))
            ),
        )
    return found


def _selected_pools(workload: Obj) -> set[str]:
    """The pools the workload's pod sets select by their nodeSelector's pool label."""
    return {
        pool_label(((p.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}, "")
        for p in (workload.get("spec") or {}).get("podSets") or []
    } - {""}


def _requests_any(pod: Obj, resources: Sequence[str]) -> bool:
    """The pod requests some of `resources` (a "requests" scope narrows "nodes" to them)."""
    asked = pod_requests(pod.get("spec") or {}, value)
    return any(asked.get(r, Decimal(0)) > 0 for r in resources)


def _in(obj: Obj, namespace: str) -> bool:
    return bool(obj.get("metadata", {}).get("namespace") == namespace)


def _queue(workload: Obj) -> str:
    return local_queue(workload)


NOUNS = {
    "kueue-flavor-renamed": "no longer counted, running on the pool:",
    "kueue-flavor-removed": "admitted on the flavor:",
    "kueue-flavor-transition": "kept counted on the retiring flavor:",
    "kueue-flavor-retired": "admitted on the retiring flavor:",
    "taint-evicts": "evicted:",
    "mig-mode-flip": "stopped while the GPUs reset:",
    "mig-repartition": "on the nodes, requesting the MIG slices being re-made:",
    "jobs-unmatched": "made from the old templates, matching no flavor after the change:",
    "namespace-removed": "left outside every queue and quota:",
    "localqueue-removed": "stranded:",
    "queue-stopped": "held in the queue:",
    "clusterqueue-removed": "holding the queue Terminating:",
    "priority-class-removed": "refused when recreated:",
    "priority-class-recreated": "of the tier that a controller could recreate during the gap "
    "(refused while the class is gone):",
    "kueue-resource-uncovered": "never admitted again or left uncounted:",
    "dra-pool-moved": "pending on the moved pools with the device plugin's resources, never "
    "admitted:",
    "node-removed": "running outside the pool's accounting:",
    "node-moved": "running on the moving nodes, double-booked:",
    "mig-strategy-single": "whole-GPU pods on the pool's nodes, each a slice once recreated:",
    "volcano-queue-pruned": "gangs in the queue (one still waiting when it goes is never "
    "scheduled; under the 1.15 delete check the prune is refused while one runs):",
    "volcano-queue-layout-switched": "gangs in the queue (running ones counted against none "
    "after, waiting ones never scheduled):",
    "sharing-reduced": "sharing the GPUs now:",
    "sharing-staged": "sharing the GPUs now:",
    "sharing-retired": "sharing the GPUs now:",
}


# Flavor hazards whose live line also gives the admitted usage per ClusterQueue and resource
# (what `spec.kueue.retiringFlavor.holds` takes) and, for the removal, whether it is safe now.
USAGE_RULES = ("kueue-flavor-renamed", "kueue-flavor-transition", "kueue-flavor-retired")


def flavor_usage(work: LiveWork, flavor: str) -> dict[str, dict[str, Decimal]]:
    """Per ClusterQueue and resource, what the unfinished admitted workloads hold on `flavor`:
    each pod set's `resourceUsage` for the resources its `flavors` map to it (Kueue's own
    accounting, workload.Info.FlavorResourceUsage)."""
    found: dict[str, dict[str, Decimal]] = {}
    for workload in work.workloads:
        if not holds_quota(workload):
            continue
        queue = cluster_queue(workload) or "-"
        for assignment in admission(workload).get("podSetAssignments") or []:
            usage = assignment.get("resourceUsage") or {}
            for resource, assigned in (assignment.get("flavors") or {}).items():
                if assigned != flavor:
                    continue
                try:
                    amount = quantities.value_of(usage.get(resource, 0))
                except quantities.QuantityError:
                    continue
                held = found.setdefault(queue, {})
                held[resource] = held.get(resource, Decimal(0)) + amount
    return found


def _holds_text(usage: Mapping[str, Mapping[str, Decimal]]) -> str:
    teams = []
    for queue, held in sorted(usage.items()):
        amounts = ", ".join(
            f"{r}: '{quantities.canonical(v, binary=r == 'memory')}'"
            for r, v in sorted(held.items())
        )
        teams.append(f"{queue}: {{{amounts}}}")
    return "{" + ", ".join(teams) + "}"


def _usage_text(hazard: Hazard, work: LiveWork) -> str:
    flavor = dict(hazard.scope).get("flavor", "")
    usage = {q: h for q, h in flavor_usage(work, flavor).items() if any(h.values())}
    if hazard.rule == "kueue-flavor-retired":
        if not usage:
            return "; nothing admitted on it: safe to remove now"
        return (
            f"; NOT safe yet: still admitted there {_holds_text(usage)}; keep the entry (or set "
            "holds to that) until it is 0"
        )
    if not usage:
        return ""
    return f"; admitted usage (holds: {_holds_text(usage)})"


def annotate(hazards: Sequence[Hazard], work: LiveWork) -> list[Hazard]:
    """`hazards` with `live` set wherever the hazard has a scope to count in."""
    return [
        replace(
            h,
            live=radius(h, work).text(NOUNS.get(h.rule, "reached:"))
            + (_usage_text(h, work) if h.rule in USAGE_RULES else "")
            + (capacity_text(h, work.pods) if "capacity" in dict(h.scope) else ""),
        )
        if h.scope
        else h
        for h in hazards
    ]


LiveUnavailable = Unavailable  # what `diff --kubeconfig` raises: exit 4


def with_live_radius(
    hazards: Sequence[Hazard],
    *,
    kueue_api_version: str,
    team_of_namespace: Mapping[str, str],
    kubeconfig: Any = None,
    context: str | None = None,
) -> tuple[list[Hazard], int]:
    """Read the cluster once and annotate `hazards`; returns them and the requests made."""
    with reading(kubeconfig, context) as cluster:
        work = read(cluster, kueue_api_version, team_of_namespace)
    return annotate(hazards, work), work.requests
