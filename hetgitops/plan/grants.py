"""Plan stage, time-boxed quota: which quota grants are in force on a day, and the policy with
them counted in its nominal quota. The one place for grant date arithmetic: checks (`validate`
warns and fails), `api` (render, diff), `capacity` and `capacity --without` read it from here.

A grant (`Team.spec.quotas[].grants[]`) adds whole cards to its entry's `cards` from `from`
through `until`, both days included; the day after `until` the nominal quota drops back.
Kueue has no time-boxed quota (kueue issue #8654): the render is the quota of the day it was
made, so a render made before a grant's start or end is stale on that date (`render --check`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from enum import Enum

from hetgitops.model.policy import Grant, Policy, Quota, Team

# `validate` warns this many days before a grant's last day (quota-grant-ending): a week, so
# the team hears before the weekend that precedes the drop; the transition pools' window
# (Fleet.spec.expiryWarningDays, 30 days by default) would warn for the whole life of a
# month-long grant.
WARNING_DAYS = 7


class State(Enum):
    PENDING = "pending"  # before `from`
    IN_FORCE = "in force"  # from `from` through `until`
    ENDED = "ended"  # after `until`


def state(grant: Grant, today: dt.date) -> State:
    if today < grant.start:
        return State.PENDING
    return State.IN_FORCE if today <= grant.until else State.ENDED


def days_left(grant: Grant, today: dt.date) -> int:
    """Days from today to the grant's last day (0 on the last day; negative once ended)."""
    return (grant.until - today).days


def ends_soon(grant: Grant, today: dt.date) -> bool:
    """In force and within WARNING_DAYS of its last day."""
    return state(grant, today) is State.IN_FORCE and days_left(grant, today) <= WARNING_DAYS


def drop_day(grant: Grant) -> dt.date:
    """The first day without the grant."""
    return grant.until + dt.timedelta(days=1)


def countable(quota: Quota) -> bool:
    """A grant adds whole cards to the entry's `cards` (an entry may hold cards and mig
    both); an entry in `normalized` units is quota-grant-units' finding."""
    return quota.normalized is None


def declared(quota: Quota) -> int | None:
    """The entry's `cards` as written, without the grants counted on the analysed day."""
    if quota.cards is None:
        return None
    return quota.cards - quota.granted


def granted(quota: Quota, today: dt.date) -> int:
    """Cards the entry's grants in force today add."""
    if not countable(quota):
        return 0
    return sum(g.cards for g in quota.grants if state(g, today) is State.IN_FORCE)


def _quota_at(quota: Quota, today: dt.date) -> Quota:
    extra = granted(quota, today)
    base = declared(quota)
    if extra == quota.granted:
        return quota
    cards = (base or 0) + extra if base is not None or extra else None
    return replace(quota, cards=cards, granted=extra)


def _team_at(team: Team, today: dt.date) -> Team:
    quotas = tuple(_quota_at(q, today) for q in team.quotas)
    if all(new is old for new, old in zip(quotas, team.quotas, strict=True)):
        return team
    return replace(team, quotas=quotas)


def at(policy: Policy, today: dt.date) -> Policy:
    """The policy on `today`: each quota entry's `cards` counts its grants in force that day.
    The same object when no grant changes anything (a policy without grants)."""
    teams = {name: _team_at(team, today) for name, team in policy.teams.items()}
    if all(teams[name] is team for name, team in policy.teams.items()):
        return policy
    return replace(policy, teams=teams)


@dataclass(frozen=True)
class GrantView:
    """One grant as the reports show it: who, where, how much, when, and the nominal quota in
    whole cards while it is in force and after it ends."""

    team: str
    pool: str
    grant: Grant
    state: State
    days_left: int
    nominal_now: int  # the entry's cards on the analysed day (grants in force counted)
    nominal_after: int  # the entry's cards the day after `until`


def views(policy: Policy, today: dt.date) -> tuple[GrantView, ...]:
    """Every countable grant of `policy` (as built, or already `at` any day), by team, pool,
    start. Other grants in force on the drop day still count after it."""
    found: list[GrantView] = []
    for team in sorted(policy.teams.values(), key=lambda t: t.name):
        for quota in team.quotas:
            if not countable(quota):
                continue
            base = declared(quota) or 0
            for grant in sorted(quota.grants, key=lambda g: (g.start, g.until, g.cards)):
                after = base + granted(quota, drop_day(grant))
                now = base + granted(quota, today)
                found.append(
                    GrantView(
                        team.name,
                        quota.pool,
                        grant,
                        state(grant, today),
                        days_left(grant, today),
                        now,
                        after,
                    )
                )
    return tuple(found)
