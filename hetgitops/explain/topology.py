"""Kueue v0.19.2's topology-aware placement (TAS) of one pod set on its chosen flavor's nodes.

Why apart from the flavor assignment (`kueue.py`): placement is a second step with its own inputs
(the nodes, their labels and taints, what each has free) and its own failure
(TopologyPlacementFailed); the assigner calls it once a flavor is chosen (flavorassigner.go).
Follows pkg/cache/scheduler/tas_flavor_snapshot.go: nodes outside the pod set's selector or with a
taint neither the pod's nor the flavor's tolerations tolerate are excluded (placement adds the
flavor's tolerations), pods fill the BestFit domain at the requested level, and a pod set that fits
none gets "topology "T" doesn't allow to fit ..." (`kueue_messages.topology_unfit`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from hetgitops.explain.kueue_messages import topology_unfit
from hetgitops.explain.nodes import NodeView, admits, limiting, pool_nodes, slots, untolerated
from hetgitops.explain.quotas import Flavor
from hetgitops.explain.workload import PodSet
from hetgitops.model.policy import Policy
from hetgitops.plan.flavors import topology_levels, topology_name


@dataclass(frozen=True)
class Placement:
    """Where the pod set's pods would go: the topology domain and nodes (TAS)."""

    level: str | None
    domain: tuple[str, ...]
    nodes: tuple[str, ...]


def place(
    policy: Policy,
    flavor: Flavor,
    pod_set: PodSet,
    *,
    free: dict[str, dict[str, int]],
    node_free: Mapping[str, Mapping[str, int]],
) -> tuple[Placement | None, str]:
    """The pod set's placement in `flavor`'s nodes, or Kueue's message why there is none.
    `free`: units left per node by the pod sets placed before (taken from here on success);
    `node_free`: what the live cluster leaves free per node (a node's units when absent)."""
    fleet = policy.fleet
    assert fleet is not None
    levels = topology_levels(policy, fleet)
    all_nodes = pool_nodes(policy, flavor.plan.pool)
    nodes, excluded = _candidates(all_nodes, flavor, pod_set)
    room: dict[str, int] = {}
    for node in nodes:
        left = free.setdefault(node.name, dict(node_free.get(node.name, node.units)))
        room[node.name] = slots(node, pod_set.requests, left)
        if room[node.name] == 0:
            excluded[f'resource "{limiting(node, pod_set.requests, left)}"'] += 1
    required = pod_set.required_topology
    level = required or pod_set.preferred_topology
    count = pod_set.count
    domains = _domains(policy, nodes, level if level in levels else None)
    best = _best_domain(domains, room, count)
    if best is None and required is None:
        best = () if sum(room.values()) >= count else None
        domains = {(): nodes}
    if best is None:
        if required is not None:
            fit = max((_room(d, room) for d in domains.values()), default=0)
        else:
            fit = sum(room.values())
        name = topology_name(policy, fleet)
        return None, topology_unfit(name, fit, count, len(all_nodes), excluded)
    taken = _take(domains[best], pod_set, room, free)
    return Placement(level if best else None, best, tuple(sorted(taken))), ""


def _candidates(
    all_nodes: list[NodeView], flavor: Flavor, pod_set: PodSet
) -> tuple[list[NodeView], Counter[str]]:
    """The nodes the pod set's selector and tolerations (with the flavor's) admit, and how
    many were excluded by what."""
    selector = {**pod_set.node_selector, **flavor.node_labels}
    tolerations = (*pod_set.tolerations, *flavor.tolerations)
    nodes: list[NodeView] = []
    excluded: Counter[str] = Counter()
    for node in all_nodes:
        if not admits(selector, pod_set.node_affinity, node.labels):
            excluded["nodeSelector"] += 1
            continue
        taint = untolerated(node, tolerations)
        if taint is not None:
            excluded[f'taint "{taint.key}={taint.value or ""}:{taint.effect}"'] += 1
            continue
        nodes.append(node)
    return nodes, excluded


def _take(
    domain: list[NodeView],
    pod_set: PodSet,
    room: Mapping[str, int],
    free: dict[str, dict[str, int]],
) -> list[str]:
    """The nodes the pods fill, roomiest first; their units come off `free`."""
    accel = {r: n for r, n in pod_set.requests.items() if r not in ("cpu", "memory", "pods")}
    taken: list[str] = []
    left_count = pod_set.count
    for node in sorted(domain, key=lambda n: (-room[n.name], n.name)):
        take = min(room[node.name], left_count)
        if take <= 0:
            continue
        left_count -= take
        taken.append(node.name)
        for resource, amount in pod_set.requests.items():
            if resource in accel or resource in free[node.name]:
                free[node.name][resource] = free[node.name].get(resource, 0) - amount * take
    return taken


def _domains(
    policy: Policy, nodes: list[NodeView], level: str | None
) -> dict[tuple[str, ...], list[NodeView]]:
    """Nodes grouped by their values of the topology levels down to `level`; one group of
    every node without a level."""
    fleet = policy.fleet
    assert fleet is not None
    if level is None:
        return {(): nodes}
    levels = topology_levels(policy, fleet)
    depth = levels.index(level) + 1
    groups: dict[tuple[str, ...], list[NodeView]] = {}
    for node in nodes:
        key = tuple(node.labels.get(label, "") for label in levels[:depth])
        groups.setdefault(key, []).append(node)
    return groups


def _room(nodes: list[NodeView], room: Mapping[str, int]) -> int:
    return sum(room[n.name] for n in nodes)


def _best_domain(
    domains: Mapping[tuple[str, ...], list[NodeView]], room: Mapping[str, int], count: int
) -> tuple[str, ...] | None:
    """BestFit: the domain with the least room that still holds every pod, ties by name."""
    fitting = [(_room(n, room), key) for key, n in domains.items() if _room(n, room) >= count]
    return min(fitting)[1] if fitting else None
