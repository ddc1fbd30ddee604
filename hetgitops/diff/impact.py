"""Diff stage, policy impact: quota, reach, capacity and cost per team and card type before
and after, and the policy-level changes a reviewer weighs (teams, pools, tiers, expiry,
lifecycle, cohorts), from the two sides' Policy models and the plan stage's numbers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from hetgitops.checks._common import quota_uses
from hetgitops.checks.budget import monthly_cost
from hetgitops.model.policy import MANAGER, Policy, Team, derived
from hetgitops.plan.clusters import cluster_policy
from hetgitops.plan.entitlement import plan_entitlements
from hetgitops.plan.quota_plan import FlavorPlan, per_card, quota_entry, reach, team_plan


@dataclass(frozen=True)
class Amount:
    """One side's numbers for a team in a pool: nominal cards (card-equivalents, a MIG slice
    counts its share), the same in normalized performance units (None without a coefficient),
    and the reach: nominal plus what the cohort can really lend (what Kueue/Volcano admit)."""

    cards: Fraction
    normalized: Fraction | None
    reach: Fraction
    # Per accelerator resource (whole GPUs, each MIG profile, replicas apart): what a job
    # can really get; `cards` and `reach` above are card-equivalent sums of these.
    resources: tuple[ResourceAmount, ...] = ()
    # What the cpu and memory quota of the flavor follow (`quota_plan.per_card`, the quota
    # entry's `hostLimits`): a change of these alone changes no accelerator number.
    host: HostTerms | None = None


@dataclass(frozen=True)
class HostTerms:
    cpu_per_card: str
    memory_per_card: str
    host_limits: bool


@dataclass(frozen=True)
class ResourceAmount:
    """One resource of a team's flavor, in its own units (`plan.entitlement`)."""

    resource: str
    label: str  # whole | mig PROFILE | replica 1/N
    nominal: int
    reach: int


@dataclass(frozen=True)
class QuotaRow:
    team: str
    pool: str
    card_type: str
    before: Amount | None
    after: Amount | None
    cluster: str = ""  # multi-cluster fleets: the Cluster the pool is in ("" for one cluster)


@dataclass(frozen=True)
class CapacityRow:
    """Per card type: physical cards in the fleet and Σ nominal quota on them."""

    card_type: str
    before_cards: int
    after_cards: int
    before_quota: Fraction
    after_quota: Fraction


@dataclass(frozen=True)
class CostRow:
    team: str
    currency: str
    before: float | None
    after: float | None
    budget_before: float | None
    budget_after: float | None


@dataclass(frozen=True)
class PolicyChange:
    """A change of the policy itself. `flag` marks what a reviewer must not miss: removal,
    demotion, expiry (None for the rest)."""

    topic: str  # team, pool, card-type, tier, team-tiers, expiry, lifecycle, cohort, cluster,
    # quota-grant (diff.grant_changes)
    subject: str
    before: str
    after: str
    flag: str | None = None


@dataclass(frozen=True)
class Impact:
    quotas: tuple[QuotaRow, ...]
    capacity: tuple[CapacityRow, ...]
    costs: tuple[CostRow, ...]
    changes: tuple[PolicyChange, ...]


def _amount(policy: Policy, team: Team, plan: FlavorPlan) -> Amount:
    cards = plan.cards(plan.nominal) or Fraction(0)
    card = policy.card_type_of(plan.pool)
    coefficient = card.performance.coefficient if card and card.performance else None
    normalized = cards * Fraction(str(coefficient)) if coefficient else None
    most = reach(policy)
    # Whole cards add as ints (diff asks this of every quota on both sides); only MIG
    # instances and replicas need a Fraction.
    whole, parts = 0, Fraction(0)
    for r in plan.nominal:
        units = most.most(team, plan.pool, r) or 0
        weight = plan.weights.get(r)
        if weight is None or weight.denominator == 1:
            whole += units * (1 if weight is None else weight.numerator)
        else:
            parts += units * weight
    reached = parts + whole
    resources = tuple(
        ResourceAmount(e.resource, e.label, e.nominal, e.reach)
        for e in plan_entitlements(policy, team, plan)
    )
    cpu, memory = per_card(policy, team, plan.pool.name)
    entry = quota_entry(team, plan.pool.name)
    host = HostTerms(cpu, memory, entry is None or entry.host_limits)
    return Amount(cards, normalized, reached, resources, host)


