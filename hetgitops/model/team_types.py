"""Model stage: the kinds that say who runs what, as frozen dataclasses: `Team` (its quotas,
grants, preemption and queue settings), `PriorityTier` and `WorkloadProfile` (with its Ray
spec)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.model.origin import Origin


@dataclass(frozen=True)
class Grant:
    """Time-boxed quota: `cards` more whole cards from `start` through `until` (plan.grants)."""

    cards: int
    start: dt.date
    until: dt.date
    reason: str | None
    origin: Origin


@dataclass(frozen=True)
class Quota:
    pool: str
    cards: int | None
    normalized: float | None
    mig: Mapping[str, int]
    borrowing_limit: int | None
    lending_limit: int | None
    origin: Origin
    grants: tuple[Grant, ...] = ()
    # Cards the grants in force on the analysed day add; already counted in `cards`
    # (plan.grants.at sets both).
    granted: int = 0
    # `hostLimits`: whether the limits also bound cpu and memory; `cpuPerCard` /
    # `memoryPerCard`: this pool's per-card host amounts (None: the team's).
    host_limits: bool = True
    cpu_per_card: str | None = None
    memory_per_card: str | None = None
    # `migBorrowingLimits` / `migLendingLimits`: per MIG profile, instead of the entry's limit.
    mig_borrowing_limits: Mapping[str, int] = field(default_factory=dict)
    mig_lending_limits: Mapping[str, int] = field(default_factory=dict)
    # `limitsCoverAll`: the limits also bound, at 0, each listed resource the entry claims none of.
    limits_cover_all: bool = False


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
    # `spec.kueue.coveredResources`: the accelerator resources the queue covers, in order
    # (None: those its pools offer or its quotas claim).
    covered_resources: tuple[str, ...] | None = None
    # `spec.volcano.reclaimable` / `queueNames`: None = not the pool's isolation / <team>-<pool>.
    volcano_reclaimable: bool | None = None
    volcano_queue_names: Mapping[str, str] = field(default_factory=dict)
    volcano_parent: str | None = None
    volcano_omit_capability: bool = False
    # `spec.volcano.layout` / `queueName` / `resources` / `omitDeserved` / `capability` /
    # `deserved`: one queue per team across its pools ("team") or one leaf per pool ("pool");
    # the resources its amounts name ("accelerators": no cpu or memory); kept from a cluster.
    volcano_layout: str = "pool"
    volcano_queue_name: str | None = None
    volcano_resources: str = "all"
    volcano_omit_deserved: bool = False
    volcano_capability: Mapping[str, str] | None = None
    volcano_deserved: Mapping[str, str] | None = None
    # `spec.namespaceQuota`: an adopted ResourceQuota's name and its other hard limits.
    namespace_quota_name: str | None = None
    namespace_quota_hard: Mapping[str, str] = field(default_factory=dict)
    # `spec.namespaceQuota.accelerators`: the accelerators capped and each cap; None = each
    # accelerator the queue admits, at its reach (plan.namespace_quota).
    namespace_quota_accelerators: Mapping[str, str] | None = None
    # `spec.namespaceLabels`: more labels on each team Namespace (plan.namespace_labels).
    namespace_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PriorityTier:
    name: str
    value: int
    preemption_policy: str
    preemptible: bool
    global_default: bool
    description: str
    origin: Origin
    # `spec.workloadDescription`: the WorkloadPriorityClass's own description; None = `description`.
    workload_description: str | None = None


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
