"""`hetgitops capacity` as text, JSON, CSV and Markdown (HTML in `html`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from hetgitops.capacity import grant_lines
from hetgitops.capacity.run import CapacityReport, TeamCost
from hetgitops.plan.entitlement import Entitlement
from hetgitops.reporting import csvcells

COLUMNS = (
    "team",
    "pool",
    "card_type",
    "resource",
    "kind",
    "nominal",
    "borrowable",
    "lendable",
    "guaranteed",
    "reach",
    "card_equivalents_per_unit",
    "nominal_normalized",
    "reach_normalized",
    # The row's team, as the text and markdown cost table says it (repeated on each of its rows).
    "currency",
    "team_monthly_cost",
    "team_budget",
    "team_headroom",
)


def number(value: Fraction | float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, Fraction) and value.denominator == 1:
        return str(value.numerator)
    text = f"{float(value):.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _row(e: Entitlement) -> dict[str, Any]:
    return {
        "team": e.team,
        "pool": e.pool,
        "card_type": e.card_type,
        "resource": e.resource,
        "kind": e.label,
        "nominal": e.nominal,
        "borrowable": e.borrowable,
        "lendable": e.lendable,
        "guaranteed": e.guaranteed,
        "reach": e.reach,
        "card_equivalents_per_unit": number(e.weight),
        "nominal_normalized": number(e.normalized(e.nominal)),
        "reach_normalized": number(e.normalized(e.reach)),
    }


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    out = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out += [
        "  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return out


def render_text(report: CapacityReport) -> str:
    out = [
        "Quota per team, pool and resource (units of the resource: whole GPUs, MIG instances",
        "of one profile and time-sliced replicas are never added; normalized = performance",
        "units, card-equivalents x coefficient):",
        "",
    ]
    header = [
        "team",
        "pool",
        "resource",
        "kind",
        "nominal",
        "borrowable",
        "lendable",
        "guaranteed",
        "reach",
        "normalized nominal/reach",
    ]
    rows = [
        [
            e.team,
            e.pool,
            e.resource,
            e.label,
            str(e.nominal),
            str(e.borrowable),
            str(e.lendable),
            str(e.guaranteed),
            str(e.reach),
            f"{number(e.normalized(e.nominal))}/{number(e.normalized(e.reach))}",
        ]
        for e in report.rows
    ]
    out += ["  " + line for line in _table(header, rows)]
    out += ["", "Monthly cost of nominal quota against budget:", ""]
    cost_rows = [
        [
            c.team,
            f"{c.monthly:,.2f} {c.currency}",
            "-" if c.budget is None else f"{c.budget:,.2f}",
            "-" if c.budget is None else f"{c.budget - c.monthly:,.2f}",
            ", ".join(c.unpriced) or "-",
        ]
        for c in report.costs
    ]
    out += [
        "  " + line
        for line in _table(["team", "cost", "budget", "headroom", "unpriced"], cost_rows)
    ]
    out += ["", "Per card type, nominal commitment (card-equivalents) against physical cards:", ""]
    card_rows = [
        [
            c.card_type,
            number(c.committed),
            str(c.capacity),
            "-" if not c.capacity else f"{float(c.committed) / c.capacity:.0%}",
            ", ".join(f"{t} {number(s)}" for t, s in c.by_team) or "-",
        ]
        for c in report.cards
    ]
    out += [
        "  " + line
        for line in _table(["card type", "committed", "cards", "ratio", "by team"], card_rows)
    ]
    if report.grants:
        out += ["", grant_lines.title(report), ""]
        out += ["  " + line for line in _table(grant_lines.HEADER, grant_lines.rows(report))]
    return "\n".join(out) + "\n"


def as_data(report: CapacityReport) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "quotas": [
            {
                **_row(e),
                "card_equivalents_per_unit": float(e.weight),
                "nominal_normalized": _float(e.normalized(e.nominal)),
                "reach_normalized": _float(e.normalized(e.reach)),
            }
            for e in report.rows
        ],
        "costs": [
            {
                "team": c.team,
                "currency": c.currency,
                "monthly": c.monthly,
                "budget": c.budget,
                "unpriced": list(c.unpriced),
            }
            for c in report.costs
        ],
        "cardTypes": [
            {
                "cardType": c.card_type,
                "cards": c.capacity,
                "committed": float(c.committed),
                "byTeam": {t: float(s) for t, s in c.by_team},
            }
            for c in report.cards
        ],
        "cohorts": [{"name": n, "parent": p, "teams": list(t)} for n, p, t in report.cohorts],
        **({"grants": grant_lines.as_data(report)} if report.grants else {}),
    }


def _float(value: Fraction | None) -> float | None:
    return None if value is None else round(float(value), 4)


def render_json(report: CapacityReport) -> str:
    return json.dumps(as_data(report), indent=2) + "\n"


def _cost_columns(cost: TeamCost | None) -> dict[str, str]:
    """The team's monthly cost against budget, as in the text format (empty: not known)."""
    if cost is None:
        return {}
    budget = cost.budget
    return {
        "currency": cost.currency,
        "team_monthly_cost": f"{cost.monthly:.2f}",
        "team_budget": "" if budget is None else f"{budget:.2f}",
        "team_headroom": "" if budget is None else f"{budget - cost.monthly:.2f}",
    }


def render_csv(report: CapacityReport) -> str:
    """One row per team, pool and resource; every cell defused for spreadsheets (`csvcells`)."""
    costs = {c.team: c for c in report.costs}
    body = ({**_row(e), **_cost_columns(costs.get(e.team))} for e in report.rows)
    return csvcells.records(COLUMNS, body)


def render_markdown(report: CapacityReport) -> str:
    def table(header: list[str], rows: list[list[str]]) -> list[str]:
        return [
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows),
        ]

    out = [
        "## Quota per team, pool and resource",
        "",
        "Units of each resource; normalized = card-equivalents x performance coefficient.",
        "",
    ]
    out += table(
        [
            "team",
            "pool",
            "resource",
            "kind",
            "nominal",
            "borrowable",
            "lendable",
            "guaranteed",
            "reach",
            "normalized nominal / reach",
        ],
        [
            [
                e.team,
                e.pool,
                f"`{e.resource}`",
                e.label,
                str(e.nominal),
                str(e.borrowable),
                str(e.lendable),
                str(e.guaranteed),
                str(e.reach),
                f"{number(e.normalized(e.nominal))} / {number(e.normalized(e.reach))}",
            ]
            for e in report.rows
        ],
    )
    out += ["", "## Monthly cost against budget", ""]
    out += table(
        ["team", "cost", "budget"],
        [
            [
                c.team,
                f"{c.monthly:,.2f} {c.currency}",
                "-" if c.budget is None else f"{c.budget:,.2f}",
            ]
            for c in report.costs
        ],
    )
    out += ["", "## Commitment per card type", ""]
    out += table(
        ["card type", "committed (card-equivalents)", "cards"],
        [[c.card_type, number(c.committed), str(c.capacity)] for c in report.cards],
    )
    if report.grants:
        out += ["", "## Time-boxed quota grants", "", grant_lines.title(report), ""]
        out += table(grant_lines.HEADER, grant_lines.rows(report))
    return "\n".join(out) + "\n"


FORMATS: dict[str, Callable[[CapacityReport], str]] = {
    "text": render_text,
    "json": render_json,
    "csv": render_csv,
    "markdown": render_markdown,
}
