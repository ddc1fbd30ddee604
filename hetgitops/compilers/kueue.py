"""Compile stage, target `kueue`: every Kueue object for `Fleet.kueue_api_version`."""

from __future__ import annotations

from hetgitops.compilers import COMPILERS
from hetgitops.compilers.argocd import with_sync_wave
from hetgitops.compilers.dra import dra_manifests
from hetgitops.compilers.kueue_flavors import flavor_manifests
from hetgitops.compilers.kueue_queues import TARGET, queue_manifests
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest


def compile_kueue(policy: Policy) -> list[Manifest]:
    """ResourceFlavors, Topology, WorkloadPriorityClasses, Cohorts, ClusterQueues, LocalQueues;
    for pools on the DRA claims path their DeviceClasses, mappings and claim templates."""
    fleet = policy.fleet
    if fleet is None:
        return []
    queues = [
        with_sync_wave(m) if m.kind == "Cohort" else m for m in queue_manifests(policy, fleet)
    ]
    return [*flavor_manifests(policy, fleet), *queues, *dra_manifests(policy, fleet)]


COMPILERS[TARGET] = compile_kueue
