"""Model stage: frozen dataclasses built from schema-valid documents; each remembers its origin."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hetgitops.diagnostics import Span
from hetgitops.load.documents import PathKey, SourceMap
from hetgitops.model.unknowns import Unknowns

T = TypeVar("T")

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
class Origin:
    """Where a model object (or part of one) was written; `at()` narrows to a field."""

    source: SourceMap
    base: PathKey = ()

    def at(self, *path: str | int) -> Span:
        return self.source.at((*self.base, *path))

    def key_at(self, *path: str | int) -> Span:
        return self.source.key_at((*self.base, *path))

    def child(self, *path: str | int) -> Origin:
        return Origin(self.source, (*self.base, *path))

    @property
    def span(self) -> Span:
        return self.source.at(self.base)


def parse_version(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    return tuple(int(p) for p in text.lstrip("v").split("."))


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
class RetiringTopology:
    """`Fleet.spec.topology.retiring`: the live Topology a levels change replaces, rendered
    again (name and level node labels exactly as live) so retiring flavors can still name it."""

    name: str
    node_labels: tuple[str, ...]
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


@dataclass(frozen=True)
class Quota:
    pool: str
    cards: int | None
    normalized: float | None
    mig: Mapping[str, int]
    borrowing_limit: int | None
    lending_limit: int | None
    origin: Origin


@dataclass(frozen=True)
class Preemption:
    within_cluster_queue: str | None
    reclaim_within_cohort: str | None
    borrow_within_cohort: str | None
    borrow_max_priority_threshold: int | None


@dataclass(frozen=True)
class AdmissionCheckRef:
    """`Team.spec.kueue.admissionChecks` entry: an AdmissionCheck the team's ClusterQueue
    requires, on every flavor or only on the listed pools' flavors."""

    name: str
    on_pools: tuple[str, ...]


@dataclass(frozen=True)
class Team:
    name: str
    namespaces: tuple[str, ...]
    cohort: str | None
    quotas: tuple[Quota, ...]
    tiers: tuple[str, ...]
    lifecycle_stages: tuple[str, ...]
    budget_monthly: float | None
    budget_currency: str | None
    preemption: Preemption
    queueing_strategy: str | None
    cpu_per_card: str | None
    memory_per_card: str | None
    volcano_weight: int | None
    guarantee_percent: int | None
    origin: Origin
    # Multi-cluster: the manager ClusterQueue's nominal quota per resource, when it is not
    # the sum of the team's worker quotas (`spec.managerQuota`).
    manager_quota: Mapping[str, str] = field(default_factory=dict)
    # `spec.kueue`: what an adopted cluster's queues already say (import); None = the default.
    local_queue_name: str | None = None
    stop_policy: str | None = None
    namespace_selector: Mapping[str, Any] | None = None
    fair_sharing_weight: str | None = None
    admission_checks: tuple[AdmissionCheckRef, ...] = ()
    # `spec.volcano.reclaimable` / `queueNames`: None = not the pool's isolation / <team>-<pool>.
    volcano_reclaimable: bool | None = None
    volcano_queue_names: Mapping[str, str] = field(default_factory=dict)
    volcano_parent: str | None = None
    volcano_omit_capability: bool = False
    # `spec.namespaceQuota`: an adopted ResourceQuota's name and its other hard limits.
    namespace_quota_name: str | None = None
    namespace_quota_hard: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PriorityTier:
    name: str
    value: int
    preemption_policy: str
    preemptible: bool
    global_default: bool
    description: str
    origin: Origin


@dataclass(frozen=True)
class RayGroup:
    """One worker group of a heterogeneous Ray profile (`spec.ray.workerGroups[]`)."""

    name: str
    card_type: str
    replicas: int


@dataclass(frozen=True)
class RaySpec:
    """`spec.ray` of a rayjob / raycluster / rayservice profile. `groups` empty: one group of
    `gang` workers per card type, one template per card type."""

    groups: tuple[RayGroup, ...]
    head_pool: str | None
    head_cpu: str | None
    head_memory: str | None
    autoscaling: bool
    elastic: bool
    submission_mode: str
    resource_name: str | None
    serve_config: str | None


@dataclass(frozen=True)
class WorkloadProfile:
    name: str
    framework: str
    tier: str
    teams: tuple[str, ...] | None
    cards_per_node: int
    gang: int
    min_memory_gib: float | None
    interconnect: tuple[str, ...]
    precisions: tuple[str, ...]
    vendors: tuple[str, ...]
    purposes: tuple[str, ...]
    mig_profile: str | None
    card_types: tuple[str, ...] | None
    performance: Mapping[str, float]
    image: str | None
    command: tuple[str, ...]
    env: Mapping[str, str]
    cpu_per_card: str | None
    memory_per_card: str | None
    port: int
    probe_initial_delay: int
    probe_period: int
    probe_failure_threshold: int
    topology_preferred: str | None
    topology_required: str | None
    origin: Origin
    ray: RaySpec | None = None


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


@dataclass(frozen=True)
class Policy:
    """The whole validated policy. Mappings are ordered by name, so iteration is deterministic."""

    fleet: Fleet | None
    taxonomy: LabelTaxonomy | None
    card_types: Mapping[str, CardType]
    pools: Mapping[str, Pool]
    teams: Mapping[str, Team]
    tiers: Mapping[str, PriorityTier]
    profiles: Mapping[str, WorkloadProfile]
    # What earlier findings left unknown: objects in files or documents that did not load,
    # pools whose node inventory did not expand. Rules that depend on them report
    # consequences of those findings, not independent errors (see model.unknowns).
    unknown: Unknowns = field(default_factory=Unknowns)
    # Cluster documents by name; empty for a single-cluster policy (rendered as before).
    clusters: Mapping[str, Cluster] = field(default_factory=dict)
    # Values derived from this (immutable) policy, computed once per policy: see `derived()`.
    memo: dict[Hashable, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def card_type_of(self, pool: Pool) -> CardType | None:
        return self.card_types.get(pool.card_type)


def derived(policy: Policy, key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()` once per policy and key. Checks and several compilers need the same team
    plans and node labels; the policy never changes, so sharing them is safe."""
    if key not in policy.memo:
        policy.memo[key] = compute()
    value: T = policy.memo[key]
    return value
