"""Stranded work, counted as Kueue v0.19.2 leaves it (issue 38, item 9): work that waits and
will never run while the cluster stays as it is. Each entry of `stranded` is `CAUSE
namespace/name`, one of

- `queue-gone`: a pending Workload whose LocalQueue, or the ClusterQueue behind it, no longer
  exists (Kueue: "LocalQueue ... doesn't exist", "ClusterQueue ... doesn't exist";
  pkg/controller/core/workload_controller.go:2080-2090, getQueueBlocker);
- `localqueue-inactive`: a pending Workload whose LocalQueue has a `spec.stopPolicy` other than
  None (Hold or HoldAndDrain; Kueue: "LocalQueue ... is inactive",
  workload_controller.go:741 lqActive, 2084-2085; its status is no longer updated either,
  localqueue_controller.go:194-196);
- `inactive`: a pending Workload whose ClusterQueue has the status condition Active False
  (a flavor or Topology it names is missing, it is stopped or being deleted; "ClusterQueue
  ... is inactive", workload_controller.go:2090-2091);
- `unselected`: a pending Workload in a namespace whose labels its ClusterQueue's
  namespaceSelector does not match ("workload namespace doesn't match ClusterQueue selector",
  reason Misconfigured: pkg/scheduler/scheduler.go:683-692; the selector read by
  `hetgitops.plan.namespace_labels.selects`); only when the reading holds the namespace's labels;
- `no-flavor`: a pending Workload of an active ClusterQueue with a pod set that no flavor can
  admit whatever quota frees up: a requested resource no resource group covers ("resource R
  unavailable in ClusterQueue", pkg/scheduler/flavorassigner/flavorassigner.go:1069-1072), or
  every flavor of the covering group missing, carrying a NoSchedule/NoExecute taint the pod
  set does not tolerate (flavorassigner.go:1239-1245), or with node labels its nodeSelector
  does not match on the keys the group's flavors set (flavorassigner.go:1247-1253, only the
  nodeSelector: the busy fleet's templates select by nodeSelector alone), or where every flavor
  that fits lists the resource at nominalQuota 0 in every ClusterQueue (nobody can lend it:
  "insufficient quota ... > maximum capacity", PotentialAvailable,
  flavorassigner.go:1342-1356; a pool moved to DRA claims leaves the
  device plugin's resource so);
- `unbound`: a pod of admitted work (no scheduling gate left) that no node holds once the
  fleet is at rest (`Load.unbound`);
- `volcano-queue-gone`: a Volcano PodGroup (`namespace/name` of the PodGroup, not of a
  Workload) that waits (`hetgitops.live.workloads.podgroup_waiting`) in a Queue that no
  longer exists: Volcano's scheduler drops a job whose queue is gone from its snapshot
  (v1.15.1 pkg/scheduler/cache/cache.go:1515-1519), so the gang is never scheduled. Only
  when the reading holds Volcano's Queues (a fleet with Volcano has `default` and `root`).

Pending is not admitted and not finished (`busy.admitted`, `busy.finished`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from hetgitops.live.workloads import podgroup_queue, podgroup_waiting
from hetgitops.model import quantities
from hetgitops.model.tolerations import tolerates
from hetgitops.plan.namespace_labels import selects

if TYPE_CHECKING:
    from .busy import Load

Obj = Mapping[str, Any]
CAUSES = (
    "queue-gone",
    "localqueue-inactive",
    "inactive",
    "unselected",
    "no-flavor",
    "unbound",
    "volcano-queue-gone",
)


def _active(queue: Obj) -> bool:
    """The ClusterQueue's Active condition is not False (a queue Kueue has not yet reported
    on is taken as active: Kueue sets the condition on its first reconcile)."""
    for cond in (queue.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Active":
            return bool(cond.get("status") != "False")
    return True


def _pod_sets(workload: Obj) -> list[Obj]:
    return list((workload.get("spec") or {}).get("podSets") or [])


def requested(pod_set: Obj) -> set[str]:
    """The resource names a pod set's containers and init containers request."""
    spec = (pod_set.get("template") or {}).get("spec") or {}
    found: set[str] = set()
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        found.update(((container.get("resources") or {}).get("requests") or {}).keys())
    return found


def _group_of(queue: Obj, resource: str) -> Obj | None:
    for group in (queue.get("spec") or {}).get("resourceGroups") or []:
        if resource in (group.get("coveredResources") or []):
            return dict(group)
    return None


