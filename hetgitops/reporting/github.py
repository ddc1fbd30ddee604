"""GitHub Actions annotations: `::error file=...,line=...,col=...,title=rule::message`."""

from __future__ import annotations

from hetgitops.api import Result
from hetgitops.diagnostics import NOWHERE, Diagnostic, Severity
from hetgitops.reporting.summary import summary_line

_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """The message part; same rules as @actions/core's escapeData."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A `key=value` property also loses `:` and `,`, which would end it early."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic) -> str:
    properties: list[tuple[str, object]] = []
    if d.span.file != NOWHERE.file:
        properties.append(("file", d.span.file))
    if d.span.line > 0:
        properties += [("line", d.span.line), ("col", d.span.column)]
    properties.append(("title", d.rule))
    joined = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    message = d.message + (f"\nhint: {d.hint}" if d.hint else "")
    return f"::{_COMMANDS[d.severity]} {joined}::{escape_data(message)}"


def render(result: Result) -> str:
    lines = [annotation(d) for d in result.diagnostics]
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"
