"""Compile stage, target `kueue`: every Kueue object for `Fleet.kueue_api_version`."""

from __future__ import annotations

from hetgitops.compilers import COMPILERS
from hetgitops.compilers.kueue_flavors import flavor_manifests
from hetgitops.compilers.kueue_queues import TARGET, queue_manifests
from hetgitops.manifests import Manifest
from hetgitops.model import Policy


def compile_kueue(policy: Policy) -> list[Manifest]:
    """ResourceFlavors, Topology, WorkloadPriorityClasses, Cohorts, ClusterQueues, LocalQueues."""
    fleet = policy.fleet
    if fleet is None:
        return []
    return [*flavor_manifests(policy, fleet), *queue_manifests(policy, fleet)]


COMPILERS[TARGET] = compile_kueue
