"""`hetgitops capacity`: who really gets what, for the whole policy.

Per team x pool x accelerator resource the `plan.entitlement` rows (nominal, borrowable,
lendable, guaranteed, reach in the resource's own units: whole GPUs, each MIG profile and
time-sliced replicas apart; normalized units beside them); per team the monthly cost of its
nominal quota against its budget (`checks.budget.monthly_cost`, what `budget-exceeded`
judges); per card type the physical cards against the card-equivalents teams hold nominally,
with each team's share."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from fractions import Fraction

from hetgitops.checks._common import quota_uses
from hetgitops.checks.budget import monthly_cost
from hetgitops.model.policy import Policy
from hetgitops.plan import grants
from hetgitops.plan.entitlement import Entitlement, entitlements


@dataclass(frozen=True)
class TeamCost:
    team: str
    currency: str
    monthly: float  # nominal quota's cost a month (priced cards only)
    budget: float | None
    unpriced: tuple[str, ...]  # card types without a cost


@dataclass(frozen=True)
class CardCommitment:
    card_type: str
    capacity: int  # physical cards in the fleet
    committed: Fraction  # Σ nominal card-equivalents over teams
    by_team: tuple[tuple[str, Fraction], ...]


@dataclass(frozen=True)
class CapacityReport:
    rows: tuple[Entitlement, ...]
    costs: tuple[TeamCost, ...]
    cards: tuple[CardCommitment, ...]
    cohorts: tuple[tuple[str, str | None, tuple[str, ...]], ...]  # name, parent, member teams
    # Time-boxed quota on the report's day: the rows above count the grants in force.
    grants: tuple[grants.GrantView, ...] = ()
    today: dt.date | None = None


def _costs(policy: Policy) -> tuple[TeamCost, ...]:
    fleet_currency = policy.fleet.currency if policy.fleet else "USD"
    totals = {name: 0.0 for name in policy.teams}
    unpriced: dict[str, set[str]] = {name: set() for name in policy.teams}
    for use in quota_uses(policy):
        if use.card.cost_per_hour is None:
            unpriced[use.team.name].add(use.card.name)
            continue
        totals[use.team.name] += monthly_cost(use, policy.fleet)
    return tuple(
        TeamCost(
            name,
            team.budget_currency or fleet_currency,
            round(totals[name], 2),
            team.budget_monthly,
            tuple(sorted(unpriced[name])),
        )
        for name, team in sorted(policy.teams.items())
    )


def _cards(policy: Policy, rows: list[Entitlement]) -> tuple[CardCommitment, ...]:
    physical: dict[str, int] = {}
    for pool in policy.pools.values():
        physical[pool.card_type] = physical.get(pool.card_type, 0) + sum(
            n.cards for n in pool.nodes
        )
    shares: dict[str, dict[str, Fraction]] = {}
    for row in rows:
        team_shares = shares.setdefault(row.card_type, {})
        team_shares[row.team] = team_shares.get(row.team, Fraction(0)) + row.nominal * row.weight
    return tuple(
        CardCommitment(
            card,
            physical.get(card, 0),
            sum(shares.get(card, {}).values(), start=Fraction(0)),
            tuple(sorted((t, s) for t, s in shares.get(card, {}).items() if s)),
        )
        for card in sorted({*physical, *shares})
    )


def _cohorts(policy: Policy) -> tuple[tuple[str, str | None, tuple[str, ...]], ...]:
    if policy.fleet is None:
        return ()
    members: dict[str, list[str]] = {}
    for team in policy.teams.values():
        if team.cohort is not None:
            members.setdefault(team.cohort, []).append(team.name)
    return tuple(
        (c.name, c.parent, tuple(sorted(members.get(c.name, ())))) for c in policy.fleet.cohorts
    )


def capacity_report(policy: Policy, today: dt.date | None = None) -> CapacityReport:
    """The report of `policy` on `today` (grants in force counted; None: as written)."""
    if today is not None:
        policy = grants.at(policy, today)
    rows = entitlements(policy)
    return CapacityReport(
        tuple(rows),
        _costs(policy),
        _cards(policy, rows),
        _cohorts(policy),
        () if today is None else grants.views(policy, today),
        today,
    )
