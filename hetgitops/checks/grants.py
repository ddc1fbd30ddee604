"""Check stage, grants family: time-boxed quota (`quotas[].grants`) ending, ended, or unusable.
The dates are read through `plan.grants`, the one place that says when a grant is in force."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, note, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Grant, Policy, Quota, Team
from hetgitops.plan import grants


def _granted(policy: Policy) -> Iterator[tuple[Team, Quota, Grant]]:
    for team in policy.teams.values():
        for quota in team.quotas:
            for grant in quota.grants:
                yield team, quota, grant


def _what(team: Team, quota: Quota, grant: Grant) -> str:
    why = f" ({grant.reason})" if grant.reason else ""
    return f"the grant of {grant.cards} card(s) to team '{team.name}' in pool '{quota.pool}'{why}"


@rule("quota-grant-ending", Severity.WARNING)
def quota_grant_ending(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Warn when a time-boxed quota grant ends within 7 days (`--now` sets today).

    Fails (warns): `until: 2026-12-31` validated with `--now 2026-12-26`.
    Passes: `until: 2026-12-31` with `--now 2026-12-01`.
    Fix: tell the team its quota drops the day after `until` (its running work beyond the
    remaining nominal quota may be preempted); extend `until` if the grant is renewed.
    """
    for team, quota, grant in _granted(policy):
        if grants.countable(quota) and grants.ends_soon(grant, ctx.now):
            left = grants.days_left(grant, ctx.now)
            views = [v for v in grants.views(policy, ctx.now) if v.grant is grant]
            drop = f"; nominal {views[0].nominal_now} -> {views[0].nominal_after}" if views else ""
            yield warning_at(
                "quota-grant-ending",
                f"{_what(team, quota, grant)} ends on {grant.until}, in {left} day(s): "
                f"the quota drops on {grants.drop_day(grant)}{drop}",
                grant.origin,
                "until",
                hint="tell the team, or extend until if the grant is renewed",
            )


@rule("quota-grant-ended", Severity.ERROR)
def quota_grant_ended(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A time-boxed quota grant whose `until` has passed is deleted from the policy.

    `render` reports it as a warning and renders the quota without it, so the cluster loses
    the grant on time even before the entry is deleted; `validate` (the CI gate) fails.
    Fails: `until: 2026-11-30` validated with `--now 2026-12-01`.
    Passes: `until: 2026-12-31` with `--now 2026-12-01`.
    Fix: delete the grant (the quota already dropped back), or extend `until` if it was renewed.
    """
    for team, quota, grant in _granted(policy):
        if grants.state(grant, ctx.now) is grants.State.ENDED:
            ago = -grants.days_left(grant, ctx.now)
            yield error_at(
                "quota-grant-ended",
                f"{_what(team, quota, grant)} ended on {grant.until} ({ago} day(s) ago) "
                "and is no longer rendered",
                grant.origin,
                "until",
                hint="delete the grant, or extend until if it was renewed",
            )


@rule("quota-grant-dates", Severity.ERROR)
def quota_grant_dates(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A quota grant's `until` is on or after its `from`.

    Fails: `from: 2026-12-10`, `until: 2026-12-01`.
    Passes: `from: 2026-12-01`, `until: 2026-12-31`.
    Fix: swap the dates, or correct the one mistyped.
    """
    for team, quota, grant in _granted(policy):
        if grant.until < grant.start:
            yield error_at(
                "quota-grant-dates",
                f"{_what(team, quota, grant)} ends ({grant.until}) before it starts "
                f"({grant.start}): it is never in force",
                grant.origin,
                "until",
                hint="until is the grant's last day: on or after from",
                related=[note(f"starts on {grant.start}", grant.origin, "from")],
            )


@rule("quota-grant-units", Severity.ERROR)
def quota_grant_units(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A quota grant adds whole cards to its entry's `cards`, so the entry is not written in
    `normalized` units (converted to cards, rounded down: the sum would mean two units).

    Fails: a grant in an entry with `normalized: 23.2`.
    Passes: a grant in an entry with `cards: 8` (or with no `cards` yet: the grant alone).
    Fix: write the entry's quota as `cards` (23.2 normalized on H100 is 8 cards), or drop
    the grant.
    """
    for team, quota, grant in _granted(policy):
        if not grants.countable(quota):
            yield error_at(
                "quota-grant-units",
                f"{_what(team, quota, grant)} adds whole cards to an entry in normalized units: "
                "it is not rendered",
                grant.origin,
                "cards",
                hint="write the entry's quota as cards, or drop the grant",
            )
