"""Model stage: the fleet-wide kinds as frozen dataclasses: `Fleet` (with its cohorts, drift
ignores, monitoring thresholds and retiring Topology), `LabelTaxonomy` and `Cluster`, and the
defaults the builder fills in where the policy says nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.model.origin import Origin

DEFAULT_CPU_PER_CARD = "8"
DEFAULT_MEMORY_PER_CARD = "64Gi"
ALL_TARGETS = ("core", "kueue", "volcano", "nodes", "gpu-operator")
DEFAULT_RESERVED_PREFIXES = (
    "nvidia.com/",
    "feature.node.kubernetes.io/",
    "amd.com/",
    "beta.amd.com/",
    "node.kubernetes.io/",
    "node-role.kubernetes.io/",
    "kubernetes.io/",
    "k8s.io/",
)


@dataclass(frozen=True)
class CohortSpec:
    name: str
    parent: str | None
    description: str
    origin: Origin
    fair_sharing_weight: str | None = None


@dataclass(frozen=True)
class DriftIgnore:
    """A Fleet's `spec.drift.ignore` entry: what `drift` does not report for a kind."""

    kind: str
    name: str | None
    pointers: tuple[str, ...]
    managers: tuple[str, ...]
    origin: Origin


@dataclass(frozen=True)
class Monitoring:
    """`Fleet.spec.monitoring`: the thresholds and objectives the `monitoring` target's alerts
    use. Every default is documented in the schema and docs/targets/monitoring.md; durations
    stay Prometheus duration strings (`15m`), as the rules print them."""

    namespace: str = "monitoring"
    rule_labels: Mapping[str, str] = field(default_factory=dict)
    dashboard_label: str = "grafana_dashboard"
    idle_percent: float = 10
    idle_for: str = "1h"
    capacity_for: str = "15m"
    pending_for: str = "30m"
    wait_percentile: float = 0.9
    wait_window: str = "1h"
    wait_default: str = "1h"
    wait_tiers: Mapping[str, str] = field(default_factory=dict)
    budget_percent: float = 100
    budget_window: str = "6h"
    mig_for: str = "30m"
    queue_for: str = "10m"
    origin: Origin | None = None  # None: the Fleet has no monitoring section


@dataclass(frozen=True)
class Fleet:
    name: str
    cluster: str
    kubernetes: tuple[int, ...]
    kueue: tuple[int, ...] | None
    volcano: tuple[int, ...] | None
    gpu_operator: tuple[int, ...] | None
    targets: tuple[str, ...]
    label_domain: str
    gpu_operator_namespace: str
    mig_strategy: str
    mig_config_name: str
    device_plugin_config_name: str
    queueing_strategy: str
    when_can_borrow: str
    when_can_preempt: str
    local_queue_name: str | None
    volcano_actions: tuple[str, ...]
    volcano_queue_plugin: str
    volcano_hierarchy: bool
    volcano_extra_plugins: tuple[str, ...]
    cohorts: tuple[CohortSpec, ...]
    topology_name: str | None
    topology_levels: tuple[str, ...]
    cpu_per_card: str
    memory_per_card: str
    default_lifecycle_stages: tuple[str, ...]
    expiry_warning_days: int
    currency: str
    origin: Origin
    drift_ignores: tuple[DriftIgnore, ...] = ()
    monitoring: Monitoring = Monitoring()
    # `spec.topology.topologyName` / `nodeLabels`: an adopted cluster's Topology (import).
    topology_kueue_name: str | None = None
    topology_node_labels: tuple[str, ...] = ()
    # `spec.volcano.tiers` / `configurations` / `metrics`: a scheduler config kept as an
    # adopted cluster has it (import); None = hetgitops writes the tiers. `volcano_settings`:
    # the keys written under spec.volcano (generated-tier settings may not sit beside tiers).
    volcano_tiers: tuple[Mapping[str, Any], ...] | None = None
    volcano_configurations: tuple[Mapping[str, Any], ...] = ()
    volcano_metrics: Mapping[str, str] = field(default_factory=dict)
    volcano_settings: frozenset[str] = frozenset()
    # `spec.topology.retiring`: the previous Topology, kept while the flavors that name it
    # (pools' `retiringFlavor`) drain (docs/day2.md "Topology change transition").
    retiring_topology: RetiringTopology | None = None
    # `spec.kueue.configuration`: what the cluster's Kueue Configuration enables (None: not
    # said, Kueue's shipped defaults assumed).
    kueue_integrations: tuple[str, ...] | None = None
    kueue_fair_sharing: bool | None = None
    # `spec.koordinator` (the koordinator target): profile resourceRatio, the MultiQuotaTree
    # gate, ElasticQuotaArgs.enableMinQuotaScale.
    koordinator_ratio: str = "1"
    koordinator_multi_quota_tree: bool = True
    koordinator_min_quota_scale: bool = False

    @property
    def kueue_api_version(self) -> str:
        """Kueue serves v1beta2 from 0.15; earlier releases only know v1beta1."""
        if self.kueue is not None and self.kueue < (0, 15):
            return "kueue.x-k8s.io/v1beta1"
        return "kueue.x-k8s.io/v1beta2"

    def label(self, name: str) -> str:
        return f"{self.label_domain}/{name}"


@dataclass(frozen=True)
class RetiringTopology:
    """`Fleet.spec.topology.retiring`: the live Topology a levels change replaces, rendered
    again (name and level node labels exactly as live) so retiring flavors can still name it."""

    name: str
    node_labels: tuple[str, ...]
    origin: Origin


@dataclass(frozen=True)
class LabelRule:
    key: str
    source: str
    required: bool
    allowed_values: tuple[str, ...]
    pattern: str | None
    origin: Origin


@dataclass(frozen=True)
class LabelTaxonomy:
    name: str
    labels: tuple[LabelRule, ...]
    reserved_prefixes: tuple[str, ...]
    origin: Origin


MANAGER, WORKER, STANDALONE = "manager", "worker", "standalone"
# The keys of `spec.credentials` that would put a secret into Git (refused by a rule).
INLINE_CREDENTIAL_KEYS = (
    "kubeconfig",
    "token",
    "server",
    "certificateAuthorityData",
    "clientCertificateData",
    "clientKeyData",
    "password",
)


@dataclass(frozen=True)
class ExtraAdmissionCheck:
    """A manager's own admission check beside MultiKueue (`spec.admissionChecks`)."""

    name: str
    controller_name: str
    on_flavors: tuple[str, ...]
    origin: Origin


@dataclass(frozen=True)
class Cluster:
    """One cluster of a multi-cluster fleet (`kind: Cluster`). Versions and targets left out
    are the Fleet's; credentials are a reference only (a Secret or a ClusterProfile name)."""

    name: str
    role: str
    kubernetes: tuple[int, ...] | None
    kueue: tuple[int, ...] | None
    volcano: tuple[int, ...] | None
    gpu_operator: tuple[int, ...] | None
    targets: tuple[str, ...] | None
    region: str | None
    site: str | None
    argocd_name: str | None
    argocd_labels: Mapping[str, str]
    secret: str | None
    cluster_profile: str | None
    inline_credentials: tuple[str, ...]
    dispatch_order: int
    admission_checks: tuple[ExtraAdmissionCheck, ...]
    origin: Origin
