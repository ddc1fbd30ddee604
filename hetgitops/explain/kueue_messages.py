"""Kueue v0.19.2's words, in one place: the reason tokens, the messages its flavor assigner and
topology placement write, and the patterns that read those messages back from a live Workload.

Why one module: explain writes these strings when it replays an admission (`kueue.py`,
`topology.py`) and reads them when it translates a real Workload's condition (`lines.py`). Kept side
by side, a message whose wording changes in a Kueue upgrade is changed once, and its reader cannot
drift from its writer (the writer owns its reader, STYLE.md habit 11). Sources:
pkg/controller/core/workload_controller.go, pkg/scheduler/flavorassigner/flavorassigner.go,
tas_flavorassigner.go and pkg/cache/scheduler/tas_flavor_snapshot.go at v0.19.2. The reason tokens
are those of Kueue's UnadmittedWorkloadsObservability gate (off by default in v0.19.2: the
condition's reason is then `Pending`, the message the same)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
# How bad a reason is (flavorassigner.go:298-326); "" is a fit.
SEVERITY = {
    "": 0,
    TOPOLOGY_PLACEMENT_FAILED: 1,
    WAITING_FOR_QUOTA: 2,
    EXCEEDS_MAX_QUOTA: 3,
    NO_MATCHING_FLAVOR: 4,
}


def worse(a: str, b: str) -> str:
    return a if SEVERITY[a] >= SEVERITY[b] else b


def fmt(resource: str, amount: int) -> str:
    """Kueue's resourceFormatter: cpu back from milli-units, others as plain integers."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if resource == "memory":
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount and amount % size == 0:
                return f"{amount // size}{suffix}"
    return str(amount)


def _go_taint(taint: Mapping[str, Any]) -> str:
    """A corev1.Taint as Kueue's "%s" prints it: {Key Value Effect TimeAdded}."""
    return f"{{{taint.get('key', '')} {taint.get('value', '')} {taint.get('effect', '')} <nil>}}"


# The flavor assigner's messages, one per flavor and resource tried.


def exceeds_max_quota(resource: str, flavor: str, before: int, request: int, most: int) -> str:
    """Usage + request above PotentialAvailable (:1343-1358); read back by EXCEEDS."""
    return (
        f"insufficient quota for {resource} in flavor {flavor}, previously "
        f"considered podsets requests ({fmt(resource, before)}) + current podset "
        f"request ({fmt(resource, request)}) > maximum capacity "
        f"({fmt(resource, most)})"
    )


def waiting_for_quota(resource: str, flavor: str, more: int) -> str:
    """Above Available (:1366-1368); read back by WAITING."""
    return (
        f"insufficient unused quota for {resource} in flavor {flavor}, "
        f"{fmt(resource, more)} more needed"
    )


def unavailable(resource: str) -> str:
    """A resource no resource group covers (:1069-1072); read back by UNAVAILABLE."""
    return f"resource {resource} unavailable in ClusterQueue"


def no_node_affinity(flavor: str) -> str:
    """The pod's node selector contradicts the flavor's nodeLabels (:1236-1252); read back by
    AFFINITY."""
    return f"flavor {flavor} doesn't match node affinity"


def untolerated_taint(taint: Mapping[str, Any], flavor: str) -> str:
    """A flavor nodeTaint neither the pod nor the flavor tolerates (:1236-1243)."""
    return f"untolerated taint {_go_taint(taint)} in flavor {flavor}"


def no_topology(flavor: str) -> str:
    """The pod set asks a topology level, the flavor has no topology (tas_flavorassigner.go)."""
    return f'Flavor "{flavor}" does not support TopologyAwareScheduling'


def no_topology_level(flavor: str) -> str:
    return f'Flavor "{flavor}" does not contain the requested level'


def topology_only(flavor: str) -> str:
    return f'Flavor "{flavor}" supports only TopologyAwareScheduling'


def topology_unfit(
    topology: str, fit: int, count: int, total_nodes: int, excluded: Mapping[str, int]
) -> str:
    """No domain holds the pod set (tas_flavor_snapshot.go:1997-2016); read back by TOPOLOGY.
    `excluded`: nodes left out, by why ("nodeSelector", 'taint "k=v:E"', 'resource "r"')."""
    head = (
        f'topology "{topology}" doesn\'t allow to fit any of {count} pod(s)'
        if fit == 0
        else f'topology "{topology}" allows to fit only {fit} out of {count} pod(s)'
    )
    if excluded:
        reasons = ", ".join(sorted(f"{k}: {v}" for k, v in excluded.items()))
        head += f". Total nodes: {total_nodes}; excluded: {reasons}"
    return head


# The reason of a Workload whose DRA claims Kueue cannot charge, with the
# UnadmittedWorkloadsObservability gate off (default; workload.go:1626-1631).
INADMISSIBLE = "Inadmissible"


# A pod naming a ResourceClaim (not a template): Kueue's DRA integration refuses the Workload
# before it reads any template (workload_controller.go:452-466), reason INADMISSIBLE.
RESOURCE_CLAIMS_UNSUPPORTED = "KueueDRAIntegration feature does not support use of resource claims"


def claim_template_unrendered(names: tuple[str, ...], namespace: str | None = None) -> str:
    """hetgitops' words for claim templates it did not render (in the pod's namespace: Kueue
    reads a template there, and says "not found" when it is missing; its message for a
    template of an unmapped class names the DeviceClass, which only the cluster knows)."""
    listed = ", ".join(names)
    where = f" in namespace {namespace}" if namespace else ""
    return (
        f"ResourceClaimTemplate {listed} is not rendered by the policy{where}: unless one "
        "exists there and claims a DeviceClass Kueue's deviceClassMappings name, the Workload "
        'is inadmissible ("DeviceClass <class> is not mapped in DRA configuration for podset '
        '<name>", or the template not found)'
    )


def local_queue_missing(queue: str | None) -> str:
    """The job's LocalQueue is not in its namespace: the workload controller's queue blocker
    (workload_controller.go:2084), reason Misconfigured; the name alone, as the Workload's
    spec.queueName holds it."""
    return f"LocalQueue {queue or ''} doesn't exist"


def namespace_mismatch() -> str:
    """The namespace's labels do not match the ClusterQueue's namespaceSelector: the scheduler's
    admissibility check (scheduler.go:683-692, reason Misconfigured), `ErrNamespaceMismatch`'s
    text (pkg/workload/resources.go:42)."""
    return "workload namespace doesn't match ClusterQueue selector"


def pending_message(failed: Iterable[tuple[str, Iterable[str]]]) -> str:
    """The Workload's message: per pod set without a flavor (name, its messages sorted), the
    messages joined by ", " (Status.Message, :353-362), pod sets by "; " (:227-245)."""
    return "; ".join(
        f"couldn't assign flavors to pod set {name}: {', '.join(messages)}"
        for name, messages in failed
    )


# Readers: the same messages found in a live Workload's QuotaReserved condition.
EXCEEDS = re.compile(
    r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), previously considered "
    r"podsets requests \((?P<before>[^)]*)\) \+ current podset request \((?P<request>[^)]*)\) "
    r"> maximum capacity \((?P<most>[^)]*)\)"
)
WAITING = re.compile(
    r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), "
    r"(?P<more>\S+) more needed"
)
AFFINITY = re.compile(r"flavor (?P<flavor>\S+) doesn't match node affinity")
UNAVAILABLE = re.compile(r"resource (?P<resource>\S+) unavailable in ClusterQueue")
TOPOLOGY = re.compile(r"topology \"(?P<topology>[^\"]+)\" (doesn't allow to fit|allows to fit)")
