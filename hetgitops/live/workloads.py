"""Live stage: what a live Kueue Workload, Pod or PodGroup says, read once for every command
(habit 11): whether a Workload holds quota, waits or is finished, what it and a pod request.

The diff blast radius (`diff --kubeconfig`) and `explain`'s live mode used to answer "admitted"
differently (QuotaReserved-or-Admitted against `status.admission` present) and so counted an
evicted-and-requeued or hand-patched Workload on opposite sides. Kueue itself answers through
one package, `pkg/workload`, which every controller and its cache call; this module follows it
(Kueue v0.19.2, the lines cited on each function). Plain JSON in, no hetgitops imports beyond
`live`, so every stage may read through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

Obj = Mapping[str, Any]
N = TypeVar("N", int, Decimal)

# kubelet's terminal pod phases: the pod's containers are gone and its requests free again.
FINISHED_PHASES = ("Succeeded", "Failed")
# `status()` values: Kueue's workload.Status with QuotaReserved and Admitted as one, and a
# deactivated Workload apart (it is neither counted nor queued).
FINISHED, INACTIVE, ADMITTED, PENDING = "finished", "inactive", "admitted", "pending"


def condition(obj: Obj, kind: str) -> Mapping[str, Any] | None:
    """The status condition of type `kind`, or None (apimeta.FindStatusCondition)."""
    for found in (obj.get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return None


def _true(obj: Obj, kind: str) -> bool:
    """apimeta.IsStatusConditionTrue: the condition is there and its status is "True"."""
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"


def finished(workload: Obj) -> bool:
    """Finished=True (pkg/workload/finish/finish.go:58-60, IsFinished). Kueue leaves
    `status.admission` on a finished Workload; only this condition says it is done."""
    return _true(workload, "Finished")


def active(workload: Obj) -> bool:
    """`spec.active` absent or true (workload.go:1243-1246, IsActive)."""
    return (workload.get("spec") or {}).get("active") is not False


def holds_quota(workload: Obj) -> bool:
    """The Workload's quota counts in its ClusterQueue's usage now ("admitted" in hetgitops).

    Kueue v0.19.2 pkg/workload/workload.go:1267-1272, HasActiveQuotaReservation:
    QuotaReserved=True (:1169-1172, HasQuotaReservation), not Finished, and active; its cache
    adds and removes a Workload on exactly this (pkg/cache/scheduler/cache.go:793-800).
    - Not `status.admission` present: UnsetQuotaReservationWithCondition (workload.go:791-814)
      clears it in the same write as QuotaReserved=False, so an admission without the
      condition is stale or hand-patched and holds nothing. An evicted Workload keeps both
      (and its quota) until its job has stopped (jobframework/reconciler.go:586-612): it
      still holds quota, as Kueue counts it.
    - Not Admitted=True: that also waits for the admission checks (IsAdmitted, :1238-1241);
      QuotaReserved=True with the checks pending already counts in the usage.
    - Not a deactivated one: Kueue drops it from the cache at once (cache.go:793-800,
      workload_controller.go:1403, `!active`), its pods still stopping.
    """
    return _true(workload, "QuotaReserved") and not finished(workload) and active(workload)


def waiting(workload: Obj) -> bool:
    """Queued for quota: active, not finished, no quota reserved (IsAdmissible,
    workload.go:1248-1252, less its feature-gated admission gate, on-hold and
    replacement-pods conditions)."""
    return active(workload) and not finished(workload) and not _true(workload, "QuotaReserved")


def status(workload: Obj) -> str:
    """finished | inactive | admitted | pending, in Kueue's order (workload.go:97-108, Status:
    Finished first, then Admitted / QuotaReserved, here one `admitted`: `holds_quota`)."""
    if finished(workload):
        return FINISHED
    if not active(workload):
        return INACTIVE
    return ADMITTED if holds_quota(workload) else PENDING


def admission(workload: Obj) -> Mapping[str, Any]:
    """`status.admission` (clusterQueue, podSetAssignments), {} when absent; read it only of a
    Workload that `holds_quota`: a stale one may be left on any other."""
    return (workload.get("status") or {}).get("admission") or {}


def local_queue(workload: Obj) -> str:
    """The LocalQueue it was submitted to (`spec.queueName`, in its own namespace), "" when
    none."""
    return str((workload.get("spec") or {}).get("queueName") or "")


def cluster_queue(workload: Obj) -> str:
    """The ClusterQueue that admitted it (`status.admission.clusterQueue`), "" when none."""
    return str(admission(workload).get("clusterQueue") or "")


def assigned_flavors(workload: Obj) -> set[str]:
    """The ResourceFlavors its admission assigns to some pod set's resources."""
    return {
        str(flavor)
        for assignment in admission(workload).get("podSetAssignments") or []
        for flavor in (assignment.get("flavors") or {}).values()
    }


