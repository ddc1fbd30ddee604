"""Model stage: the hardware kinds as frozen dataclasses: `CardType` (with its performance
coefficient) and `Pool` (its nodes, taints, MIG layout, sharing and retiring flavor)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hetgitops.model.origin import Origin


@dataclass(frozen=True)
class Performance:
    coefficient: float
    reference: str
    benchmark: str
    measured_on: str | None
    coefficient_set: str


@dataclass(frozen=True)
class CardType:
    name: str
    vendor: str
    model: str
    resource_name: str
    product_names: tuple[str, ...]
    pci_device_ids: tuple[str, ...]
    memory_gib: float
    architecture: str
    generation: str
    interconnect: str
    precisions: tuple[str, ...]
    mig_table: str | None
    performance: Performance | None
    cost_per_hour: float | None
    currency: str | None
    power_watts: int | None
    lifecycle: str
    images: Mapping[str, str]
    origin: Origin


@dataclass(frozen=True)
class Node:
    name: str
    cards: int
    zone: str | None
    rack: str | None
    nvlink_domain: str | None
    origin: Origin


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str
    # The policy says the eviction a NoExecute taint causes is intended (checks/taints.py).
    evicts_running_pods: bool = False


@dataclass(frozen=True)
class MigDevice:
    gpus: tuple[int, ...] | None  # None = every GPU of the node
    profiles: Mapping[str, int]
    origin: Origin


@dataclass(frozen=True)
class RetiringFlavor:
    """`spec.kueue.retiringFlavor`: the pool's previous ResourceFlavor, kept while the work
    admitted on it drains (compilers/kueue_flavors.py, docs/day2.md)."""

    name: str
    # nodeLabels, tolerations, topologyName exactly as live: the fields Kueue's CRD freezes.
    spec: Mapping[str, Any]
    # team -> Kueue resource -> the most it still holds there; a team or resource not listed
    # holds its whole quota.
    holds: Mapping[str, Mapping[str, str]]
    origin: Origin


@dataclass(frozen=True)
class Pool:
    name: str
    card_type: str
    purpose: str
    cards_per_node: int
    nodes: tuple[Node, ...]
    placement: str
    taints: tuple[Taint, ...]
    isolated: bool
    lend_max_percent: int | None
    reclaim: bool
    mig: tuple[MigDevice, ...]
    time_slicing_replicas: int | None
    rename_by_default: bool
    fail_requests_greater_than_one: bool
    mps_replicas: int | None
    expires: dt.date | None
    labels: Mapping[str, str]
    origin: Origin
    cluster: str | None = None  # the Cluster document it belongs to (multi-cluster fleets)
    # `spec.kueue`: an adopted cluster's ResourceFlavor name and exact nodeLabels (import).
    flavor_name: str | None = None
    flavor_node_labels: Mapping[str, str] | None = None
    # `spec.kueue.flavorNodeTaints`: the flavor lists the pool's taints as its nodeTaints too.
    flavor_node_taints: bool = False
    # `spec.mig.configName`, `spec.timeSlicing.configName` / `spec.mps.configName`: an adopted
    # cluster's mig-parted config and device-plugin config names (import).
    mig_config_name: str | None = None
    sharing_config_name: str | None = None
    retiring_flavor: RetiringFlavor | None = None
    # `spec.timeSlicing.retiringReplicas` / `spec.mps.retiringReplicas`: a staged reduction of
    # the replicas per GPU. The device plugin keeps advertising these while Kueue's quotas
    # (and every capacity check) count the new `replicas` (docs/day2.md).
    retiring_replicas: int | None = None
    # `spec.volcano.nodeGroup`: the volcano.sh/nodegroup-name an adopted cluster's nodes
    # already carry (import); None: the pool's name, which the nodes target labels them with.
    volcano_node_group: str | None = None
    # `spec.devices`: how the GPUs reach pods: "devicePlugin", "draClaims" or
    # "draExtendedResource" (plan/dra.py), and "devicePlugin" while the pool moves from it.
    allocation: str = "devicePlugin"
    migrating_from: str | None = None

    @property
    def node_group(self) -> str:
        """The Volcano nodegroup the pool's queues bind to and its nodes carry."""
        return self.volcano_node_group or self.name

    @property
    def shared_replicas(self) -> int:
        """Replicas per GPU that quotas are checked against (the new count in a reduction)."""
        return self.time_slicing_replicas or self.mps_replicas or 1

    @property
    def advertised_replicas(self) -> int:
        """Replicas per GPU the device plugin is configured with: during a staged reduction the
        old count, so the nodes still hold the work admitted under it."""
        return self.retiring_replicas or self.shared_replicas
