"""Diff reports, shared: the impact sections (capacity, cost, policy changes, MIG drains) built
once as rows of cells; `text` prints a row per line, `markdown` a table per section."""

from __future__ import annotations

from dataclasses import dataclass

from hetgitops.diff.formats import common as c
from hetgitops.diff.run import DiffResult

# A cell is a value, or a (before, after) pair each format joins with its own arrow.
Cell = str | tuple[str, str]


@dataclass(frozen=True)
class Column:
    """`name` heads the Markdown column; `label` prefixes the value in text ("" for none)."""

    name: str
    label: str = ""


@dataclass(frozen=True)
class Section:
    key: str  # what Markdown names in its list of sections cut to fit
    title: str
    columns: tuple[Column, ...]  # the first names the row
    rows: tuple[tuple[Cell, ...], ...]
    note: str = ""
    risky: bool = False


def joined(cell: Cell, arrow: str) -> str:
    return cell if isinstance(cell, str) else f"{cell[0]} {arrow} {cell[1]}"


def _pair(before: object, after: object) -> Cell:
    """Before and after; nothing when neither side has a value (`-`)."""
    return "" if before == after == "-" else (str(before), str(after))


def _capacity(result: DiffResult) -> Section:
    rows = tuple(
        (
            r.card_type,
            _pair(c.number(r.before_cards), c.number(r.after_cards)),
            _pair(c.number(r.before_quota), c.number(r.after_quota)),
        )
        for r in result.impact.capacity
    )
    columns = (
        Column("Card type"),
        Column("Capacity (cards)", "cards"),
        Column("Σ quota (cards)", "Σ quota"),
    )
    note = "cards in the fleet; Σ nominal quota"
    return Section("capacity", "Capacity per card type", columns, rows, note=note)


def _costs(result: DiffResult) -> Section:
    rows = tuple(
        (
            r.team,
            _pair(c.number(r.before), f"{c.number(r.after)} {r.currency}"),
            c.signed(c.cost_delta(r)),
            _pair(c.number(r.budget_before), c.number(r.budget_after)),
            _pair(
                c.number(c.headroom(r.before, r.budget_before)),
                c.number(c.headroom(r.after, r.budget_after)),
            ),
        )
        for r in result.impact.costs
    )
    columns = (
        Column("Team"),
        Column("Monthly cost"),
        Column("Δ", "Δ"),
        Column("Budget", "budget"),
        Column("Budget headroom", "headroom"),
    )
    return Section("cost", "Monthly cost per team", columns, rows)


def _changes(result: DiffResult) -> Section:
    changes = result.impact.changes
    rows = tuple(
        (f"{p.topic} {p.subject}", _pair(p.before, p.after), p.flag or "") for p in changes
    )
    columns = (Column("What"), Column("Change"), Column("Flag", "flag"))
    return Section("policy changes", f"Policy changes ({len(changes)})", columns, rows)


def _drains(result: DiffResult) -> Section:
    rows = tuple(
        (
            d.node,
            d.pool,
            c.gpus(d.gpus),
            "yes: the GPU stack restarts" if d.mode_flip else "no",
            _pair(d.before, d.after),
        )
        for d in result.drains
    )
    columns = (
        Column("Node"),
        Column("Pool", "pool"),
        Column("GPUs", "GPUs"),
        Column("MIG mode flip", "MIG mode flip"),
        Column("mig.config"),
    )
    note = (
        "each node must be cordoned and drained of GPU pods before mig-manager applies the new "
        "layout"
    )
    title = f"MIG drain plan, {len(rows)} node(s)"
    return Section("drain plan", title, columns, rows, note=note, risky=True)


def impact_sections(result: DiffResult) -> list[Section]:
    """The sections with rows, in report order."""
    built = (_capacity(result), _costs(result), _changes(result), _drains(result))
    return [s for s in built if s.rows]
