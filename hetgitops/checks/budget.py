"""Check stage, budget family: what a team's quota costs a month against its budget."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import (
    QuotaUse,
    amount_path,
    error_at,
    known_part,
    note,
    quota_uses,
    unknown_mig_profiles,
    warning_at,
)
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity, listing
from hetgitops.model.policy import Fleet, Policy
from hetgitops.plan import capacity


def _currency(policy: Policy, explicit: str | None) -> str:
    return explicit or (policy.fleet.currency if policy.fleet else "USD")


def _priced(policy: Policy, use: QuotaUse) -> bool:
    """Whether the quota has a cost in the team's budget currency (else another rule speaks)."""
    card_currency = _currency(policy, use.card.currency)
    return use.card.cost_per_hour is not None and card_currency == _currency(
        policy, use.team.budget_currency
    )


def monthly_cost(use: QuotaUse, fleet: Fleet | None) -> float:
    """Nominal quota x cost per card-hour x hours a month, in physical cards by the same
    `capacity.unit_weight` the cpu/memory quotas use: a time-slice replica is 1/replicas of a
    card, a MIG instance its compute share of a GPU."""
    claimed = capacity.quota_resources(use.quota, use.pool, use.card, fleet)
    cards = capacity.card_equivalents(claimed, pool=use.pool, card=use.card, fleet=fleet)
    return float(cards) * (use.card.cost_per_hour or 0.0) * capacity.HOURS_PER_MONTH


def _budgeted(policy: Policy) -> dict[str, list[QuotaUse]]:
    uses: dict[str, list[QuotaUse]] = {}
    for use in quota_uses(policy):
        if use.team.budget_monthly is not None:
            uses.setdefault(use.team.name, []).append(use)
    return uses


@rule("budget-exceeded", Severity.ERROR)
def budget_exceeded(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team's nominal quota costs no more per month than its budget.

    Cost = cards x cost.perCardHour x 730 hours, summed over the team's pools; a MIG instance
    counts as its share of a card (a 3g instance of a 7-slice GPU as 3/7). A MIG profile the
    card does not have (mig-profile-unknown) has no known cost: it is left out, and the rule
    reports only a total that is over budget without it.
    Reported at the budget, with a note at every priced quota entry; when the changed lines
    are known (`validate --changed-since`), at the changed quota entry instead.
    Fails: `budget: {monthly: 10000}` with 8 cards at 3.10 an hour (18,104 a month).
    Passes: `budget: {monthly: 20000}` with the same quota.
    Fix: lower the team's nominal quota (`cards`, `normalized` or `mig` counts) in its most
    expensive pools until the monthly total in the finding fits `spec.budget.monthly`, move quota to
    a cheaper card type, or raise the budget if the spend was agreed. The budget counts nominal
    quota only: a `borrowingLimit` gives a team peak capacity without adding to it.
    """
    for name, uses in _budgeted(policy).items():
        team = uses[0].team
        priced = [
            (use, monthly_cost(use._replace(quota=known_part(use)), policy.fleet))
            for use in uses
            if _priced(policy, use)
        ]
        total = sum(cost for _, cost in priced)
        budget = team.budget_monthly or 0.0
        if total <= budget + 0.005:
            continue
        currency = _currency(policy, team.budget_currency)
        parts = listing([f"{u.pool.name} {cost:,.2f}" for u, cost in priced if cost])
        partial = any(unknown_mig_profiles(use) for use, _ in priced)
        yield error_at(
            "budget-exceeded",
            f"team '{name}' quota costs {'at least ' if partial else ''}{total:,.2f} {currency}"
            f" a month ({parts}) but its budget is {budget:,.2f}",
            team.origin,
            "spec",
            "budget",
            "monthly",
            hint=f"cut quota by {total - budget:,.2f} a month or raise the budget",
            related=[
                note(f"the budget: {budget:,.2f} {currency} a month", team.origin, *BUDGET),
                *(
                    note(
                        f"pool '{u.pool.name}' costs {cost:,.2f} a month",
                        u.quota.origin,
                        *amount_path(u.quota),
                    )
                    for u, cost in priced
                    if cost
                ),
            ],
        )


BUDGET = ("spec", "budget", "monthly")


@rule("cost-missing", Severity.WARNING)
def cost_missing(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team with a budget only uses card types that have a cost.

    Fails: a team with `budget: {monthly: 5000}` and quota in a pool of a card without `cost`.
    Passes: the card type has `cost: {perCardHour: 1.1}`.
    Fix: add `spec.cost: {perCardHour: PRICE}` to the card type (what one card costs an hour, owned
    or rented), or remove the team's budget if its spend is not tracked; until then the budget check
    leaves that pool's quota out of the team's total.
    """
    for uses in _budgeted(policy).values():
        for use in uses:
            if use.card.cost_per_hour is None:
                yield warning_at(
                    "cost-missing",
                    f"card type '{use.card.name}' has no cost, so team '{use.team.name}' "
                    "budget cannot count this quota",
                    use.quota.origin,
                    "pool",
                    hint=f"add spec.cost.perCardHour to CardType '{use.card.name}'",
                )


@rule("cost-currency-mismatch", Severity.ERROR)
def cost_currency_mismatch(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Card costs and team budgets are in the same currency (nothing converts them).

    Fails: a card with `cost: {perCardHour: 2, currency: EUR}` in a team with
    `budget: {monthly: 5000, currency: USD}`.
    Passes: both in USD (or both left to the Fleet's currency).
    Fix: write the card's `cost.currency` and the team's `budget.currency` in one currency, or leave
    both out to use Fleet.spec.currency; convert the card's perCardHour yourself, hetgitops does not
    convert between currencies.
    """
    for uses in _budgeted(policy).values():
        for use in uses:
            card, team = use.card, use.team
            if card.cost_per_hour is None or _priced(policy, use):
                continue
            yield error_at(
                "cost-currency-mismatch",
                f"card type '{card.name}' costs in {_currency(policy, card.currency)} but team "
                f"'{team.name}' budgets in {_currency(policy, team.budget_currency)}",
                use.quota.origin,
                "pool",
                hint="state both in one currency; hetgitops does not convert",
            )
