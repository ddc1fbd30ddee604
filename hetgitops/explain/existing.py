"""`explain workload NS/NAME`: an existing Workload, Volcano PodGroup or Pod found in the
cluster, its conditions and events, and what they mean in policy terms.

Why apart from the request replay: this reads one object the cluster already holds rather
than replaying an admission; a pending Workload's Kueue message is translated by
`lines.translate` (with the patterns of `kueue_messages`), Volcano's PodGroup conditions and
kube-scheduler's FailedScheduling events by the patterns here (they are those tools' words,
not Kueue's)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hetgitops.explain.lines import translate
from hetgitops.explain.state import cluster_queue_of, kueue_api
from hetgitops.live import resources, workloads
from hetgitops.live.client import Cluster, Forbidden, NotServed
from hetgitops.model.policy import Policy


@dataclass(frozen=True)
class WorkloadReport:
    name: str
    cluster_queue: str | None
    # A Workload: admitted | pending | finished | inactive (live.workloads.status) or unknown;
    # a PodGroup or Pod: running, pending, ...
    state: str
    conditions: tuple[str, ...]
    policy: tuple[str, ...]
    events: tuple[str, ...] = ()
    kind: str = "Workload"  # Workload | PodGroup | Pod: what was found under the name


def _named_or_owned_by(
    items: list[dict[str, Any]], namespace: str, name: str
) -> list[dict[str, Any]]:
    """The objects in `namespace` called `name`, or owned by an object called `name` (a job's
    Workload or PodGroup is found by the job's name)."""
    return [
        obj
        for obj in items
        if obj["metadata"].get("namespace") == namespace
        and (
            obj["metadata"]["name"] == name
            or any(o.get("name") == name for o in obj["metadata"].get("ownerReferences") or [])
        )
    ]


def explain_workload(policy: Policy, cluster: Cluster, namespace: str, name: str) -> WorkloadReport:
    """An existing Workload (by its name or its job's) and the FailedScheduling events of its
    pods, in policy terms."""
    items = cluster.list(resources.workloads(kueue_api(policy)))
    found = _named_or_owned_by(items, namespace, name)
    if not found:
        other = _podgroup_report(policy, cluster, namespace, name) or _pod_report(
            policy, cluster, namespace, name
        )
        if other is not None:
            return other
        return WorkloadReport(
            f"{namespace}/{name}",
            None,
            "unknown",
            (f"no Workload, PodGroup or Pod {name} (or of a job {name}) in {namespace}",),
            (),
        )
    wl = found[0]
    cq = workloads.cluster_queue(wl) or cluster_queue_of(policy, wl)
    conditions = _conditions(wl)
    state = workloads.status(wl)
    reserved = workloads.condition(wl, "QuotaReserved")
    policy_lines = (
        translate(policy, cq, str((reserved or {}).get("message", "")), workloads.requested(wl))
        if state == workloads.PENDING
        else []
    )
    events = _events(cluster, namespace, name)
    return WorkloadReport(
        f"{namespace}/{wl['metadata']['name']}", cq, state, conditions, tuple(policy_lines), events
    )


def _events(cluster: Cluster, namespace: str, name: str) -> tuple[str, ...]:
    """kube-scheduler's FailedScheduling events of the job's pods (pods are named after it)."""
    found = []
    for event in cluster.list(resources.EVENTS):
        involved = event.get("involvedObject") or {}
        if (
            involved.get("namespace") == namespace
            and involved.get("kind") == "Pod"
            and str(involved.get("name", "")).startswith(name)
            and event.get("reason") == "FailedScheduling"
        ):
            found.append(f"{involved['name']}: FailedScheduling: {event.get('message', '')}")
    return tuple(sorted(found))


# Volcano v1.15's PodGroup condition messages (pkg/scheduler/framework/job_updater.go, the
# gang and capacity/proportion plugins) and kube-scheduler's FailedScheduling parts.
VOLCANO_QUOTA = re.compile(
    r"queue resource quota insufficient(?:: insufficient (?P<resource>\S+))?"
)
VOLCANO_GANG = re.compile(r"(?P<short>\d+)/(?P<total>\d+) tasks in gang unschedulable")
SCHEDULER_INSUFFICIENT = re.compile(r"(?P<count>\d+) Insufficient (?P<resource>[\w./-]+)")
SCHEDULER_TAINT = re.compile(r"(?P<count>\d+) node\(s\) had untolerated taint \{(?P<taint>[^}]*)\}")
SCHEDULER_SELECTOR = re.compile(r"(?P<count>\d+) node\(s\) didn't match Pod's node affinity")


def _conditions(obj: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}".rstrip(
            ": "
        )
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def _podgroup_report(
    policy: Policy, cluster: Cluster, namespace: str, name: str
) -> WorkloadReport | None:
    """A Volcano PodGroup by its name or its owner's (a vcjob's PodGroup is `<job>-<uid>`):
    its phase and conditions, Volcano's messages in policy terms."""
    if policy.fleet is None or "volcano" not in policy.fleet.targets:
        return None
    try:
        items = cluster.list(resources.PODGROUPS)
    except (NotServed, Forbidden):
        return None
    found = _named_or_owned_by(items, namespace, name)
    if not found:
        return None
    pg = found[0]
    spec, status = pg.get("spec") or {}, pg.get("status") or {}
    queue = str(spec.get("queue") or "default")
    phase = str(status.get("phase") or "Pending")
    lines: list[str] = []
    own = _podgroup_events(cluster, namespace, pg["metadata"]["name"])
    text = " ".join([*(str(c.get("message", "")) for c in status.get("conditions") or []), *own])
    plans = {q.name: q for q in _queue_plans(policy)}
    plan = plans.get(queue)
    quota = VOLCANO_QUOTA.search(text)
    if quota is not None:
        resource = quota["resource"] or "a resource"
        where = f" at {plan.origin}" if plan is not None else ""
        lines.append(
            f"Volcano queue {queue} lacks {resource} for the gang: raise team "
            f"{plan.team.name if plan else '?'}'s quota in pool {plan.pool if plan else '?'}{where}"
        )
    gang = VOLCANO_GANG.search(text)
    if gang is not None:
        lines.append(
            f"{gang['short']} of the gang's {gang['total']} tasks find no node: minMember "
            f"{spec.get('minMember', '?')} must all start together; see the pods' FailedScheduling"
        )
    if plan is None and queue != "default":
        lines.append(f"no team's Volcano queue is named {queue}")
    state = "running" if phase in ("Running", "Completed") else "pending"
    events = (*own, *_events(cluster, namespace, name))
    return WorkloadReport(
        f"{namespace}/{pg['metadata']['name']}",
        queue,
        state,
        (f"phase={phase}", *_conditions(pg)),
        tuple(lines),
        events,
        kind="PodGroup",
    )