def requested(workload: Obj) -> set[str]:
    """The resource names its pod sets ask for, in containers or init containers, as requests
    or as limits (the API server defaults a missing request to its limit)."""
    found: set[str] = set()
    for podset in (workload.get("spec") or {}).get("podSets") or []:
        spec = (podset.get("template") or {}).get("spec") or {}
        for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            found |= set(container_requests(container.get("resources") or {}))
    return found


def container_requests(resources: Obj) -> dict[str, Any]:
    """A container's effective requests, quantities as written: limits stand in where requests
    are absent, as the API server defaults them."""
    return {**(resources.get("limits") or {}), **(resources.get("requests") or {})}


def pod_requests(spec: Obj, amount: Callable[[str, Any], N]) -> dict[str, N]:
    """A pod's request per resource, each quantity read by `amount(resource, quantity)`: the sum
    of its containers, at least each init container's (Kueue's pod request, pkg/resources
    requests.go:55-57 through the kubelet's resourcehelpers.PodRequests)."""
    total: dict[str, N] = {}
    for container in spec.get("containers") or []:
        for name, value in container_requests(container.get("resources") or {}).items():
            read = amount(str(name), value)
            total[str(name)] = total[str(name)] + read if str(name) in total else read
    for container in spec.get("initContainers") or []:
        for name, value in container_requests(container.get("resources") or {}).items():
            read = amount(str(name), value)
            total[str(name)] = max(total[str(name)], read) if str(name) in total else read
    return dict(sorted(total.items()))


def pod_finished(pod: Obj) -> bool:
    """The pod's phase is Succeeded or Failed: its requests are free again."""
    return (pod.get("status") or {}).get("phase") in FINISHED_PHASES


def pod_node(pod: Obj) -> str:
    """The node the pod is bound to (`spec.nodeName`), "" while unscheduled."""
    return str((pod.get("spec") or {}).get("nodeName") or "")


def podgroup_queue(group: Obj) -> str:
    """The Volcano Queue a PodGroup is in (`spec.queue`; Volcano's webhook fills in "default"
    when it is unset)."""
    return str((group.get("spec") or {}).get("queue") or "default")


def podgroup_running(group: Obj) -> bool:
    """The gang holds pods now: phase Running, or some of its pods running (`status.running`),
    which is what the scheduler counts in its queue's `status.allocated` (pods: one per task,
    Volcano v1.15.1 pkg/scheduler/api/pod_info.go:119, written by framework/session.go:544-550)."""
    status = group.get("status") or {}
    return status.get("phase") == "Running" or int(status.get("running") or 0) > 0


def podgroup_waiting(group: Obj) -> bool:
    """The gang waits to be scheduled: no pod of it running and not done (phase Pending,
    Inqueue or Unknown; Volcano v1.15.1 `pkg/apis/scheduling/types.go` PodGroupPhase). A gang
    whose queue is deleted waits for good: the scheduler's snapshot drops a job whose queue is
    gone (`pkg/scheduler/cache/cache.go:1515-1519`)."""
    phase = (group.get("status") or {}).get("phase") or "Pending"
    return not podgroup_running(group) and phase in ("Pending", "Inqueue", "Unknown")


