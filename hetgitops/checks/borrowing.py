"""Check stage, borrowing family: cohorts, borrowing/lending limits and preemption (Kueue rules)."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy, Quota
from hetgitops.plan import capacity

NEVER = "Never"


@rule("borrowing-without-cohort", Severity.ERROR)
def borrowing_without_cohort(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """borrowingLimit and lendingLimit need the team to be in a cohort (Kueue CEL rule).

    Fails: a team without `cohort` and a quota `{pool: a, cards: 8, borrowingLimit: 4}`.
    Passes: the same team with `cohort: training`.
    Fix: put the team in a cohort (`spec.cohort`, one of Fleet.spec.cohorts) so there is a queue to
    borrow from and lend to, or delete `borrowingLimit` and `lendingLimit` from its quotas: a team
    in no cohort uses exactly its nominal quota.
    """
    for team in policy.teams.values():
        if team.cohort is not None:
            continue
        for quota in team.quotas:
            for field, value in (
                ("borrowingLimit", quota.borrowing_limit),
                ("lendingLimit", quota.lending_limit),
                ("migBorrowingLimits", quota.mig_borrowing_limits or None),
                ("migLendingLimits", quota.mig_lending_limits or None),
            ):
                if value is not None:
                    yield error_at(
                        "borrowing-without-cohort",
                        f"{field} is set but team '{team.name}' is in no cohort, so it can "
                        "neither borrow nor lend",
                        quota.origin,
                        field,
                        key=True,
                        hint="set spec.cohort on the team, or remove the limit",
                    )


def _own_units(policy: Policy, quota: Quota) -> int | None:
    """The nominal a quota's limits are counted against: its cards, else (MIG-only) the
    smallest MIG count, since the limit applies to each MIG resource it claims."""
    if quota.cards is not None:
        return quota.cards
    if quota.normalized is None and quota.mig:
        return min(quota.mig.values())
    pool = policy.pools.get(quota.pool)
    card = policy.card_type_of(pool) if pool else None
    return capacity.quota_cards(quota, card) if card is not None else None


def _unit(quota: Quota) -> str:
    mig_only = quota.cards is None and quota.normalized is None and quota.mig
    return "instance(s) of its smallest MIG profile count" if mig_only else "whole card(s)"


@rule("lending-exceeds-nominal", Severity.ERROR)
def lending_exceeds_nominal(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team lends at most its nominal quota (Kueue webhook: lendingLimit <= nominalQuota).

    Fails: `{pool: a, cards: 8, lendingLimit: 12}`.
    Passes: `{pool: a, cards: 8, lendingLimit: 4}`.
    Fix: lower `lendingLimit` to at most the entry's own quota (the hint gives the number), or raise
    `cards` if the team is meant to hold more.
    """
    for team in policy.teams.values():
        for quota in team.quotas:
            for profile, lent in quota.mig_lending_limits.items():
                held = quota.mig.get(profile)
                if held is not None and lent > held:
                    yield error_at(
                        "lending-exceeds-nominal",
                        f"migLendingLimits {profile} {lent} exceeds the nominal quota of {held} "
                        f"{profile} instance(s) in pool '{quota.pool}'",
                        quota.origin,
                        "migLendingLimits",
                        profile,
                        hint=f"lend at most {held}",
                    )
            if quota.lending_limit is None:
                continue
            nominal = _own_units(policy, quota)
            if nominal is not None and quota.lending_limit > nominal:
                yield error_at(
                    "lending-exceeds-nominal",
                    f"lendingLimit {quota.lending_limit} exceeds the nominal quota of {nominal} "
                    f"{_unit(quota)} in pool '{quota.pool}'",
                    quota.origin,
                    "lendingLimit",
                    hint=f"lend at most {nominal}",
                )


@rule("borrowing-isolated-pool", Severity.ERROR)
def borrowing_isolated_pool(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """An isolated pool neither lends nor borrows, so it takes no non-zero limits.

    Fails: `isolated: true` on the pool and a quota `{pool: ascend, cards: 8, borrowingLimit: 4}`
    (or `lending: {maxPercent: 50}` on the pool).
    Passes: `{pool: ascend, cards: 8}`.
    Fix: delete `borrowingLimit` / `lendingLimit` from the team's quota entry in that pool and
    `spec.lending` from the pool (the render already writes 0 for both there). If teams are meant to
    share the pool after all, set `isolated: false` on the pool instead.
    """
    for lender in policy.pools.values():
        if lender.isolated and lender.lend_max_percent:
            yield error_at(
                "borrowing-isolated-pool",
                f"pool '{lender.name}' is isolated but lends {lender.lend_max_percent}% of its "
                "quota",
                lender.origin,
                "spec",
                "lending",
                "maxPercent",
                hint="remove spec.lending or set isolated: false",
            )
    for team in policy.teams.values():
        for quota in team.quotas:
            pool = policy.pools.get(quota.pool)
            if pool is None or not pool.isolated:
                continue
            for field, verb, value in (
                ("borrowingLimit", "borrow", quota.borrowing_limit),
                ("lendingLimit", "lend", quota.lending_limit),
                ("migBorrowingLimits", "borrow", any(quota.mig_borrowing_limits.values())),
                ("migLendingLimits", "lend", any(quota.mig_lending_limits.values())),
            ):
                if value:
                    yield error_at(
                        "borrowing-isolated-pool",
                        f"pool '{pool.name}' is isolated: team '{team.name}' cannot {verb} "
                        "cards there",
                        quota.origin,
                        field,
                        hint=f"remove {field} (the generated queue uses 0 for isolated pools)",
                    )


@rule("preemption-invalid", Severity.ERROR)
def preemption_invalid(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """borrowWithinCohort needs a cohort and reclaimWithinCohort other than Never (Kueue CEL).

    Fails: `preemption: {borrowWithinCohort: {policy: LowerPriority}}` (reclaim defaults to Never).
    Passes: `preemption: {reclaimWithinCohort: Any, borrowWithinCohort: {policy: LowerPriority}}`.
    Fix: set `preemption.reclaimWithinCohort` to `LowerPriority` or `Any` on a team in a cohort, or
    remove `borrowWithinCohort`; a team in no cohort needs `spec.cohort` first.
    """
    for team in policy.teams.values():
        wanted = team.preemption
        if wanted.borrow_within_cohort in (None, NEVER):
            continue
        where = ("spec", "preemption", "borrowWithinCohort", "policy")
        if team.cohort is None:
            yield error_at(
                "preemption-invalid",
                f"borrowWithinCohort is {wanted.borrow_within_cohort} but team '{team.name}' "
                "is in no cohort",
                team.origin,
                *where,
                hint="set spec.cohort, or remove borrowWithinCohort",
            )
        elif wanted.reclaim_within_cohort in (None, NEVER):
            yield error_at(
                "preemption-invalid",
                "borrowWithinCohort needs reclaimWithinCohort other than Never",
                team.origin,
                *where,
                hint="set preemption.reclaimWithinCohort to LowerPriority or Any",
            )
