"""`hetgitops capacity`: the time-boxed quota grants section (text, JSON, Markdown), shown only
when the policy has grants: what each adds, when, and the nominal quota before and after."""

from __future__ import annotations

from typing import Any

from hetgitops.capacity.run import CapacityReport
from hetgitops.plan import grants
from hetgitops.plan.grants import GrantView

HEADER = ["team", "pool", "grant", "from", "until", "state", "nominal now", "after until"]


def _state(view: GrantView) -> str:
    if view.state is grants.State.IN_FORCE:
        return f"in force, {view.days_left} day(s) left"
    if view.state is grants.State.PENDING:
        return "not yet"
    return f"ended {-view.days_left} day(s) ago"


def rows(report: CapacityReport) -> list[list[str]]:
    return [
        [
            v.team,
            v.pool,
            f"+{v.grant.cards} cards" + (f" ({v.grant.reason})" if v.grant.reason else ""),
            v.grant.start.isoformat(),
            v.grant.until.isoformat(),
            _state(v),
            str(v.nominal_now),
            f"{v.nominal_after} from {grants.drop_day(v.grant)}",
        ]
        for v in report.grants
    ]


def title(report: CapacityReport) -> str:
    return (
        f"Time-boxed quota grants on {report.today} (nominal in whole cards; the quota above "
        f"counts the grants in force; validate warns {grants.WARNING_DAYS} days before until):"
    )


def as_data(report: CapacityReport) -> list[dict[str, Any]]:
    return [
        {
            "team": v.team,
            "pool": v.pool,
            "cards": v.grant.cards,
            "from": v.grant.start.isoformat(),
            "until": v.grant.until.isoformat(),
            "reason": v.grant.reason,
            "state": v.state.value,
            "daysLeft": v.days_left,
            "nominalNow": v.nominal_now,
            "nominalAfter": v.nominal_after,
            "dropsOn": grants.drop_day(v.grant).isoformat(),
        }
        for v in report.grants
    ]