def priority(workload: Obj) -> int:
    """`spec.priority`, 0 when unset (Kueue v0.19.2 pkg/util/priority/priority.go:37-42,
    Priority: ptr.Deref(Spec.Priority, constants.DefaultPriority), which is 0)."""
    value = (workload.get("spec") or {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def owner_uids(obj: Obj) -> set[str]:
    """The uids of the object's owners (`metadata.ownerReferences`): a Workload's are its job's
    (a batch Job, a JobSet, ... or for plain-pod integration and pod groups the pods), a
    pod's its controller's (a Job, a ReplicaSet, ...)."""
    owners = (obj.get("metadata") or {}).get("ownerReferences") or []
    return {str(o["uid"]) for o in owners if isinstance(o, Mapping) and o.get("uid")}


def pod_workload(
    pod: Obj, by_owner: Mapping[str, Obj], parents: Mapping[str, set[str]] | None = None
) -> Obj | None:
    """The Workload a pod runs for, from `by_owner` (owner uid -> Workload): the pod itself is
    the Workload's owner (plain pods, pod groups), or the pod's owner is (a Job's pods), or, with
    `parents` (a controller's uid -> its owners' uids, from the Jobs read), the owner's owner is
    (a JobSet's pods, through their Job)."""
    own = str((pod.get("metadata") or {}).get("uid") or "")
    owners = sorted(owner_uids(pod))
    above = sorted({uid for o in owners for uid in (parents or {}).get(o, set())})
    for uid in [own, *owners, *above]:
        if uid and uid in by_owner:
            return by_owner[uid]
    return None


def evicted(workload: Obj) -> bool:
    """Evicted=True (pkg/workload/evict/evict.go:71-73, IsEvicted): the preemptor orders such a
    Workload first, it is on its way out already (common/ordering.go:39-46)."""
    return _true(workload, "Evicted")


def quota_reserved_at(workload: Obj) -> str:
    """When QuotaReserved became True (its lastTransitionTime), "" when it is not True: the
    preemptor's "admitted more recently first" (common/ordering.go:91-98, quotaReservationTime,
    which takes now for a Workload without it)."""
    found = condition(workload, "QuotaReserved")
    if found is None or found.get("status") != "True":
        return ""
    return str(found.get("lastTransitionTime") or "")


def created_at(workload: Obj) -> str:
    """metadata.creationTimestamp: the queue-order time LowerOrNewerEqualPriority compares
    (workload.go:1148-1167, GetQueueOrderTimestamp, without its eviction-time variants)."""
    return str((workload.get("metadata") or {}).get("creationTimestamp") or "")


# The annotations that make a pod a topology-aware one, which Kueue's TAS cache leaves out of its
# non-TAS pod usage (it counts the Workload's topology assignment instead); Kueue writes the
# unconstrained one on the pods of an implicit-TAS pod set (docs/upstream.md, live/workloads).
TAS_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-required-topology-constraints",
    "kueue.x-k8s.io/podset-unconstrained-topology",
)


def pod_uses_topology(pod: Obj) -> bool:
    """The pod belongs to a topology-aware pod set (Kueue's utiltas.IsTAS)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return any(name in annotations for name in TAS_ANNOTATIONS)


def topology_domains(assignment: Obj) -> tuple[tuple[str, ...], list[tuple[tuple[str, ...], int]]]:
    """A podSetAssignment's `topologyAssignment` (the v1beta2 slices) as its levels and, per
    domain, the values per level and the pods placed there (Kueue's tas.InternalSeqFrom:
    a level's value is `universal` or prefix + root + suffix; a count `universal` or
    `individual`). No assignment: no levels and no domains."""
    found = assignment.get("topologyAssignment") or {}
    levels = tuple(str(level) for level in found.get("levels") or [])
    domains: list[tuple[tuple[str, ...], int]] = []
    for piece in found.get("slices") or []:
        per_level = piece.get("valuesPerLevel") or []
        counts = piece.get("podCounts") or {}
        individual = counts.get("individual") or []
        for index in range(int(piece.get("domainCount") or 0)):
            values = tuple(_value_at(level, index) for level in per_level)
            universal = counts.get("universal")
            count = universal if universal is not None else _at(individual, index, 0)
            domains.append((values, int(count)))
    return levels, domains


def _at(items: Any, index: int, default: Any) -> Any:
    # The CRD holds every list at domainCount; a hand-written file may not.
    return items[index] if isinstance(items, list) and index < len(items) else default


def _value_at(level: Obj, index: int) -> str:
    if level.get("universal") is not None:
        return str(level["universal"])
    each = level.get("individual") or {}
    root = _at(each.get("roots"), index, "")
    return f"{each.get('prefix') or ''}{root}{each.get('suffix') or ''}"


def podset_template(workload: Obj, name: str) -> Obj:
    """The pod template spec of the Workload's pod set `name` ({} when there is none)."""
    for podset in (workload.get("spec") or {}).get("podSets") or []:
        if podset.get("name", "main") == name:
            return (podset.get("template") or {}).get("spec") or {}
    return {}
