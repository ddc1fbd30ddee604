"""Compiler-style lines: `file:line:col: severity[rule]: message`, hints, a summary."""

from __future__ import annotations

import re

from hetgitops.api import Result
from hetgitops.reporting.summary import summary_line

# Policy text can reach a message; a terminal must not act on its control characters (ESC...).
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f]")


def visible(text: str) -> str:
    """Control characters as `\\xNN`; a line break continues the finding, indented."""
    shown = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return shown.replace("\n", "\n    ")


def render(result: Result) -> str:
    lines = []
    for d in result.diagnostics:
        lines.append(visible(f"{d.span}: {d.severity.label}[{d.rule}]: {d.message}"))
        if d.hint:
            lines.append(visible(f"    hint: {d.hint}"))
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"
