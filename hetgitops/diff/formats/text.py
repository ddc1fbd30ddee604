"""Plain text for a terminal: the policy impact first, then each object's field changes."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.diagnostics import Diagnostic
from hetgitops.diff.compare import DiffResult
from hetgitops.diff.formats import common as c
from hetgitops.reporting.text import visible


def headline(result: DiffResult) -> str:
    if result.invalid:
        return "a side fails validation: no object diff (see findings)"
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
    yield "Quota per team and pool (cards; normalized units; reach = nominal + cohort lending):"
    for row in result.impact.quotas:
        b, a = row.before, row.after
        yield (
            f"  {row.team} / {row.pool} ({row.card_type}): {c.number(c.cards(b))} -> "
            f"{c.number(c.cards(a))} cards ({c.signed(c.delta(c.cards(b), c.cards(a)))}, "
            f"{c.percent(c.cards(b), c.cards(a))}); normalized {c.number(c.normalized(b))} -> "
            f"{c.number(c.normalized(a))}; reach {c.number(c.reach(b))} -> {c.number(c.reach(a))}"
        )


def _capacity(result: DiffResult) -> Iterator[str]:
    if not result.impact.capacity:
        return
    yield "Capacity per card type (cards in the fleet; Σ nominal quota):"
    for row in result.impact.capacity:
        yield (
            f"  {row.card_type}: {c.number(row.before_cards)} -> {c.number(row.after_cards)} "
            f"cards; Σ quota {c.number(row.before_quota)} -> {c.number(row.after_quota)}"
        )


def _costs(result: DiffResult) -> Iterator[str]:
    if not result.impact.costs:
        return
    yield "Monthly cost per team:"
    for row in result.impact.costs:
        budget = ""
        if row.budget_after is not None or row.budget_before is not None:
            budget = (
                f"; budget {c.number(row.budget_before)} -> {c.number(row.budget_after)}, "
                f"headroom {c.number(c.headroom(row.before, row.budget_before))} -> "
                f"{c.number(c.headroom(row.after, row.budget_after))}"
            )
        yield (
            f"  {row.team}: {c.number(row.before)} -> {c.number(row.after)} {row.currency} "
            f"({c.signed(c.cost_delta(row))}){budget}"
        )


def _changes(result: DiffResult) -> Iterator[str]:
    if not result.impact.changes:
        return
    yield "Policy changes:"
    for change in result.impact.changes:
        flag = f"[{change.flag}] " if change.flag else ""
        yield f"  {flag}{change.topic} {change.subject}: {change.before} -> {change.after}"


def _drains(result: DiffResult) -> Iterator[str]:
    if not result.drains:
        return
    yield (
        f"MIG drain plan: {len(result.drains)} node(s) must be drained of GPU pods before "
        "mig-manager reconfigures them:"
    )
    for drain in result.drains:
        flip = " [MIG mode flips: GPU stack restarts]" if drain.mode_flip else ""
        yield (
            f"  ! Node {drain.node} (pool {drain.pool}) GPUs {c.gpus(drain.gpus)}: "
            f"{drain.before} -> {drain.after}{flip}"
        )


def _hazards(result: DiffResult) -> Iterator[str]:
    if not result.hazards:
        return
    yield "Day-2 hazards:"
    for hazard in result.hazards:
        yield f"  ! {hazard.rule}: {hazard.subject} {hazard.message}"
        yield f"      do: {hazard.action}"
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
    parts = [_quotas, _capacity, _costs, _changes, _drains, _hazards, _findings, _objects]
    return [lines for part in parts if (lines := list(part(result)))]


def render(result: DiffResult) -> str:
    lines = [f"hetgitops diff {result.base.label} -> {result.head.label}: {headline(result)}"]
    if result.ignored:
        lines.append(f"ignored: {', '.join(result.ignored)}")
    for section in sections(result):
        lines += ["", *section]
    return "\n".join(visible(line) for line in lines) + "\n"
