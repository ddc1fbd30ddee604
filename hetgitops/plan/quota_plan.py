"""Shared by checks, routing and compilers: what each team's queue holds per pool and resource.

The Kueue ClusterQueue, the Volcano queues and the core ResourceQuota are views of one plan;
computing it once keeps the namespace cap equal to what the queue can really admit.
"""

from __future__ import annotations

import copy
import functools
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from hetgitops.diagnostics import Span
from hetgitops.model import quantities
from hetgitops.model.policy import (
    DEFAULT_CPU_PER_CARD,
    DEFAULT_MEMORY_PER_CARD,
    Policy,
    Pool,
    Quota,
    Team,
    derived,
)
from hetgitops.plan import capacity
from hetgitops.plan.quota_limits import (
    as_covered,
    borrowing_limit,
    foreign_limits,
    lending_limit,
    limited_resources,
    per_profile,
)

# Host quotas round up to whole CPUs and whole GiB, so Kueue and Volcano get tidy numbers.
CPU_STEP = "1"
MEMORY_STEP = "1Gi"
# The resources every ClusterQueue covers beside its accelerators (`kueue_queues`).
HOST_RESOURCES = ("cpu", "memory")


@dataclass(frozen=True)
class FlavorPlan:
    """One team's quota in one pool, per accelerator resource the pool provides.

    `borrowing` / `lending` hold None where Kueue's limit stays unset (unbounded); both are
    empty when the team has no cohort, because Kueue forbids limits without one. `weights`
    is the card-equivalent of one unit of each resource (`capacity.unit_weight`)."""

    pool: Pool
    nominal: Mapping[str, int]
    borrowing: Mapping[str, int | None]
    lending: Mapping[str, int | None]
    weights: Mapping[str, Fraction]
    origin: Span
    # The borrowingLimit / lendingLimit of a covered resource the plan does not list (one
    # another pool of the team offers): 0 on an isolated pool and under `limitsCoverAll`.
    foreign: tuple[int | None, int | None] = (None, None)

    def cards(self, counts: Mapping[str, int | None]) -> Fraction | None:
        """Physical cards `counts` amount to; None (unbounded) if any count is, or none given."""
        values = list(counts.values())
        if not values or any(v is None for v in values):
            return None
        # Whole cards add as ints; only MIG instances and replicas (weights < 1) need a
        # Fraction (diff asks this for every quota of both sides).
        whole, parts = 0, None
        for resource, count in counts.items():
            weight = self.weights.get(resource)
            if weight is None or weight.numerator == weight.denominator:
                whole += count or 0
            else:
                part = (count or 0) * weight
                parts = part if parts is None else parts + part
        return Fraction(whole) if parts is None else parts + whole


def quota_entry(team: Team, pool: str) -> Quota | None:
    """The team's quota entry for `pool`: the first (a pool listed twice counts once)."""
    return next((q for q in team.quotas if q.pool == pool), None)


def per_card(policy: Policy, team: Team, pool: str | None = None) -> tuple[str, str]:
    """CPU and memory that go with one accelerator unit: the team's quota entry for `pool`
    (`quotas[].cpuPerCard`), then the team, then the Fleet's defaults."""
    fleet = policy.fleet
    entry = quota_entry(team, pool) if pool is not None else None
    cpu = (
        (entry.cpu_per_card if entry else None)
        or team.cpu_per_card
        or (fleet.cpu_per_card if fleet else DEFAULT_CPU_PER_CARD)
    )
    memory = (
        (entry.memory_per_card if entry else None)
        or team.memory_per_card
        or (fleet.memory_per_card if fleet else DEFAULT_MEMORY_PER_CARD)
    )
    return cpu, memory


def host_quota(
    policy: Policy, team: Team, cards: Fraction, pool: str | None = None
) -> tuple[str, str]:
    """CPU and memory for `cards` card-equivalents in `pool` (None: at the team's rate),
    rounded up to a whole CPU and GiB."""
    cpu, memory = per_card(policy, team, pool)
    return (
        quantities.times_rounded_up(cpu, cards, step=CPU_STEP),
        quantities.times_rounded_up(memory, cards, step=MEMORY_STEP),
    )


