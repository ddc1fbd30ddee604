"""Compile stage, target `kueue`: ResourceFlavors, the Topology and WorkloadPriorityClasses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hetgitops.compilers.labels import flavor_node_labels, topology_label
from hetgitops.model.policy import Fleet, Policy, Pool, PriorityTier, Taint
from hetgitops.output.manifests import Manifest, metadata

TARGET = "kueue"
HOSTNAME = "kubernetes.io/hostname"


def toleration(taint: Taint) -> dict[str, str]:
    """Kueue adds a flavor's tolerations to admitted pods, so they land on the tainted pool."""
    if taint.value is None:
        return {"key": taint.key, "operator": "Exists", "effect": taint.effect}
    return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}


def resource_flavor(policy: Policy, fleet: Fleet, pool: Pool) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": flavor_node_labels(policy, pool)}
    if pool.taints:
        spec["tolerations"] = [toleration(t) for t in pool.taints]
    if fleet.topology_name:
        spec["topologyName"] = fleet.topology_name
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "ResourceFlavor",
        "metadata": metadata(fleet, pool.name),
        "spec": spec,
    }


def topology_levels(policy: Policy, fleet: Fleet) -> list[str]:
    """Broadest level first; Kueue accepts the hostname label only as the last level."""
    labels = [topology_label(policy, level) for level in fleet.topology_levels]
    return [label for label in labels if label != HOSTNAME] + (
        [HOSTNAME] if HOSTNAME in labels else []
    )


def topology(policy: Policy, fleet: Fleet) -> dict[str, Any]:
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "Topology",
        "metadata": metadata(fleet, fleet.topology_name or ""),
        "spec": {"levels": [{"nodeLabel": label} for label in topology_levels(policy, fleet)]},
    }


def workload_priority_class(fleet: Fleet, tier: PriorityTier) -> dict[str, Any]:
    """WorkloadPriorityClass has no spec: `value` and `description` sit at the top level."""
    obj: dict[str, Any] = {
        "apiVersion": fleet.kueue_api_version,
        "kind": "WorkloadPriorityClass",
        "metadata": metadata(fleet, tier.name),
        "value": tier.value,
    }
    if tier.description:
        obj["description"] = tier.description
    return obj


def flavor_manifests(policy: Policy, fleet: Fleet) -> Iterator[Manifest]:
    for pool in policy.pools.values():
        yield Manifest(TARGET, resource_flavor(policy, fleet, pool), pool.origin.span)
    if fleet.topology_name:
        yield Manifest(TARGET, topology(policy, fleet), fleet.origin.at("spec", "topology"))
    for tier in policy.tiers.values():
        yield Manifest(TARGET, workload_priority_class(fleet, tier), tier.origin.span)
