"""Plan stage: the limits a Team's quota entry gives each resource of its pool's flavor, and
the resources the flavor lists (`kueue.coveredResources`); `quota_plan.flavor_plan` puts them
together."""

from __future__ import annotations

import math
from collections.abc import Mapping

from hetgitops.model import mig
from hetgitops.model.policy import CardType, Fleet, Pool, Quota
from hetgitops.plan import capacity


def limited_resources(quota: Quota, pool: Pool, card: CardType, fleet: Fleet | None) -> set[str]:
    """What borrowingLimit / lendingLimit bound: a quota's limits are in its own units, so the
    main card resource for `cards` / `normalized`, else every MIG resource it claims."""
    if quota.cards is not None or quota.normalized is not None:
        return {capacity.main_resource(pool, card)}
    return set(capacity.quota_resources(quota, pool, card, fleet))


def borrowing_limit(quota: Quota, pool: Pool, *, limited: bool) -> int | None:
    if pool.isolated:
        return 0
    return quota.borrowing_limit if limited else None


def lending_limit(quota: Quota, pool: Pool, *, limited: bool, nominal: int) -> int | None:
    if pool.isolated:
        return 0
    if limited and quota.lending_limit is not None:
        return quota.lending_limit
    if pool.lend_max_percent is not None:
        return math.floor(nominal * pool.lend_max_percent / 100)
    return None


def per_profile(
    quota: Quota, pool: Pool, borrowing: dict[str, int | None], lending: dict[str, int | None]
) -> None:
    """`migBorrowingLimits` / `migLendingLimits`: each listed profile's own limit, where the
    pool lists its resource (migStrategy mixed); an isolated pool keeps its 0s."""
    if pool.isolated:
        return
    for limits, into in (
        (quota.mig_borrowing_limits, borrowing),
        (quota.mig_lending_limits, lending),
    ):
        for profile, limit in limits.items():
            if mig.resource_name(profile) in into:
                into[mig.resource_name(profile)] = limit


def foreign_limits(quota: Quota, pool: Pool) -> tuple[int | None, int | None]:
    """The borrowing and lending limits of a listed resource the entry claims none of: 0 on
    an isolated pool (it borrows nothing); under `limitsCoverAll` a borrowingLimit of 0 where
    the entry sets one (a hand-written queue with a limit on every resource), which lets the
    queue borrow none of it in this flavor (Kueue v0.19.2
    pkg/cache/scheduler/resource_node.go:124-141); else unlimited. A lendingLimit there would
    change nothing: a 0 quota lends nothing (:64-71)."""
    if pool.isolated:
        return 0, 0
    borrows = quota.borrowing_limit is not None or bool(quota.mig_borrowing_limits)
    return (0 if quota.limits_cover_all and borrows else None), None


def as_covered(listed: tuple[str, ...], nominal: Mapping[str, int]) -> dict[str, int]:
    """`kueue.coveredResources`: each listed resource (0 where the pool lacks it), then any
    the quota claims that the list leaves out; an unclaimed resource it leaves out is not
    covered. Kueue skips a flavor whose quota of a requested resource is 0 and rejects a
    pod asking an uncovered one, so the 0s add nothing the queue can admit."""
    found = {r: nominal.get(r, 0) for r in listed}
    found.update({r: n for r, n in nominal.items() if n and r not in found})
    return found
