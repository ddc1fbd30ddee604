"""`hetgitops capacity --format html`: one self-contained static page (no script, no network at
view time) with the report's charts as inline SVG and its tables.

Charts are Vega-Lite specifications built with Altair and rendered to SVG by vl-convert (the
Vega-Lite compiler and Vega renderer embedded in a Rust library, no browser), which gives the
same bytes for the same input: commitment against capacity per card type stacked by team, reach
per team and resource, and the cohort tree as nested lists."""

from __future__ import annotations

import html
from typing import Any

from hetgitops.capacity.formats import number
from hetgitops.capacity.run import CapacityReport

MISSING = "capacity --format html needs altair and vl-convert-python: pip install 'hetgitops[html]'"


class ChartLibraryMissing(RuntimeError):
    """The optional charting libraries are not installed."""


def _svg(chart: Any) -> str:
    import vl_convert

    svg: str = vl_convert.vegalite_to_svg(chart.to_dict())
    return svg


def _charts(report: CapacityReport) -> tuple[str, str]:
    try:
        import altair as alt
    except ImportError as exc:
        raise ChartLibraryMissing(MISSING) from exc
    committed = [
        {"card type": c.card_type, "team": team, "card-equivalents": float(share)}
        for c in report.cards
        for team, share in c.by_team
    ]
    capacity = [{"card type": c.card_type, "cards": c.capacity} for c in report.cards]
    bars = (
        alt.Chart(alt.InlineData(values=committed))
        .mark_bar()
        .encode(
            x=alt.X("card type:N", sort=None),
            y=alt.Y("sum(card-equivalents):Q", title="nominal quota (card-equivalents)"),
            color=alt.Color("team:N"),
            order=alt.Order("team:N"),
        )
    )
    ticks = (
        alt.Chart(alt.InlineData(values=capacity))
        .mark_tick(color="black", thickness=3, size=40)
        .encode(x=alt.X("card type:N", sort=None), y=alt.Y("cards:Q", title="cards"))
    )
    commitment = (bars + ticks).properties(
        title="Commitment against capacity per card type (tick: physical cards)", width=480
    )
    reach = [
        {"team": r.team, "resource": f"{r.pool} {r.label}", "units": r.reach, "what": "reach"}
        for r in report.rows
        if r.reach
    ]
    reach_chart = (
        alt.Chart(alt.InlineData(values=reach))
        .mark_bar()
        .encode(
            y=alt.Y("resource:N", title=None, sort=None),
            x=alt.X("units:Q", title="reach (units of the resource)"),
            row=alt.Row("team:N", title=None),
        )
        .properties(title="Reach per team, pool and resource", width=360)
        .resolve_scale(y="independent")
    )
    return _svg(commitment), _svg(reach_chart)


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _tree(report: CapacityReport) -> str:
    children: dict[str | None, list[str]] = {}
    teams = {name: members for name, _, members in report.cohorts}
    for name, parent, _ in report.cohorts:
        children.setdefault(parent, []).append(name)

    def node(name: str) -> str:
        members = "".join(f'<li class="team">{html.escape(t)}</li>' for t in teams.get(name, ()))
        below = "".join(node(c) for c in children.get(name, []))
        inner = f"<ul>{members}{below}</ul>" if members or below else ""
        return f'<li class="cohort">{html.escape(name)}{inner}</li>'

    return "<ul>" + "".join(node(root) for root in children.get(None, [])) + "</ul>"


STYLE = """body{font-family:sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px}
th{background:#f3f3f3}li.cohort{font-weight:bold}li.team{font-weight:normal}"""


def render_html(report: CapacityReport) -> str:
    commitment, reach = _charts(report)
    quota = _table(
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
            "normalized nominal",
            "normalized reach",
        ],
        [
            [
                r.team,
                r.pool,
                r.resource,
                r.label,
                str(r.nominal),
                str(r.borrowable),
                str(r.lendable),
                str(r.guaranteed),
                str(r.reach),
                number(r.normalized(r.nominal)),
                number(r.normalized(r.reach)),
            ]
            for r in report.rows
        ],
    )
    costs = _table(
        ["team", "monthly cost", "budget", "currency"],
        [
            [
                c.team,
                f"{c.monthly:,.2f}",
                "-" if c.budget is None else f"{c.budget:,.2f}",
                c.currency,
            ]
            for c in report.costs
        ],
    )
    cards = _table(
        ["card type", "committed (card-equivalents)", "physical cards"],
        [[c.card_type, number(c.committed), str(c.capacity)] for c in report.cards],
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>hetgitops capacity</title>
<style>{STYLE}</style></head><body>
<h1>hetgitops capacity</h1>
<section id="commitment"><h2>Commitment against capacity per card type</h2>
{commitment}{cards}</section>
<section id="reach"><h2>Reach per team</h2>{reach}</section>
<section id="quotas"><h2>Quota per team, pool and resource</h2>
<p>Units of each resource: whole GPUs, MIG instances of one profile and time-sliced replicas
are never added; normalized = card-equivalents x the card's performance coefficient.</p>
{quota}</section>
<section id="costs"><h2>Monthly cost against budget</h2>{costs}</section>
<section id="cohorts"><h2>Cohort tree</h2>{_tree(report)}</section>
</body></html>
"""
