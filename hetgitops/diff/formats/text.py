"""Plain text for a terminal: the policy impact first, then each object's field changes."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.diagnostics import Diagnostic
from hetgitops.diff.formats import common as c
from hetgitops.diff.formats.sections import Section, impact_sections, joined
from hetgitops.diff.run import DiffResult
from hetgitops.reporting.text import visible


def headline(result: DiffResult) -> str:
    if result.invalid:
        return "a side fails validation: no object diff (see findings; quota and cost as asked)"
    if not result.objects:
        return "no change in the rendered output"
    risks = len(result.risks)
    return (
        f"{len(result.objects)} object(s) changed ({c.counts(result.objects)}); "
        f"{risks} risk flag(s)"
    )


def _quotas(result: DiffResult) -> Iterator[str]:
    if not result.impact.quotas:
        return
    yield (
        "Quota per team and pool (per resource: whole GPUs, MIG instances, replicas; reach ="
        " nominal + cohort lending; card-equivalents and normalized units beside):"
    )
    for row in result.impact.quotas:
        b, a = row.before, row.after
        yield (
            f"  {c.team_pool(row)} ({row.card_type}): nominal {c.per_resource(b, a, 'nominal')}"
            f"; reach {c.per_resource(b, a, 'reach')}; card-equivalents "
            f"{c.number(c.cards(b))} -> {c.number(c.cards(a))} "
            f"({c.signed(c.delta(c.cards(b), c.cards(a)))}, {c.percent(c.cards(b), c.cards(a))})"
            f"; normalized {c.number(c.normalized(b))} -> {c.number(c.normalized(a))}"
            + (f"; host {host}" if (host := c.host_change(b, a)) else "")
        )


def _section(section: Section) -> Iterator[str]:
    note = f" ({section.note})" if section.note else ""
    yield f"{section.title}{note}:"
    mark = "! " if section.risky else ""
    for first, *rest in section.rows:
        parts = [
            f"{column.label} {value}" if column.label else value
            for column, cell in zip(section.columns[1:], rest, strict=True)
            if (value := joined(cell, "->"))
        ]
        yield f"  {mark}{joined(first, '->')}: {'; '.join(parts)}"


def _hazards(result: DiffResult) -> Iterator[str]:
    if not result.hazards:
        return
    yield "Day-2 hazards:"
    for hazard in result.hazards:
        yield f"  ! {hazard.rule}: {hazard.subject} {hazard.message}"
        if hazard.live:
            yield f"      {hazard.live}"
        yield f"      do: {hazard.action}"
        for line in hazard.snippet.splitlines():
            yield f"          {line}"
        yield f"      at: {hazard.span}"


def finding(d: Diagnostic) -> str:
    return f"{d.span}: {d.severity.label}[{d.rule}]: {d.message}"


def _findings(result: DiffResult) -> Iterator[str]:
    for title, found in (("introduced", result.introduced), ("resolved", result.resolved)):
        if found:
            yield f"Findings {title}:"
            yield from (f"  {finding(d)}" for d in found)


def _objects(result: DiffResult) -> Iterator[str]:
    for target, changes in c.by_target(result.objects).items():
        yield f"Objects, {target} ({c.counts(changes)}):"
        for change in changes:
            yield f"  {c.SIGNS[change.op]} {change.title}"
            yield from (f"      {sign} {line}" for sign, line in c.object_lines(change))


def sections(result: DiffResult) -> list[list[str]]:
    found = [list(_quotas(result))]
    found += [list(_section(section)) for section in impact_sections(result)]
    found += [list(part(result)) for part in (_hazards, _findings, _objects)]
    return [lines for lines in found if lines]


def render(result: DiffResult) -> str:
    lines = [f"hetgitops diff {result.base.label} -> {result.head.label}: {headline(result)}"]
    if result.ignored:
        lines.append(f"ignored: {', '.join(result.ignored)}")
    for section in sections(result):
        lines += ["", *section]
    return "\n".join(visible(line) for line in lines) + "\n"