def cluster_sides(policy: Policy) -> list[tuple[str, Policy]]:
    """(cluster, the policy it is computed from): the policy itself for one cluster; each
    cluster with pools, narrowed, for a multi-cluster fleet (quota, reach and cohort lending
    are per cluster, as each cluster's Kueue sees them; the manager holds no pools)."""
    if not policy.clusters:
        return [("", policy)]
    return [
        (name, cluster_policy(policy, name))
        for name, cluster in sorted(policy.clusters.items())
        if cluster.role != MANAGER
    ]


AmountKey = tuple[str, str, str]  # cluster, team, pool


def _amounts(policy: Policy | None) -> dict[AmountKey, tuple[str, Amount]]:
    """Every quota's amounts, once per policy (the quota and capacity rows both read them)."""
    if policy is None:
        return {}
    return derived(policy, "diff_amounts", lambda: _all_amounts(policy))


def _all_amounts(policy: Policy) -> dict[AmountKey, tuple[str, Amount]]:
    found: dict[AmountKey, tuple[str, Amount]] = {}
    for cluster, side in cluster_sides(policy):
        for team in side.teams.values():
            for plan in team_plan(side, team):
                amount = _amount(side, team, plan)
                found[cluster, team.name, plan.pool.name] = (plan.pool.card_type, amount)
    return found


def quota_rows(base: Policy | None, head: Policy | None) -> tuple[QuotaRow, ...]:
    """Rows whose numbers differ (a quota, or a reach the cohort changed), by cluster, team
    and pool."""
    old, new = _amounts(base), _amounts(head)
    rows = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key), new.get(key)
        if before and after and before[1] == after[1]:
            continue
        cluster, team, pool = key
        card_type = (after or before or ("", None))[0]
        rows.append(
            QuotaRow(team, pool, card_type, before and before[1], after and after[1], cluster)
        )
    return tuple(rows)


def _capacity(policy: Policy | None) -> dict[str, tuple[int, Fraction]]:
    if policy is None:
        return {}
    cards: dict[str, int] = {}
    for pool in policy.pools.values():
        cards[pool.card_type] = cards.get(pool.card_type, 0) + sum(n.cards for n in pool.nodes)
    quota: dict[str, Fraction] = {}
    for card_type, amount in _amounts(policy).values():
        quota[card_type] = quota.get(card_type, Fraction(0)) + amount.cards
    return {c: (cards.get(c, 0), quota.get(c, Fraction(0))) for c in {*cards, *quota}}


def capacity_rows(base: Policy | None, head: Policy | None) -> tuple[CapacityRow, ...]:
    old, new = _capacity(base), _capacity(head)
    rows = []
    for card_type in sorted(set(old) | set(new)):
        before = old.get(card_type, (0, Fraction(0)))
        after = new.get(card_type, (0, Fraction(0)))
        if before != after:
            rows.append(CapacityRow(card_type, before[0], after[0], before[1], after[1]))
    return tuple(rows)


def _costs(policy: Policy | None) -> dict[str, tuple[str, float, float | None]]:
    """Team -> (currency, monthly cost of its priced quota, budget)."""
    if policy is None:
        return {}
    fleet_currency = policy.fleet.currency if policy.fleet else "USD"
    costs = {
        t.name: (t.budget_currency or fleet_currency, 0.0, t.budget_monthly)
        for t in policy.teams.values()
    }
    for use in quota_uses(policy):
        if use.card.cost_per_hour is None:
            continue
        currency, total, budget = costs[use.team.name]
        costs[use.team.name] = (currency, total + monthly_cost(use, policy.fleet), budget)
    return costs


def cost_rows(base: Policy | None, head: Policy | None) -> tuple[CostRow, ...]:
    old, new = _costs(base), _costs(head)
    rows = []
    for team in sorted(set(old) | set(new)):
        before, after = old.get(team), new.get(team)
        if before and after and (round(before[1], 2), before[2]) == (round(after[1], 2), after[2]):
            continue
        currency = (after or before or ("USD", 0.0, None))[0]
        rows.append(
            CostRow(
                team,
                currency,
                before[1] if before else None,
                after[1] if after else None,
                before[2] if before else None,
                after[2] if after else None,
            )
        )
    return tuple(rows)


def _added_removed(topic: str, old: set[str], new: set[str]) -> Iterator[PolicyChange]:
    for name in sorted(new - old):
        yield PolicyChange(topic, name, "-", "added")
    for name in sorted(old - new):
        yield PolicyChange(topic, name, "present", "removed", "removal")


