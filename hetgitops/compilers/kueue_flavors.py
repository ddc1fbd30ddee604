"""Compile stage, target `kueue`: ResourceFlavors, the Topology and WorkloadPriorityClasses.

Day-2: Kueue 0.19's CRD makes a flavor's `nodeLabels`, `tolerations` and `topologyName` immutable
once `topologyName` is set, and a Topology's `levels` always (CEL transition rules in the API
server, not a webhook). A flavor or Topology whose immutable fields change therefore gets a new name
(`<pool>-<digest>`, `<topology>-<digest>`): the new object is created, the ClusterQueues follow it
in the same sync, and the old one is pruned once Kueue's in-use finalizer sees no ClusterQueue
naming it. Without `topologyName` nothing is immutable and the flavor keeps the pool's name.

A rename alone double-books the pool: Kueue v0.19.2 keeps usage per (flavor, resource) and checks a
request only against the quota of the flavor it tries, so the new flavor admits its full quota next
to the pods still running from the old one. `spec.kueue.retiringFlavor` carries the pool through:
the old flavor is rendered again, exactly as live, with a Kueue-side `nodeTaints` entry (mutable,
unlike the rest of its spec) that no workload tolerates, so Kueue's flavor assigner skips it while
the work admitted on it stays counted; compilers/kueue_queues.py keeps it in the ClusterQueues with
its quota and takes what it holds off the new flavor.

What a flavor selects, tolerates and is called (and the Topology's levels and name) are facts of
plan/flavors.py; this module spells them as objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hetgitops.model.policy import (
    Fleet,
    Policy,
    Pool,
    PriorityTier,
    RetiringFlavor,
    RetiringTopology,
)
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan.flavors import (
    IMMUTABLE_WITH_TOPOLOGY,
    flavor_name,
    flavor_spec,
    retiring_node_taints,
    topology_levels,
    topology_name,
)

TARGET = "kueue"


def retiring_resource_flavor(
    policy: Policy, fleet: Fleet, pool: Pool, retiring: RetiringFlavor
) -> dict[str, Any]:
    """The retiring flavor as live (its frozen fields as the policy quotes them), plus the
    taint; its `nodeTaints` is the one spec field the CRD lets change."""
    spec = {f: retiring.spec[f] for f in IMMUTABLE_WITH_TOPOLOGY if f in retiring.spec}
    spec["nodeTaints"] = retiring_node_taints(policy, pool)
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "ResourceFlavor",
        "metadata": metadata(fleet, retiring.name),
        "spec": spec,
    }


def resource_flavor(policy: Policy, fleet: Fleet, pool: Pool) -> dict[str, Any]:
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "ResourceFlavor",
        "metadata": metadata(fleet, flavor_name(policy, fleet, pool)),
        "spec": flavor_spec(policy, fleet, pool),
    }


def topology(policy: Policy, fleet: Fleet) -> dict[str, Any]:
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "Topology",
        "metadata": metadata(fleet, topology_name(policy, fleet)),
        "spec": {"levels": [{"nodeLabel": label} for label in topology_levels(policy, fleet)]},
    }


def retiring_topology(fleet: Fleet, retiring: RetiringTopology) -> dict[str, Any]:
    """The previous Topology as live: a Topology change transition keeps it while flavors that
    name it retire. Kueue holds a Topology with its resource-in-use finalizer while a TAS
    flavor names it (v0.19.2 pkg/controller/tas/topology_controller.go:108-124), and a
    ClusterQueue listing a TAS flavor whose Topology is gone is inactive
    (pkg/cache/scheduler/clusterqueue.go:351-357): without it the retiring flavors would stop
    every queue that lists them."""
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "Topology",
        "metadata": metadata(fleet, retiring.name),
        "spec": {"levels": [{"nodeLabel": label} for label in retiring.node_labels]},
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
        if pool.retiring_flavor is not None:
            retiring = pool.retiring_flavor
            obj = retiring_resource_flavor(policy, fleet, pool, retiring)
            yield Manifest(TARGET, obj, retiring.origin.span)
    if fleet.topology_name:
        yield Manifest(TARGET, topology(policy, fleet), fleet.origin.at("spec", "topology"))
    retiring_topo = fleet.retiring_topology
    if retiring_topo is not None and retiring_topo.name != topology_name(policy, fleet):
        obj = retiring_topology(fleet, retiring_topo)
        yield Manifest(TARGET, obj, retiring_topo.origin.span)
    for tier in policy.tiers.values():
        yield Manifest(TARGET, workload_priority_class(fleet, tier), tier.origin.span)
