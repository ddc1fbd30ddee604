"""Diff stage, live blast radius of the sharing hazards: the replicas in use on a pool's nodes
against what they hold after the change, in all and node by node (`diff --kubeconfig`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from hetgitops.diff.hazards import Hazard
from hetgitops.live.workloads import pod_finished, pod_node, pod_requests
from hetgitops.model import quantities

Obj = Mapping[str, Any]


def in_use(pods: Sequence[Obj], nodes: set[str], resource: str) -> Decimal:
    """What the unfinished pods bound to `nodes` request of `resource`, each pod's request as
    Kueue reads it (`live.workloads.pod_requests`: containers summed, at least any init
    container's). For a time-sliced GPU: the replicas in use, what the device plugin's devices
    must cover."""
    total = Decimal(0)
    for pod in pods:
        if pod_finished(pod) or pod_node(pod) not in nodes:
            continue
        total += pod_requests(pod.get("spec") or {}, value).get(resource, Decimal(0))
    return total


def value(_: str, quantity: Any) -> Decimal:
    """A quantity as a number; one that does not parse counts as nothing."""
    try:
        return quantities.value_of(quantity)
    except quantities.QuantityError:
        return Decimal(0)


def capacity_text(hazard: Hazard, pods: Sequence[Obj]) -> str:
    """A sharing reduction: the replicas in use on the nodes against what they hold after."""
    scope = dict(hazard.scope)
    resource, _, units = scope["capacity"].partition("|")
    used = in_use(pods, set(scope.get("nodes", "").split(",")), resource)
    held = Decimal(units)
    shown = f"; {quantities.canonical(used)} {resource} in use on those nodes, {units} after"
    crowded = _crowded_nodes(pods, scope.get("node-capacity", ""))
    if used <= held and crowded:
        if hazard.rule == "sharing-staged":
            return shown + f" in all, but above it on {crowded}: they stay running, new work waits"
        return shown + f" in all, but NOT safe yet: above the new capacity on {crowded}"
    if used <= held:
        return shown + ": safe now"
    over = quantities.canonical(used - held)
    if hazard.rule == "sharing-staged":
        return shown + f": {over} above it stay counted and running, new work waits"
    return (
        shown + f": NOT safe yet, {over} {resource} above the new capacity would overbook the nodes"
    )


def _crowded_nodes(pods: Sequence[Obj], node_capacity: str) -> str:
    """The nodes of a "node-capacity" scope (`RESOURCE|n1=4,n2=4`) with more of the resource in
    use than they hold after the change: the scheduler packs shared replicas per node, so a
    pool whose total fits can still overbook one node."""
    resource, _, entries = node_capacity.partition("|")
    held = dict(e.partition("=")[::2] for e in entries.split(",") if e)
    by_node: dict[str, Decimal] = {}
    for pod in pods:  # one pass: a big pool has thousands of nodes
        node = pod_node(pod)
        if node in held and not pod_finished(pod):
            asked = pod_requests(pod.get("spec") or {}, value).get(resource, Decimal(0))
            by_node[node] = by_node.get(node, Decimal(0)) + asked
    crowded = []
    for node, units in held.items():
        used = by_node.get(node, Decimal(0))
        if used > Decimal(units):
            crowded.append(f"{node} ({quantities.canonical(used)} in use, {units} after)")
    return ", ".join(crowded)