def _podgroup_events(cluster: Cluster, namespace: str, name: str) -> list[str]:
    """The Volcano scheduler's events on the PodGroup (Unschedulable: the capacity or
    proportion plugin's "queue resource quota insufficient: insufficient R, ...")."""
    found = []
    for event in cluster.list(resources.EVENTS):
        involved = event.get("involvedObject") or {}
        if (
            involved.get("kind") == "PodGroup"
            and involved.get("namespace") == namespace
            and involved.get("name") == name
        ):
            found.append(f"PodGroup {name}: {event.get('reason', '')}: {event.get('message', '')}")
    return sorted(found)


def _queue_plans(policy: Policy) -> list[Any]:
    from hetgitops.plan.volcano_quota import queue_plans

    return list(queue_plans(policy))


def _pod_report(
    policy: Policy, cluster: Cluster, namespace: str, name: str
) -> WorkloadReport | None:
    """A bare Pod: its PodScheduled condition and FailedScheduling events, kube-scheduler's
    reasons in policy terms (which pools' nodes, which taint, which resource)."""
    found = [
        p
        for p in cluster.list(resources.PODS)
        if p["metadata"].get("namespace") == namespace and p["metadata"]["name"] == name
    ]
    if not found:
        return None
    pod = found[0]
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    scheduled: Mapping[str, Any] = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {}
    )
    events = _events(cluster, namespace, name)
    text = " ".join([str(scheduled.get("message", "")), *events])
    lines = []
    for m in SCHEDULER_INSUFFICIENT.finditer(text):
        pools = sorted(
            p.name for p in policy.pools.values() if m["resource"] in _pool_resources(policy, p)
        )
        lines.append(
            f"{m['count']} node(s) lack {m['resource']}: the pools offering it "
            f"({', '.join(pools) or 'none'}) are full or too small for one pod"
        )
    for m in SCHEDULER_TAINT.finditer(text):
        lines.append(
            f"{m['count']} node(s) carry the taint {{{m['taint']}}}: tolerate it, or submit "
            "through the team's LocalQueue so Kueue adds its flavor's tolerations"
        )
    for m in SCHEDULER_SELECTOR.finditer(text):
        lines.append(f"{m['count']} node(s) are outside the pod's node selector / affinity")
    queued = ((pod.get("metadata") or {}).get("labels") or {}).get("kueue.x-k8s.io/queue-name")
    if queued is None and phase == "Pending":
        lines.append(
            "no kueue.x-k8s.io/queue-name label: no quota applies, kube-scheduler alone decides"
        )
    state = "pending" if phase == "Pending" else phase.lower()
    return WorkloadReport(
        f"{namespace}/{name}",
        None,
        state,
        (f"phase={phase}", *_conditions(pod)),
        tuple(lines),
        events,
        kind="Pod",
    )


def _pool_resources(policy: Policy, pool: Any) -> set[str]:
    from hetgitops.explain.nodes import pool_nodes

    return {r for n in pool_nodes(policy, pool) for r in n.units}
