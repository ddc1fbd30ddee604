"""Plan stage: what each Volcano leaf Queue holds, in numbers, computed once per Policy.

One leaf per (team, pool), `<team>-<pool>` (`leaf_queue_name`), a child of `root` (or of the
team's adopted `spec.volcano.parent`); compilers/volcano.py explains why there is no team level.
The numbers mean what the team's Kueue ClusterQueue means (`quota_plan`):
deserved = nominal quota; capability = the most Kueue can ever admit (nominal plus what it may
borrow from what its cohort tree lends, `Reach.most`, for the accelerators, cpu and memory
alike); guarantee = the part Kueue never lends
(nominal minus the lendable part), which Volcano keeps from other queues.
The volcano compiler spells these as Queues; the volcano-kueue-mismatch check, explain and the
jobs templates read them here.

A team with `spec.volcano.layout: team` has ONE queue instead of its leaves (`team_queue`): the
sums of the leaves' numbers, no pool (so no nodegroup affinity), named `volcano.queueName` or the
team's name. `volcano.resources: accelerators` leaves cpu and memory out of every amount.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction

from hetgitops.diagnostics import Span
from hetgitops.model import quantities
from hetgitops.model.policy import Policy, Team, derived
from hetgitops.plan.quota_plan import (
    HOST_RESOURCES,
    FlavorPlan,
    host_entries,
    host_quota,
    lendable,
    quota_entry,
    reach,
    team_plan,
)

ROOT = "root"


@dataclass(frozen=True)
class QueuePlan:
    """One leaf Queue before rendering, in base units per resource: cpu and memory follow
    from the card-equivalents of its accelerator counts (as in the Kueue ClusterQueue)."""

    name: str
    team: Team
    pool: str
    reclaimable: bool
    deserved: Mapping[str, Decimal]
    capability: Mapping[str, Decimal]
    guarantee: Mapping[str, Decimal]
    origin: Span
    parent: str = ROOT
    depth: int = 0
    # A team queue (`layout: team`): pool is "" and these are the pools it sums.
    pools: tuple[str, ...] = ()


def capability_counts(policy: Policy, team: Team, plan: FlavorPlan) -> dict[str, int]:
    """Kueue's real ceiling per resource: nominal plus what the queue may borrow from what
    the rest of its cohort tree lends (never below nominal, so `deserved <= capability`)."""
    ceilings = reach(policy)
    counts: dict[str, int] = {}
    for resource, nominal in plan.nominal.items():
        most = ceilings.most(team, plan.pool, resource)
        counts[resource] = max(nominal, most if most is not None else nominal)
    return counts


def guarantee_counts(plan: FlavorPlan, team: Team) -> dict[str, int]:
    """What Kueue never lends (nominal minus the lendable part: an isolated pool or a team
    without a cohort lends nothing); `guaranteePercent` of nominal is a floor on top, rounded
    down to whole units. Zero entries are left out."""
    counts: dict[str, int] = {}
    for resource, nominal in plan.nominal.items():
        kept = nominal - lendable(plan, resource) if team.cohort is not None else nominal
        # Integer arithmetic: a float share can land just under a whole card and lose it.
        floor = nominal * (team.guarantee_percent or 0) // 100
        counts[resource] = max(kept, floor)
    return {r: n for r, n in counts.items() if n > 0}


def leaf_queue_name(team: Team, pool: str) -> str:
    """The leaf queue of a team in a pool; jobs (`hetgitops jobs`) name it in `spec.queue`.
    `<team>-<pool>`, unless the team keeps an adopted queue's name (`spec.volcano.queueNames`);
    with `layout: team`, the team's one queue for every pool."""
    if team.volcano_layout == "team":
        return team_queue_name(team)
    return _pool_leaf_name(team, pool)


def _pool_leaf_name(team: Team, pool: str) -> str:
    """The per-pool leaf's name whatever the layout (Koordinator's per-pool quotas keep it)."""
    return team.volcano_queue_names.get(pool) or f"{team.name}-{pool}"


def team_queue_name(team: Team) -> str:
    """The one queue of a `layout: team` team: `volcano.queueName`, else the team's name."""
    return team.volcano_queue_name or team.name


def _with_host(
    policy: Policy, team: Team, plan: FlavorPlan, counts: Mapping[str, int]
) -> dict[str, Decimal]:
    """Accelerator counts plus the cpu and memory their card-equivalents carry."""
    if not counts:
        return {}
    cpu, memory = host_quota(policy, team, plan.cards(counts) or Fraction(0), plan.pool.name)
    host = {"cpu": quantities.value_of(cpu), "memory": quantities.value_of(memory)}
    return {**host, **{r: Decimal(n) for r, n in sorted(counts.items())}}


def _deserved(policy: Policy, team: Team, plan: FlavorPlan) -> dict[str, Decimal]:
    """`_with_host` of the nominal quota: its cpu and memory are the ClusterQueue's nominal
    ones (`host_entries`, computed once per plan for Kueue and Reach)."""
    if not plan.nominal:
        return {}
    entries = host_entries(policy, team, plan)
    host = {name: quantities.value_of(entries[name].nominal) for name in ("cpu", "memory")}
    return {**host, **{r: Decimal(n) for r, n in sorted(plan.nominal.items())}}


