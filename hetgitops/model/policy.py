"""Model stage: the immutable `Policy` that every later stage reads, and `derived()`, its
per-policy memo. The kinds it holds are defined by kind (`fleet_types`, `pool_types`,
`team_types`, `origin`) and re-exported here: `hetgitops.model.policy` is where the rest of
the code imports the model from."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hetgitops.model.fleet_types import (
    ALL_TARGETS,
    DEFAULT_CPU_PER_CARD,
    DEFAULT_MEMORY_PER_CARD,
    DEFAULT_RESERVED_PREFIXES,
    INLINE_CREDENTIAL_KEYS,
    MANAGER,
    STANDALONE,
    WORKER,
    Cluster,
    CohortSpec,
    DriftIgnore,
    ExtraAdmissionCheck,
    Fleet,
    LabelRule,
    LabelTaxonomy,
    Monitoring,
    RetiringTopology,
)
from hetgitops.model.origin import (
    Origin,
)
from hetgitops.model.pool_types import (
    CardType,
    MigDevice,
    Node,
    Performance,
    Pool,
    RetiringFlavor,
    Taint,
)
from hetgitops.model.team_types import (
    AdmissionCheckRef,
    Grant,
    Preemption,
    PriorityTier,
    Quota,
    RayGroup,
    RaySpec,
    Team,
    WorkloadProfile,
)
from hetgitops.model.unknowns import Unknowns

__all__ = [
    "ALL_TARGETS",
    "DEFAULT_CPU_PER_CARD",
    "DEFAULT_MEMORY_PER_CARD",
    "DEFAULT_RESERVED_PREFIXES",
    "INLINE_CREDENTIAL_KEYS",
    "MANAGER",
    "STANDALONE",
    "WORKER",
    "AdmissionCheckRef",
    "CardType",
    "Cluster",
    "CohortSpec",
    "DriftIgnore",
    "ExtraAdmissionCheck",
    "Fleet",
    "Grant",
    "LabelRule",
    "LabelTaxonomy",
    "MigDevice",
    "Monitoring",
    "Node",
    "Origin",
    "Performance",
    "Policy",
    "Pool",
    "Preemption",
    "PriorityTier",
    "Quota",
    "RayGroup",
    "RaySpec",
    "RetiringFlavor",
    "RetiringTopology",
    "Taint",
    "Team",
    "WorkloadProfile",
    "derived",
]

T = TypeVar("T")


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
