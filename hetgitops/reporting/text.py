"""Compiler-style lines: `file:line:col: severity[rule]: message`, hints, a summary."""

from __future__ import annotations

import re

from hetgitops.api import Result
from hetgitops.reporting.summary import summary_line

# Policy text and file names reach a message; a terminal must not act on control characters
# (ESC, C1), and bidi overrides or line separators must not reorder or split what is shown.
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """Control characters as `\\xNN`; a line break continues the finding, indented."""
    shown = _CONTROL.sub(_escape, text)
    return shown.replace("\n", "\n    ")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def render(result: Result) -> str:
    lines = []
    for d in result.diagnostics:
        lines.append(visible(f"{d.span}: {d.severity.label}[{d.rule}]: {d.message}"))
        if d.hint:
            lines.append(visible(f"    hint: {d.hint}"))
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"