def _capability(
    policy: Policy, team: Team, plan: FlavorPlan, nominal: dict[str, Decimal]
) -> dict[str, Decimal]:
    """Accelerators as `capability_counts`; cpu and memory are Kueue's own ceiling for them too
    (`Reach.most`: what the queue borrows comes at each lender's per-card amounts), not the
    team's per-card amounts times the accelerator ceiling, which would let Volcano admit
    memory Kueue never grants. Never below deserved."""
    found = _with_host(policy, team, plan, capability_counts(policy, team, plan))
    if not found:
        return found
    ceilings = reach(policy)
    for resource in HOST_RESOURCES:
        most = ceilings.most(team, plan.pool, resource)
        if most is not None:
            value = Decimal(most) / 1000 if resource == "cpu" else Decimal(most)  # Kueue's ints
            found[resource] = max(value, nominal.get(resource, Decimal(0)))
    return found


def _guarantee(policy: Policy, team: Team, plan: FlavorPlan) -> dict[str, Decimal]:
    """`_with_host` of what Kueue never lends; under `hostLimits: false` Kueue lends all of
    the queue's cpu and memory (they have no lendingLimit), so only accelerators are kept."""
    found = _with_host(policy, team, plan, guarantee_counts(plan, team))
    entry = quota_entry(team, plan.pool.name)
    if entry is None or entry.host_limits or plan.pool.isolated or team.cohort is None:
        return found
    return {r: v for r, v in found.items() if r not in HOST_RESOURCES}


def _leaf(policy: Policy, team: Team, plan: FlavorPlan) -> QueuePlan:
    deserved = _deserved(policy, team, plan)
    return QueuePlan(
        name=_pool_leaf_name(team, plan.pool.name),
        team=team,
        pool=plan.pool.name,
        reclaimable=(
            team.volcano_reclaimable
            if team.volcano_reclaimable is not None
            else not plan.pool.isolated
        ),
        deserved=deserved,
        capability=_capability(policy, team, plan, deserved),
        guarantee=_guarantee(policy, team, plan),
        origin=plan.origin,
        parent=team.volcano_parent or ROOT,
    )


def pool_plans(policy: Policy) -> list[QueuePlan]:
    """One leaf per (team, pool), whatever the team's layout: what the team may hold in each
    pool (Koordinator's per-pool trees and the team queue's sums start here)."""
    return list(derived(policy, "volcano_pool_plans", lambda: _pool_plans(policy)))


def _pool_plans(policy: Policy) -> tuple[QueuePlan, ...]:
    return tuple(
        _leaf(policy, team, p) for team in policy.teams.values() for p in team_plan(policy, team)
    )


def queue_plans(policy: Policy) -> list[QueuePlan]:
    """The Queues Volcano gets: one leaf per (team, pool), every one a child of root (see the
    module docstring), or one queue per `layout: team` team. Computed once per policy: the
    volcano-kueue-mismatch check and the compiler both ask."""
    return list(derived(policy, "volcano_queue_plans", lambda: _queue_plans(policy)))


def _queue_plans(policy: Policy) -> tuple[QueuePlan, ...]:
    found: list[QueuePlan] = []
    for team in policy.teams.values():
        leaves = [p for p in pool_plans(policy) if p.team is team]
        if team.volcano_layout == "team":
            found.extend([team_queue(team, leaves)] if leaves else [])
        else:
            found.extend(_trimmed(team, leaf) for leaf in leaves)
    return tuple(found)


def _only(team: Team, values: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """`volcano.resources: accelerators` drops cpu and memory from an amount."""
    if team.volcano_resources != "accelerators":
        return dict(values)
    return {r: v for r, v in values.items() if r not in HOST_RESOURCES}


def _trimmed(team: Team, leaf: QueuePlan) -> QueuePlan:
    if team.volcano_resources != "accelerators":
        return leaf
    return replace(
        leaf,
        deserved=_only(team, leaf.deserved),
        capability=_only(team, leaf.capability),
        guarantee=_only(team, leaf.guarantee),
    )


def _summed(amounts: list[Mapping[str, Decimal]]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for each in amounts:
        for resource, value in each.items():
            total[resource] = total.get(resource, Decimal(0)) + value
    return {r: total[r] for r in sorted(total)}


def _written(values: Mapping[str, str] | None) -> dict[str, Decimal]:
    """An amount the team writes (`volcano.deserved`, `volcano.capability`), in base units."""
    return {r: quantities.value_of(q) for r, q in sorted((values or {}).items())}


def team_queue(team: Team, leaves: list[QueuePlan]) -> QueuePlan:
    """The one queue of a `layout: team` team: deserved, capability and guarantee the sums of
    its leaves' (Volcano cannot keep them apart per pool without nodegroup affinity); an
    explicit `volcano.deserved` or `volcano.capability` replaces the summed one (as written,
    whatever `resources` says), `omitDeserved` drops deserved.
    Reclaimable when any leaf is (one pool's isolation cannot hold for the others)."""
    summed = {
        field: _only(team, _summed([getattr(leaf, field) for leaf in leaves]))
        for field in ("deserved", "capability", "guarantee")
    }
    deserved = _written(team.volcano_deserved) or summed["deserved"]
    return QueuePlan(
        name=team_queue_name(team),
        team=team,
        pool="",
        reclaimable=any(leaf.reclaimable for leaf in leaves),
        deserved={} if team.volcano_omit_deserved else deserved,
        capability=_written(team.volcano_capability) or summed["capability"],
        guarantee=summed["guarantee"],
        origin=team.origin.at("spec", "volcano", "layout"),
        parent=team.volcano_parent or ROOT,
        pools=tuple(leaf.pool for leaf in leaves),
    )
