"""Markdown for a pull-request comment: summary table first, details folded, <= 65,536 chars.

The budget is GitHub's limit on a comment body. The summary always comes first and is kept;
detail sections are added in order while they fit, an object section is cut between objects
(every code fence is closed), and a closing note says what was cut. No timestamps: the same
change gives the same bytes, so a bot can update one comment in place (the first line is a
hidden marker to find it by).
"""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.diff.formats import common as c
from hetgitops.diff.formats.sections import Section, impact_sections, joined
from hetgitops.diff.formats.text import finding, headline
from hetgitops.diff.impact import QuotaRow
from hetgitops.diff.objects import ObjectChange
from hetgitops.diff.run import DiffResult
from hetgitops.reporting.markdown import code_cell, text_cell

MARKER = "<!-- hetgitops-diff -->"
BUDGET = 65536
SUMMARY_ROWS = 25  # the summary stays one screen; the full table is in a details section
OBJECT_LINES = 200  # one object's diff lines at most (a node plan can be long)
_CUT_RESERVE = 600  # room kept for the closing "what was cut" note


def _quota_table(result: DiffResult, rows: int | None) -> list[str]:
    shown = result.impact.quotas[:rows] if rows is not None else result.impact.quotas
    # A multi-cluster fleet's rows lead with the cluster the pool is in.
    clustered = any(r.cluster for r in result.impact.quotas)
    # Quota and reach per resource (whole GPUs, each MIG profile, time-sliced replicas are
    # never added up); card-equivalents only beside them, labelled (issue 20 item 4).
    lines = [
        ("| Cluster " if clustered else "")
        + "| Team | Card type | Pool | Nominal per resource | Reach per resource "
        + "| Card-equivalents (Δ, Δ%) | Cost Δ/month |",
        ("|---" if clustered else "") + "|---|---|---|---|---|---:|---:|",
    ]
    for r in shown:
        b, a = c.cards(r.before), c.cards(r.after)
        lines.append(
            (f"| {text_cell(r.cluster)} " if clustered else "")
            + f"| {text_cell(r.team)} | {text_cell(r.card_type)} | {text_cell(r.pool)} | "
            f"{text_cell(_nominal(r))} | "
            f"{text_cell(c.per_resource(r.before, r.after, 'reach', '→'))} | "
            f"{c.number(b)} → {c.number(a)} ({c.signed(c.delta(b, a))}, {c.percent(b, a)}) | "
            f"{c.team_cost_delta(result, r)} |"
        )
    if rows is not None and len(result.impact.quotas) > rows:
        rest = len(result.impact.quotas) - rows
        lines.append(f"\n_…and {rest} more row(s) under “All quota changes”._")
    return lines


def _nominal(row: QuotaRow) -> str:
    """Nominal per resource, then the cpu and memory where only they change (hostLimits, a
    pool's cpuPerCard)."""
    nominal = c.per_resource(row.before, row.after, "nominal", "→")
    host = c.host_change(row.before, row.after, "→")
    return f"{nominal}; {host}" if host else nominal


def _summary(result: DiffResult) -> list[str]:
    lines = [
        MARKER,
        "### hetgitops diff",
        "",
        f"{code_cell(result.base.label)} → {code_cell(result.head.label)}: "
        f"**{text_cell(headline(result))}**",
        "",
    ]
    if result.impact.quotas:
        lines += [*_quota_table(result, SUMMARY_ROWS), ""]
    risks = result.risks
    if risks:
        lines.append(f"**Risk flags ({len(risks)})**")
        lines += [f"- ⚠️ {text_cell(r)}" for r in risks[:SUMMARY_ROWS]]
        if len(risks) > SUMMARY_ROWS:
            lines.append(f"- …and {len(risks) - SUMMARY_ROWS} more (see the sections below)")
        lines.append("")
    return lines


def _details(title: str, body: list[str]) -> str:
    return "\n".join([f"<details><summary>{title}</summary>", "", *body, "", "</details>", ""])


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _impact_sections(result: DiffResult) -> Iterator[tuple[str, str]]:
    impact = result.impact
    if len(impact.quotas) > SUMMARY_ROWS:
        yield "all quota changes", _details("All quota changes", _quota_table(result, None))
    if impact.quotas:
        rows = [
            [
                text_cell(c.team_pool(r)),
                f"{c.number(c.normalized(r.before))} → {c.number(c.normalized(r.after))}",
                text_cell(c.per_resource(r.before, r.after, "nominal", "→")),
                text_cell(c.per_resource(r.before, r.after, "reach", "→")),
            ]
            for r in impact.quotas
        ]
        header = ["Team / pool", "Normalized units", "Nominal per resource", "Reach per resource"]
        table = _table(header, rows)
        yield "normalized units and reach", _details("Normalized units and reach", table)


