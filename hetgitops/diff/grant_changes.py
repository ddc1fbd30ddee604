"""Diff stage, time-boxed quota: grants a change adds, removes or moves, each with the nominal
quota it adds and the day it drops back (`plan.grants`, on the diff's `--now` day)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from hetgitops.diff.impact import PolicyChange
from hetgitops.model.policy import Policy
from hetgitops.plan import grants
from hetgitops.plan.grants import GrantView

TOPIC = "quota-grant"


def _key(view: GrantView) -> tuple[str, str, dt.date, dt.date, int]:
    return view.team, view.pool, view.grant.start, view.grant.until, view.grant.cards


def _text(view: GrantView) -> str:
    g = view.grant
    when = f"{g.start}..{g.until}"
    drop = f"nominal {view.nominal_now} today, {view.nominal_after} from {grants.drop_day(g)}"
    return f"+{g.cards} cards {when} ({grants.State(view.state).value}; {drop})"


def grant_changes(base: Policy, head: Policy, today: dt.date) -> Iterator[PolicyChange]:
    """One change per grant only one side holds, by team, pool and dates: a new grant is
    flagged `expiry` (the quota drops back on a date), a removed one `removal`."""
    old = {_key(v): v for v in grants.views(base, today)}
    new = {_key(v): v for v in grants.views(head, today)}
    for key in sorted(set(old) | set(new)):
        if key in old and key in new:
            continue
        subject = f"team {key[0]} pool {key[1]}"
        if key in new:
            yield PolicyChange(TOPIC, subject, "-", _text(new[key]), "expiry")
        else:
            yield PolicyChange(TOPIC, subject, _text(old[key]), "-", "removal")
