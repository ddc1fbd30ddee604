"""Compiler-style text: `file:line:col: severity[rule]: message`."""

from __future__ import annotations

from hetgitops.api import Result
from hetgitops.reporting.summary import summarize


def render(result: Result) -> str:
    lines = []
    for d in result.diagnostics:
        lines.append(f"{d.span}: {d.severity.label}[{d.rule}]: {d.message}")
        if d.hint:
            lines.append(f"    hint: {d.hint}")
    counts = summarize(result)
    lines.append(f"{counts['errors']} error(s), {counts['warnings']} warning(s) in "
                 f"{counts['files']} file(s), {counts['documents']} document(s)")
    return "\n".join(lines) + "\n"
