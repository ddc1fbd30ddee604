"""Compiler-style lines: `file:line:col: severity[rule]: message`, hints, a summary."""

from __future__ import annotations

from collections.abc import Callable

from hetgitops.api import Result
from hetgitops.diagnostics import Diagnostic, escape_controls
from hetgitops.reporting.grouping import grouped
from hetgitops.reporting.summary import summary_line


def visible(text: str) -> str:
    """Control characters as `\\xNN`; a line break continues the finding, indented."""
    return escape_controls(text).replace("\n", "\n    ")


def render(result: Result, *, verbose: bool = False) -> str:
    """The report; `verbose` adds an aggregate finding's `details` (a line per node)."""
    lines = []
    for group in grouped(result.diagnostics):
        lines.extend(finding_lines(group.root, verbose=verbose))
        # Findings that only follow from this one: notes under it, like a compiler's.
        for d in group.consequences:
            lines.append(visible(f"    {d.span}: note: consequence[{d.rule}]: {d.message}"))
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"


def finding_lines(
    d: Diagnostic, show: Callable[[str], str] = visible, *, verbose: bool = False
) -> list[str]:
    """The finding, its hint, and a `note:` line per related location, each through `show`;
    with `verbose`, a line per item of an aggregate finding (`details`)."""
    head = f"{d.span}: {d.severity.label}[{d.rule}]: {d.message}"
    if d.consequence_of is not None:  # its cause is not in this report
        head += f" (follows from {d.consequence_of})"
    lines = [show(head)]
    if d.hint:
        lines.append(show(f"    hint: {d.hint}"))
    for note in d.related:
        if note.message:
            lines.append(show(f"    {note.span}: note: {note.message}"))
    if verbose:
        lines += [show(f"    - {item}") for item in d.details]
    return lines
