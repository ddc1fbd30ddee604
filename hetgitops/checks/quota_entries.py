"""Check stage, quota-entry family: the host fields of a quota entry (`hostLimits`,
`cpuPerCard`, `memoryPerCard`) where they change nothing the plan renders (`plan.quota_plan`
reads them: `host_entries`, `per_card`)."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, warning_at
from hetgitops.checks._common import written as written_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model import quantities
from hetgitops.model.policy import Policy, Quota, Team
from hetgitops.plan.quota_plan import per_card, quota_entry

HOST_FIELDS = (("cpuPerCard", 0), ("memoryPerCard", 1))


def _entries(policy: Policy) -> Iterator[tuple[Team, Quota]]:
    for team in policy.teams.values():
        for quota in team.quotas:
            yield team, quota


def _unbound_why(policy: Policy, team: Team, quota: Quota) -> str | None:
    """Why `hostLimits: false` frees nothing (None: it frees cpu and memory)."""
    pool = policy.pools.get(quota.pool)
    if team.cohort is None:
        return f"team '{team.name}' has no cohort, so its queue has no limit at all"
    if pool is not None and pool.isolated:
        return f"pool '{quota.pool}' is isolated: it borrows and lends no cpu or memory anyway"
    lends = pool is not None and pool.lend_max_percent is not None
    own = quota.borrowing_limit, quota.lending_limit
    if own == (None, None) and not (
        quota.mig_borrowing_limits or quota.mig_lending_limits or lends
    ):
        return "the entry has no borrowingLimit or lendingLimit (nor the pool a lending percentage)"
    return None


@rule("quota-host-limits-unused", Severity.WARNING)
def quota_host_limits_unused(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """`hostLimits: false` on a quota entry whose limits bind nothing.

    The field takes cpu and memory out of the entry's borrowingLimit / lendingLimit (and the
    pool's lending.maxPercent); without any of those, or without a cohort, or on an isolated
    pool, there is no limit to take them out of, and the field suggests a bound that is not
    there.
    Fails (warns): `{pool: h100, cards: 8, hostLimits: false}` with no limit.
    Passes: `{pool: h100, cards: 8, borrowingLimit: 4, hostLimits: false}` in a cohort.
    Fix: delete `hostLimits`, or add the limit it was meant for.
    """
    for team, quota in _entries(policy):
        if quota.host_limits:
            continue
        why = _unbound_why(policy, team, quota)
        if why is not None:
            yield warning_at(
                "quota-host-limits-unused",
                f"team '{team.name}' pool '{quota.pool}': hostLimits: false changes nothing: {why}",
                quota.origin,
                "hostLimits",
                key=True,
                hint="delete hostLimits, or add the borrowingLimit or lendingLimit it is for",
            )


@rule("quota-host-rate-unused", Severity.WARNING)
def quota_host_rate_unused(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A quota entry's `cpuPerCard` / `memoryPerCard` that the plan never uses.

    The ClusterQueue reads the first quota entry of a pool: the same field on a later entry of
    that pool is ignored. A value equal to the team's (or the Fleet's default) says nothing and
    keeps the pool from following a later change of the team's.
    Fails (warns): team `cpuPerCard: 12` and `{pool: h100, cards: 8, cpuPerCard: "12"}`.
    Passes: `{pool: h100, cards: 8, cpuPerCard: "24"}`.
    Fix: delete the field (or move it to the pool's first entry).
    """
    for team, quota in _entries(policy):
        first = quota_entry(team, quota.pool)
        rates = per_card(policy, team)
        for field, index in HOST_FIELDS:
            value = quota.cpu_per_card if index == 0 else quota.memory_per_card
            if value is None or not written_at(quota.origin, field):
                continue
            if first is not quota:
                why = f"pool '{quota.pool}' is listed before: its first entry's amount counts"
            elif quantities.value_of(value) == quantities.value_of(rates[index]):
                why = f"it equals the team's {field} ({rates[index]})"
            else:
                continue
            yield warning_at(
                "quota-host-rate-unused",
                f"team '{team.name}' pool '{quota.pool}': {field} {value} changes nothing: {why}",
                quota.origin,
                field,
                key=True,
                hint=f"delete {field} from this quota entry",
            )


@rule("quota-mig-limit-unclaimed", Severity.ERROR)
def quota_mig_limit_unclaimed(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A per-profile limit names a MIG profile the quota entry claims, under migStrategy mixed.

    `migBorrowingLimits` / `migLendingLimits` bound the entry's own `nvidia.com/mig-<profile>`
    resources; a profile the entry's `mig` does not list has no quota of the entry to bound,
    and under migStrategy single every slice is `nvidia.com/gpu` (use borrowingLimit).
    Fails: `{pool: h100, mig: {1g.10gb: 28}, migBorrowingLimits: {3g.40gb: 4}}`.
    Passes: `{pool: h100, mig: {1g.10gb: 28, 3g.40gb: 4}, migBorrowingLimits: {3g.40gb: 4}}`.
    Fix: add the profile to `mig`, or delete its limit.
    """
    single = policy.fleet is not None and policy.fleet.mig_strategy == "single"
    for team, quota in _entries(policy):
        for field, limits in (
            ("migBorrowingLimits", quota.mig_borrowing_limits),
            ("migLendingLimits", quota.mig_lending_limits),
        ):
            for profile in limits:
                if profile in quota.mig and not single:
                    continue
                why = (
                    "under migStrategy single its slices are nvidia.com/gpu: use the entry's "
                    "borrowingLimit / lendingLimit"
                    if single
                    else f"the entry claims no {profile} instance (its mig lists "
                    f"{', '.join(sorted(quota.mig)) or 'none'})"
                )
                yield error_at(
                    "quota-mig-limit-unclaimed",
                    f"team '{team.name}' pool '{quota.pool}': {field} {profile} bounds "
                    f"nothing: {why}",
                    quota.origin,
                    field,
                    profile,
                    key=True,
                    hint=f"add {profile} to the entry's mig, or delete its limit",
                )