@dataclass(frozen=True)
class HostEntry:
    """One flavor's cpu or memory as the ClusterQueue writes it (canonical quantities; None:
    the limit stays unset)."""

    nominal: str
    borrowing: str | None
    lending: str | None


def host_entries(policy: Policy, team: Team, plan: FlavorPlan) -> dict[str, HostEntry]:
    """cpu and memory of one flavor: the team's per-card amounts times the card-equivalents of
    its accelerator quota, borrowing and lending limits (a MIG instance or replica is a
    fraction of a card). The Kueue compiler writes these and `Reach` counts them, so the
    prediction of what a queue admits reads the very numbers Kueue gets; computed once per
    plan (both ask for every team's plans, and the Fraction and Decimal arithmetic is not
    cheap)."""
    kept, entries = derived(
        policy,
        ("host_entries", team.name, plan.pool.name),
        lambda: (plan, _host_entries(policy, team, plan)),
    )
    return entries if kept is plan else _host_entries(policy, team, plan)


def _host_entries(policy: Policy, team: Team, plan: FlavorPlan) -> dict[str, HostEntry]:
    pool = plan.pool.name
    nominal = host_quota(policy, team, plan.cards(plan.nominal) or Fraction(0), pool)
    borrow, lend = plan.cards(plan.borrowing), plan.cards(plan.lending)
    entry = quota_entry(team, pool)
    if entry is not None and not entry.host_limits and not plan.pool.isolated:
        # `hostLimits: false`: the limits bind the accelerators only (an isolated pool still
        # borrows and lends no cpu or memory).
        borrow = lend = None
    limited = team.cohort is not None
    borrowing = host_quota(policy, team, borrow, pool) if limited and borrow is not None else None
    lending = host_quota(policy, team, lend, pool) if limited and lend is not None else None
    return {
        name: HostEntry(
            nominal[i],
            None if borrowing is None else borrowing[i],
            None if lending is None else lending[i],
        )
        for i, name in enumerate(HOST_RESOURCES)
    }


@functools.lru_cache(maxsize=1 << 14, typed=True)
def kueue_amount(resource: str, quantity: str | int) -> int:
    """The integer Kueue compares quotas and requests in: milli-units for cpu, whole units
    for everything else, rounded up (Kueue v0.19.2 pkg/resources/requests.go:146-151,
    `ResourceValue`; `Quantity.MilliValue` / `Value` round up)."""
    value = Fraction(quantities.value_of(quantity))
    return math.ceil(value * 1000 if resource == "cpu" else value)


def flavor_plan(policy: Policy, team: Team, quota: Quota) -> FlavorPlan | None:
    """The plan for one quota entry, or None when its pool or card type does not resolve."""
    pool = policy.pools.get(quota.pool)
    card = policy.card_type_of(pool) if pool else None
    if pool is None or card is None:
        return None
    claimed = capacity.quota_resources(quota, pool, card, policy.fleet)
    # Once per pool, not per quota entry: it counts the pool's nodes by size.
    offered = derived(
        policy,
        ("pool_resources", pool.name),
        lambda: capacity.pool_resources(pool, card, policy.fleet),
    )
    # Every resource the pool offers is listed (0 when unclaimed): Kueue lets a queue borrow
    # only what it lists itself.
    own = {r: claimed.get(r, 0) for r in sorted({*offered, *claimed})}
    nominal = own
    if team.covered_resources is not None:
        nominal = as_covered(team.covered_resources, own)
    # Limits and weights for the pool's own resources; a listed resource the pool lacks has
    # none (nothing to lend; `limitsCoverAll` bounds it at 0).
    mine = [r for r in own if r in nominal]
    limited = limited_resources(quota, pool, card, policy.fleet)
    borrowing: dict[str, int | None] = {}
    lending: dict[str, int | None] = {}
    if team.cohort is not None:
        for resource in mine:
            bound = resource in limited
            borrowing[resource] = borrowing_limit(quota, pool, limited=bound)
            lending[resource] = lending_limit(quota, pool, limited=bound, nominal=own[resource])
        per_profile(quota, pool, borrowing, lending)
    foreign = foreign_limits(quota, pool) if team.cohort is not None else None
    if foreign is not None and not pool.isolated:
        for limits, limit in zip((borrowing, lending), foreign, strict=True):
            limits.update(
                {r: limit for r, n in nominal.items() if limit == 0 == n and limits.get(r) is None}
            )
    weights = {r: capacity.unit_weight(pool, card, r, policy.fleet) for r in mine}
    return FlavorPlan(
        pool, nominal, borrowing, lending, weights, quota.origin.span, foreign or (None, None)
    )