def _tier_changes(base: Policy, head: Policy) -> Iterator[PolicyChange]:
    for name in sorted(set(base.tiers) & set(head.tiers)):
        old, new = base.tiers[name], head.tiers[name]
        if (old.value, old.preemptible) != (new.value, new.preemptible):
            demoted = new.value < old.value or (new.preemptible and not old.preemptible)
            yield PolicyChange(
                "tier",
                name,
                f"value {old.value}" + (", preemptible" if old.preemptible else ""),
                f"value {new.value}" + (", preemptible" if new.preemptible else ""),
                "demotion" if demoted else None,
            )


def _best_tier(policy: Policy, team: Team) -> int | None:
    values = [policy.tiers[t].value for t in team.tiers if t in policy.tiers]
    return max(values) if values else None


def _team_changes(base: Policy, head: Policy) -> Iterator[PolicyChange]:
    for name in sorted(set(base.teams) & set(head.teams)):
        old, new = base.teams[name], head.teams[name]
        if old.tiers != new.tiers:
            best_old, best_new = _best_tier(base, old), _best_tier(head, new)
            demoted = best_old is not None and (best_new is None or best_new < best_old)
            yield PolicyChange(
                "team-tiers",
                name,
                ", ".join(old.tiers) or "-",
                ", ".join(new.tiers) or "-",
                "demotion" if demoted else None,
            )
        if old.cohort != new.cohort:
            yield PolicyChange("cohort", f"team {name}", old.cohort or "-", new.cohort or "-")
        if old.lifecycle_stages != new.lifecycle_stages:
            before, after = ", ".join(old.lifecycle_stages), ", ".join(new.lifecycle_stages)
            yield PolicyChange("lifecycle", f"team {name}", before or "-", after or "-")


def _cluster_changes(base: Policy, head: Policy) -> Iterator[PolicyChange]:
    """Clusters added or removed, a cluster's role changed, a pool moved to another cluster."""
    yield from _added_removed("cluster", set(base.clusters), set(head.clusters))
    for name in sorted(set(base.clusters) & set(head.clusters)):
        old, new = base.clusters[name].role, head.clusters[name].role
        if old != new:
            yield PolicyChange("cluster", f"cluster {name}", f"role {old}", f"role {new}")
    for name in sorted(set(base.pools) & set(head.pools)):
        was, now = base.pools[name].cluster, head.pools[name].cluster
        if was != now:
            yield PolicyChange("cluster", f"pool {name}", was or "-", now or "-", "removal")


def _pool_changes(base: Policy, head: Policy) -> Iterator[PolicyChange]:
    for name in sorted(set(base.pools) & set(head.pools)):
        old, new = base.pools[name].expires, head.pools[name].expires
        if old != new:
            sooner = new is not None and (old is None or new < old)
            yield PolicyChange(
                "expiry",
                f"pool {name}",
                old.isoformat() if old else "never",
                new.isoformat() if new else "never",
                "expiry" if sooner else None,
            )
    for name in sorted(set(base.card_types) & set(head.card_types)):
        old_stage, new_stage = base.card_types[name].lifecycle, head.card_types[name].lifecycle
        if old_stage != new_stage:
            yield PolicyChange("lifecycle", f"card type {name}", old_stage, new_stage)


def _cohort_tree(policy: Policy) -> dict[str, str]:
    cohorts = policy.fleet.cohorts if policy.fleet else ()
    return {c.name: c.parent or "-" for c in cohorts}


def policy_changes(base: Policy | None, head: Policy | None) -> tuple[PolicyChange, ...]:
    if base is None or head is None:
        return ()
    found = [
        *_added_removed("team", set(base.teams), set(head.teams)),
        *_added_removed("pool", set(base.pools), set(head.pools)),
        *_added_removed("card-type", set(base.card_types), set(head.card_types)),
        *_added_removed("tier", set(base.tiers), set(head.tiers)),
        *_tier_changes(base, head),
        *_team_changes(base, head),
        *_pool_changes(base, head),
        *_cluster_changes(base, head),
    ]
    old, new = _cohort_tree(base), _cohort_tree(head)
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            before = f"parent {old[name]}" if name in old else "-"
            after = f"parent {new[name]}" if name in new else "removed"
            found.append(PolicyChange("cohort", f"cohort {name}", before, after))
    return tuple(found)


def impact(base: Policy | None, head: Policy | None) -> Impact:
    return Impact(
        quota_rows(base, head),
        capacity_rows(base, head),
        cost_rows(base, head),
        policy_changes(base, head),
    )