def _flavor_fits(pod_set: Obj, flavor: Obj | None, label_keys: set[str]) -> bool:
    """The flavor exists, the pod set tolerates its taints and selects its node labels."""
    if flavor is None:
        return False
    spec = (pod_set.get("template") or {}).get("spec") or {}
    flavor_spec = flavor.get("spec") or {}
    tolerations = [*(spec.get("tolerations") or []), *(flavor_spec.get("tolerations") or [])]
    for taint in flavor_spec.get("nodeTaints") or []:
        effect = taint.get("effect", "")
        if effect in ("NoSchedule", "NoExecute") and not tolerates(
            tolerations, taint.get("key", ""), taint.get("value"), effect
        ):
            return False
    labels = flavor_spec.get("nodeLabels") or {}
    selector = spec.get("nodeSelector") or {}
    return all(labels.get(k) == v for k, v in selector.items() if k in label_keys)


Quota = Mapping[tuple[str, str], Decimal]  # (flavor, resource) -> Σ nominalQuota listed


def quota(queues: Iterable[Obj]) -> dict[tuple[str, str], Decimal]:
    """Σ nominalQuota per (flavor, resource) over the ClusterQueues that list it (a Cohort's
    own resourceGroups are not read: the fleets hetgitops renders give their Cohorts none)."""
    found: dict[tuple[str, str], Decimal] = {}
    for queue in queues:
        for group in (queue.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for r in flavor.get("resources") or []:
                    key = (str(flavor.get("name", "")), str(r.get("name", "")))
                    amount = quantities.value_of(str(r.get("nominalQuota", "0")))
                    found[key] = found.get(key, Decimal(0)) + amount
    return found


def no_flavor(
    workload: Obj, queue: Obj, flavors: Mapping[str, Obj], listed: Quota | None = None
) -> str:
    """Why no flavor of `queue` can admit the workload (empty: some flavor can). With `listed`
    (`quota`), a flavor whose resource every queue lists at 0 cannot either."""
    for pod_set in _pod_sets(workload):
        for resource in sorted(requested(pod_set)):
            group = _group_of(queue, resource)
            if group is None:
                return f"resource {resource} unavailable in ClusterQueue"
            names = [str(f.get("name", "")) for f in group.get("flavors") or []]
            keys = {
                k
                for n in names
                for k in ((flavors.get(n) or {}).get("spec") or {}).get("nodeLabels") or {}
            }
            fits = [n for n in names if _flavor_fits(pod_set, flavors.get(n), keys)]
            if not fits:
                return f"no flavor of {', '.join(names)} fits {resource}"
            if listed is not None and all(listed.get((n, resource)) == 0 for n in fits):
                return f"no quota for {resource} in {', '.join(fits)}"
    return ""


def _stopped(localqueue: Obj | None) -> bool:
    """The LocalQueue's spec.stopPolicy is set to other than None (Kueue's default None)."""
    policy = ((localqueue or {}).get("spec") or {}).get("stopPolicy") or "None"
    return bool(policy != "None")


def cause(load: Load, key: str, listed: Quota | None = None) -> str:
    """The stranding cause of the pending Workload `key` (empty: it can still be admitted), in
    Kueue's order: getQueueBlocker's, then the scheduler's namespace check, then the flavors."""
    workload = load.workloads[key]
    namespace = key.split("/", 1)[0]
    queue_name = (workload.get("spec") or {}).get("queueName") or ""
    target = load.localqueues.get(f"{namespace}/{queue_name}")
    if target is None or target not in load.clusterqueues:
        return "queue-gone"
    if _stopped(load.localqueue_specs.get(f"{namespace}/{queue_name}")):
        return "localqueue-inactive"
    queue = load.queue_specs.get(target)
    if queue is None:  # a reading without the ClusterQueues' objects: only the names
        return ""
    if not _active(queue):
        return "inactive"
    labels = load.namespace_labels.get(namespace)
    if labels is not None and not selects(
        (queue.get("spec") or {}).get("namespaceSelector"), labels
    ):
        return "unselected"
    return "no-flavor" if no_flavor(workload, queue, load.flavor_specs, listed) else ""


def gangs_queue_gone(load: Load) -> list[str]:
    """The waiting PodGroups whose Volcano Queue is gone (none when no Queue was read)."""
    if not load.volcano_queues:
        return []
    return sorted(
        key
        for key, group in load.podgroups.items()
        if podgroup_waiting(group) and podgroup_queue(group) not in load.volcano_queues
    )


def stranded(load: Load) -> list[str]:
    listed = quota(load.queue_specs.values())
    found = [f"{c} {k}" for k in load.pending() if (c := cause(load, k, listed))]
    found += [f"volcano-queue-gone {k}" for k in gangs_queue_gone(load)]
    return sorted(found + [f"unbound {k}" for k in load.unbound()])


def split(entries: Iterable[str]) -> list[tuple[str, str]]:
    """`CAUSE namespace/name` entries as (cause, key)."""
    return [(e.split(" ", 1)[0], e.split(" ", 1)[1]) for e in entries]
