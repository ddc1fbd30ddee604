"""Check stage, lifecycle family: transition-pool expiry and card lifecycle stages."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from hetgitops.checks._common import (
    error_at,
    note,
    pools_with_cards,
    quota_uses,
    warning_at,
)
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity, listing
from hetgitops.model.policy import Policy, Pool

RETIRED = "retired"


def _holders(policy: Policy, pool: Pool) -> str:
    """Teams that still have quota in the pool, for the message."""
    teams = [t.name for t in policy.teams.values() if any(q.pool == pool.name for q in t.quotas)]
    return f"; teams with quota there: {listing(teams)}" if teams else ""


def _holding(policy: Policy, pool: Pool) -> list[Related]:
    """The expiry date and a note at every quota entry in the pool: a pull request that adds
    quota to an expiring pool gets the finding on its own line (`validate --changed-since`)."""
    return [
        note(f"pool '{pool.name}' expires on {pool.expires}", pool.origin, "spec", "expires"),
        *(
            note(f"team '{team.name}' has quota here", quota.origin, "pool")
            for team in policy.teams.values()
            for quota in team.quotas
            if quota.pool == pool.name
        ),
    ]


@rule("pool-expired", Severity.ERROR)
def pool_expired(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A transition pool is removed once its expiry date has passed (`--now` sets today).

    Fails: `expires: 2026-11-30` validated with `--now 2026-12-01`.
    Passes: `expires: 2027-03-31`.
    Fix: move the teams' quota off the pool (the notes name them), then delete the pool; or, if the
    hardware stays longer, push `expires` to the new date.
    """
    for pool in policy.pools.values():
        if pool.expires is not None and pool.expires < ctx.now:
            days = (ctx.now - pool.expires).days
            yield error_at(
                "pool-expired",
                f"pool '{pool.name}' expired on {pool.expires} ({days} day(s) ago)"
                + _holders(policy, pool),
                pool.origin,
                "spec",
                "expires",
                hint="move the teams' quota elsewhere and delete the pool, or extend expires",
                related=_holding(policy, pool),
            )


@rule("pool-expiring", Severity.WARNING)
def pool_expiring(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Warn about a transition pool that expires within Fleet.spec.expiryWarningDays.

    Fails (warns): `expires: 2026-12-15` with `--now 2026-12-01` and the default 30 days.
    Passes: `expires: 2027-03-31`.
    Fix: plan the migration: give the teams on the pool (the notes name them) quota elsewhere before
    `expires`, or push `expires` out if the hardware stays longer.
    """
    window = policy.fleet.expiry_warning_days if policy.fleet else 30
    horizon = ctx.now + dt.timedelta(days=window)
    for pool in policy.pools.values():
        if pool.expires is not None and ctx.now <= pool.expires <= horizon:
            days = (pool.expires - ctx.now).days
            yield warning_at(
                "pool-expiring",
                f"pool '{pool.name}' expires on {pool.expires}, in {days} day(s)"
                + _holders(policy, pool),
                pool.origin,
                "spec",
                "expires",
                hint="plan the migration of its workloads now",
                related=_holding(policy, pool),
            )


@rule("lifecycle-not-allowed", Severity.ERROR)
def lifecycle_not_allowed(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team holds quota only on cards whose lifecycle stage it may use.

    Pilot and evaluation cards are for volunteer teams (team `lifecycleStages`, default
    Fleet.spec.defaults.lifecycleStages).
    Fails: a team with the default stages `[production, deprecated]` and quota on a pilot card.
    Passes: the team lists `lifecycleStages: [production, pilot]`.
    Fix: if the team volunteered for the pilot, add the card's stage to its `spec.lifecycleStages`;
    otherwise remove the quota entry and give the team quota on a production card.
    """
    for use in quota_uses(policy):
        stage = use.card.lifecycle
        if stage == RETIRED or stage in use.team.lifecycle_stages:
            continue  # retired cards are card-retired-in-use's finding
        yield error_at(
            "lifecycle-not-allowed",
            f"team '{use.team.name}' may not use {stage} card type '{use.card.name}' "
            f"(allowed: {', '.join(use.team.lifecycle_stages) or 'none'})",
            use.quota.origin,
            "pool",
            hint=f"add {stage} to the team's spec.lifecycleStages, or drop this quota",
        )


@rule("card-retired-in-use", Severity.ERROR)
def card_retired_in_use(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """No pool is built from a retired card type.

    Fails: `lifecycle: retired` on a card type that a pool's `cardType` names.
    Passes: `lifecycle: deprecated` (still schedulable while it is phased out).
    Fix: point the pools of that card type at the card type now in their nodes (`cardType`), or
    delete the pools together with the teams' quota entries in them. While the cards are still
    racked and in use, set the card type's `lifecycle` back to `deprecated` and retire it when its
    last pool is gone.
    """
    for pool, card in pools_with_cards(policy):
        if card.lifecycle == RETIRED:
            yield error_at(
                "card-retired-in-use",
                f"pool '{pool.name}' uses retired card type '{card.name}'",
                pool.origin,
                "spec",
                "cardType",
                hint="remove the pool, or move the card type back to deprecated",
            )