def _table_of(section: Section) -> str:
    rows = [[text_cell(joined(cell, "→")) for cell in row] for row in section.rows]
    table = _table([column.name for column in section.columns], rows)
    body = [section.note[0].upper() + section.note[1:] + ".", "", *table] if section.note else table
    return _details(("⚠️ " if section.risky else "") + section.title, body)


def _indented(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


def _risk_sections(result: DiffResult) -> Iterator[tuple[str, str]]:
    if result.hazards:
        body = [
            f"- **{code_cell(h.rule)}** {text_cell(h.subject)} {text_cell(h.message)}  \n"
            + (f"  _{text_cell(h.live)}_  \n" if h.live else "")
            + f"  _do:_ {text_cell(h.action)}  \n  _at:_ {code_cell(str(h.span))}"
            + (f"\n\n  ```yaml\n{_indented(h.snippet)}  ```" if h.snippet else "")
            for h in result.hazards
        ]
        yield "hazards", _details(f"⚠️ Day-2 hazards ({len(result.hazards)})", body)
    if result.introduced or result.resolved:
        body = [f"- 🆕 {code_cell(finding(d))}" for d in result.introduced]
        body += [f"- ✔️ {code_cell(finding(d))}" for d in result.resolved]
        title = f"Findings: {len(result.introduced)} introduced, {len(result.resolved)} resolved"
        yield "findings", _details(title, body)


def _object_block(change: ObjectChange) -> str:
    head = f"**{c.SIGNS[change.op]} {text_cell(change.title)}** ({code_cell(change.file)})"
    lines = [f"{sign if sign != '~' else '!'} {line}" for sign, line in c.object_lines(change)]
    if not lines:
        return head + "\n"
    if len(lines) > OBJECT_LINES:
        lines = [*lines[:OBJECT_LINES], f"# … {len(lines) - OBJECT_LINES} more line(s) cut"]
    body = "\n".join(line.replace("```", "'''") for line in lines)
    return f"{head}\n\n```diff\n{body}\n```\n"


def _object_sections(result: DiffResult, room: int) -> tuple[list[str], list[str]]:
    """Per-target details filled object by object within `room`; returns (sections, cuts)."""
    sections: list[str] = []
    cuts: list[str] = []
    for target, changes in c.by_target(result.objects).items():
        title = f"Objects: {target} ({c.counts(changes)})"
        opening = f"<details><summary>{text_cell(title)}</summary>\n\n"
        closing = "\n</details>\n"
        blocks: list[str] = []
        used = len(opening) + len(closing)
        for change in changes:
            block = _object_block(change)
            if used + len(block) + 1 > room:
                break
            blocks.append(block)
            used += len(block) + 1
        if len(blocks) < len(changes):
            cuts.append(f"{len(changes) - len(blocks)} of {len(changes)} {target} object(s)")
        if blocks:
            sections.append(opening + "\n".join(blocks) + closing)
            room -= used
    return sections, cuts


def render(result: DiffResult, budget: int = BUDGET) -> str:
    parts = ["\n".join(_summary(result))]
    used = len(parts[0]) + _CUT_RESERVE
    cuts: list[str] = []
    tables = [(section.key, _table_of(section)) for section in impact_sections(result)]
    for name, section in [*_impact_sections(result), *tables, *_risk_sections(result)]:
        if used + len(section) + 1 <= budget:
            parts.append(section)
            used += len(section) + 1
        else:
            cuts.append(name)
    objects, object_cuts = _object_sections(result, budget - used)
    parts += objects
    cuts += object_cuts
    if cuts:
        parts.append(
            f"✂️ Cut to fit GitHub's {budget:,}-character comment limit: {', '.join(cuts)}. "
            "Run `hetgitops diff --format json` for everything.\n"
        )
    text = "\n".join(parts).rstrip("\n") + "\n"
    return text if len(text) <= budget else _hard_cut(text, budget)


def _hard_cut(text: str, budget: int) -> str:
    """Last resort when even the summary is too long: cut at a line, close any open fence."""
    note = "\n\n✂️ Cut to fit the comment limit; run `hetgitops diff --format json`.\n"
    kept = text[: budget - len(note) - 8].rsplit("\n", 1)[0]
    if kept.count("```") % 2:
        kept += "\n```"
    return kept + note