def covered_accelerators(team: Team, plans: list[FlavorPlan]) -> list[str]:
    """The accelerator resources of the team's ClusterQueue after cpu and memory, in
    `coveredResources` order: the team's list, then what its plans add to it; by default
    every resource of its plans, sorted."""
    if team.covered_resources is None:
        return accelerator_resources(plans)
    extra = set(accelerator_resources(plans)) - set(team.covered_resources)
    return [*team.covered_resources, *sorted(extra)]


def team_plan(policy: Policy, team: Team) -> list[FlavorPlan]:
    """The team's flavors in quota (= preference) order; a pool listed twice counts once."""
    return derived(policy, ("team_plan", team.name), lambda: _team_plan(policy, team))


def _team_plan(policy: Policy, team: Team) -> list[FlavorPlan]:
    plans: list[FlavorPlan] = []
    seen: set[str] = set()
    for quota in team.quotas:
        plan = flavor_plan(policy, team, quota)
        if plan is not None and plan.pool.name not in seen:
            seen.add(plan.pool.name)
            plans.append(plan)
    return plans


def accelerator_resources(plans: list[FlavorPlan]) -> list[str]:
    return sorted({r for plan in plans for r in plan.nominal})


def cohort_root(policy: Policy, cohort: str) -> str:
    """The root of a cohort's tree; borrowing reaches every queue under it."""
    return _cohort_roots(policy).get(cohort, cohort)


def _cohort_roots(policy: Policy) -> dict[str, str]:
    """Every declared cohort's root, computed once per policy (rules ask ~10^5 times)."""
    return derived(policy, "cohort_roots", lambda: _roots(policy))


def _roots(policy: Policy) -> dict[str, str]:
    parents = {c.name: c.parent for c in policy.fleet.cohorts} if policy.fleet else {}
    roots = {}
    for cohort in parents:
        seen, root = {cohort}, cohort
        while (parent := parents.get(root)) and parent not in seen:
            seen.add(parent)
            root = parent
        roots[cohort] = root
    return roots


# (nominal, borrowingLimit, lendingLimit) of one resource in one flavor, in Kueue's integers.
Limits = tuple[int, int | None, int | None]


def _limits(policy: Policy, team: Team, plan: FlavorPlan) -> dict[str, Limits]:
    """Every resource the team's ClusterQueue lists for the plan's flavor: the accelerator
    units and the cpu/memory that go with them (`host_entries`)."""
    found: dict[str, Limits] = {
        r: (n, plan.borrowing.get(r), plan.lending.get(r)) for r, n in plan.nominal.items()
    }
    for name, entry in host_entries(policy, team, plan).items():
        found[name] = (
            kueue_amount(name, entry.nominal),
            None if entry.borrowing is None else kueue_amount(name, entry.borrowing),
            None if entry.lending is None else kueue_amount(name, entry.lending),
        )
    return found


