"""Diff reports, shared: how numbers, values and field changes read in every format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from hetgitops.diff.impact import Amount, CostRow, QuotaRow
from hetgitops.diff.objects import ObjectChange
from hetgitops.diff.run import DiffResult
from hetgitops.diff.structure import FieldChange, dotted

MAX_VALUE_CHARS = 160


def number(value: Fraction | float | int | None) -> str:
    """Whole numbers plain, others to two decimals; `-` for absent."""
    if value is None:
        return "-"
    if isinstance(value, Fraction) and value.denominator == 1:
        return f"{value.numerator:,}"
    if isinstance(value, int):
        return f"{value:,}"
    rounded = round(float(value), 2)
    return f"{rounded:,.0f}" if rounded == int(rounded) else f"{rounded:,.2f}"


def signed(value: Fraction | float | None) -> str:
    if value is None:
        return "-"
    shown = number(value)
    return shown if shown.startswith("-") or shown == "0" else f"+{shown}"


def percent(before: Fraction | float | None, after: Fraction | float | None) -> str:
    if before is None or after is None:
        return "new" if before is None and after else "gone" if after is None else "-"
    if before == 0:
        return "new" if after else "0%"
    change = (Fraction(after) - Fraction(before)) / Fraction(before) * 100
    return f"{'+' if change > 0 else ''}{float(change):.1f}%"


def delta(before: Fraction | float | None, after: Fraction | float | None) -> Fraction | None:
    if before is None and after is None:
        return None
    return Fraction(after or 0) - Fraction(before or 0)


def cards(amount: Amount | None) -> Fraction | None:
    return amount.cards if amount else None


def normalized(amount: Amount | None) -> Fraction | None:
    return amount.normalized if amount else None


def reach(amount: Amount | None) -> Fraction | None:
    return amount.reach if amount else None


def per_resource(before: Amount | None, after: Amount | None, field: str, arrow: str = "->") -> str:
    """`whole 16 -> 12, mig 1g.10gb 42 -> 42`: one resource's `nominal` or `reach` on both
    sides, in its own units (whole GPUs, MIG instances and replicas are never added up);
    resources at 0 on both sides are left out."""
    rows: dict[str, list[int]] = {}
    for side, amount in enumerate((before, after)):
        for r in amount.resources if amount else ():
            rows.setdefault(r.label, [0, 0])[side] = getattr(r, field)
    parts = [f"{label} {b} {arrow} {a}" for label, (b, a) in rows.items() if b or a]
    return ", ".join(parts) or "0"


def host_change(before: Amount | None, after: Amount | None, arrow: str = "->") -> str:
    """`cpuPerCard 12 -> 16, hostLimits true -> false`: what the flavor's cpu and memory
    quota follow, where the two sides differ ("" when alike, or one side has no quota)."""
    if before is None or after is None or before.host is None or after.host is None:
        return ""
    b, a = before.host, after.host
    parts = [
        f"{label} {old} {arrow} {new}"
        for label, old, new in (
            ("cpuPerCard", b.cpu_per_card, a.cpu_per_card),
            ("memoryPerCard", b.memory_per_card, a.memory_per_card),
            ("hostLimits", str(b.host_limits).lower(), str(a.host_limits).lower()),
        )
        if old != new
    ]
    return ", ".join(parts)


def cost_delta(row: CostRow) -> float | None:
    if row.before is None and row.after is None:
        return None
    return (row.after or 0.0) - (row.before or 0.0)


def headroom(cost: float | None, budget: float | None) -> float | None:
    return None if cost is None or budget is None else budget - cost


def team_cost_delta(result: DiffResult, row: QuotaRow) -> str:
    """The team's whole monthly cost change, shown on its quota rows."""
    found = next((c for c in result.impact.costs if c.team == row.team), None)
    return signed(cost_delta(found)) if found else "0"


def value(value: Any) -> str:
    """A value on one line (JSON-ish), cut at MAX_VALUE_CHARS so one list cannot flood."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=False, default=str)
    text = text.replace("\n", "\\n")
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def field_lines(change: FieldChange) -> Iterator[tuple[str, str]]:
    """(sign, text) lines of one field change: `-` old, `+` new, `~` for a move."""
    path = change.dotted
    if change.op == "add":
        yield "+", f"{path}: {value(change.after)}"
    elif change.op == "remove":
        yield "-", f"{path}: {value(change.before)}"
    elif change.op == "order":
        yield "~", f"{path}: order {value(change.before)} -> {value(change.after)}"
    else:
        yield "-", f"{path}: {value(change.before)}"
        yield "+", f"{path}: {value(change.after)}"


def object_lines(change: ObjectChange) -> Iterator[tuple[str, str]]:
    """What changed inside one object; ConfigMap data keys that hold YAML show field by field."""
    if change.op in ("added", "removed"):
        return
    for field in change.fields:
        embedded = change.embedded.get(_data_key(field) or "")
        if embedded is not None:
            for inner in embedded:
                for sign, line in field_lines(inner):
                    yield sign, f"data.{_data_key(field)} | {line}"
            continue
        yield from field_lines(field)


def _data_key(field: FieldChange) -> str | None:
    if len(field.path) == 2 and field.path[0] == "data" and isinstance(field.path[1], str):
        return field.path[1]
    return None


SIGNS = {"added": "+", "removed": "-", "changed": "~", "renamed": "→"}


def by_target(objects: list[ObjectChange]) -> dict[str, list[ObjectChange]]:
    """Changes per target, per `<cluster>/<target>` in a multi-cluster fleet."""
    grouped: dict[str, list[ObjectChange]] = {}
    for change in objects:
        grouped.setdefault(change.place, []).append(change)
    return grouped


def team_pool(row: QuotaRow) -> str:
    """`team / pool`, after `cluster: ` in a multi-cluster fleet."""
    return f"{row.cluster}: {row.team} / {row.pool}" if row.cluster else f"{row.team} / {row.pool}"


def counts(objects: list[ObjectChange]) -> str:
    ops = {op: sum(1 for c in objects if c.op == op) for op in SIGNS}
    return ", ".join(f"{n} {op}" for op, n in ops.items() if n) or "none"


def gpus(indices: tuple[int, ...]) -> str:
    return ", ".join(map(str, indices)) if indices else "all"


__all__ = ["dotted"]