class Reach:
    """The most of each (pool, resource) a team's queue can ever hold: its nominal quota plus
    what it may borrow, bounded by what the rest of its cohort tree lends.

    Kueue's `potentialAvailable` (v0.19.2 pkg/cache/scheduler/resource_node.go:124-141): a
    queue's own quota plus its cohort's, capped by subtree quota + borrowingLimit; a member
    contributes to the cohort what its lendingLimit lets go (`localQuota`, :64-71). Asked for
    accelerator units and for cpu (milli-units) and memory (bytes): each queue lends the
    cpu/memory of its own per-card rates, so a team with richer rates borrows less host
    quota than its cards would carry at its own rate."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.plans = {name: team_plan(policy, team) for name, team in policy.teams.items()}
        # (team, pool) -> the team's plan there: `most` is asked per team x route.
        self.plan_in: dict[tuple[str, str], FlavorPlan] = {}
        self.limits: dict[tuple[str, str], dict[str, Limits]] = {}
        for name, plans in self.plans.items():
            for plan in plans:
                self.plan_in.setdefault((name, plan.pool.name), plan)
                self.limits[name, plan.pool.name] = _limits(policy, policy.teams[name], plan)
        self._most: dict[tuple[str, str | None, str, str], int | None] = {}
        self.lent = self._lent()

    def _lent(self) -> Counter[tuple[str, str, str]]:
        """(cohort root, pool, resource) -> what the queues under the root lend of it."""
        lent: Counter[tuple[str, str, str]] = Counter()
        for name, team in self.policy.teams.items():
            if team.cohort is None:
                continue
            root = cohort_root(self.policy, team.cohort)
            for plan in self.plans[name]:
                for resource, limits in self.limits[name, plan.pool.name].items():
                    lent[root, plan.pool.name, resource] += _lendable(limits)
        return lent

    def with_limits(self, limits: Mapping[tuple[str, str], dict[str, Limits]]) -> Reach:
        """This Reach with some queues' limits replaced (explain's flavor transition): what the
        cohorts lend recomputed, and nothing `most` remembered carried over."""
        cut = copy.copy(self)
        cut.limits = {**self.limits, **limits}
        cut._most = {}
        cut.lent = cut._lent()
        return cut

    def most(self, team: Team, pool: Pool, resource: str) -> int | None:
        """None when the team has no quota entry for the pool (its queue cannot use it).
        Accelerators count in units, cpu in milli-units, memory in bytes (`kueue_amount`)."""
        # Asked tens of thousands of times at a large fleet (per profile x team x route, and
        # per quota by explain and diff), mostly for the same few keys; the plan never changes.
        key = (team.name, team.cohort, pool.name, resource)
        if key in self._most:
            return self._most[key]
        found = self._most[key] = self._compute_most(team, pool, resource)
        return found

    def _compute_most(self, team: Team, pool: Pool, resource: str) -> int | None:
        limits = self.limits.get((team.name, pool.name))
        if limits is None:
            return None
        own, limit, _ = entry = limits.get(resource, (0, None, None))
        if team.cohort is None:
            return own
        root = cohort_root(self.policy, team.cohort)
        others = self.lent[root, pool.name, resource] - _lendable(entry)
        borrow = others if limit is None else min(limit, others)
        return own + max(borrow, 0)


def _lendable(limits: Limits) -> int:
    nominal, _, lending = limits
    return nominal if lending is None else min(lending, nominal)


def lendable(plan: FlavorPlan, resource: str) -> int:
    """What the queue lends of `resource` at most: its lending limit, else all its nominal."""
    limit = plan.lending.get(resource)
    nominal = plan.nominal.get(resource, 0)
    return nominal if limit is None else min(limit, nominal)


def reach(policy: Policy) -> Reach:
    """The policy's Reach, built once: checks, job routing and ResourceQuotas share it."""
    return derived(policy, "reach", lambda: Reach(policy))


def admissible(policy: Policy, team: Team) -> dict[str, int]:
    """Per accelerator resource, the most the team's queue can ever admit at once: what
    `Reach.most` allows in each of its pools, summed."""
    total: Counter[str] = Counter()
    for plan in team_plan(policy, team):
        for resource in plan.nominal:
            total[resource] += reach(policy).most(team, plan.pool, resource) or 0
    return dict(sorted(total.items()))
