"""GitHub Actions annotations: `::error file=...,line=...,col=...,title=rule::message`."""

from __future__ import annotations

from collections.abc import Sequence

from hetgitops.api import Result
from hetgitops.diagnostics import NOWHERE, Diagnostic, Severity
from hetgitops.reporting.grouping import grouped
from hetgitops.reporting.summary import summary_line

_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """The message part; same rules as @actions/core's escapeData."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A `key=value` property also loses `:` and `,`, which would end it early."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


# An annotation lists at most this many consequences; the JSON and SARIF reports list all.
MAX_LISTED = 10


def annotation(d: Diagnostic, consequences: Sequence[Diagnostic] = ()) -> str:
    """One annotation at the finding's primary location. Its other locations (the contributors
    of an aggregate finding) and the findings that follow from it are lines of the message:
    an annotation has one place, and the primary is the one the author can act on."""
    properties: list[tuple[str, object]] = []
    if d.span.file != NOWHERE.file:
        properties.append(("file", d.span.file))
    if d.span.line > 0:
        properties += [("line", d.span.line), ("col", d.span.column)]
    properties.append(("title", d.rule))
    joined = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    lines = [d.message]
    if d.consequence_of is not None:
        lines[0] += f" (follows from {d.consequence_of})"
    if d.hint:
        lines.append(f"hint: {d.hint}")
    lines += [f"note: {r.span}: {r.message}" for r in d.related if r.message]
    if consequences:
        lines.append(f"{len(consequences)} finding(s) follow from this one:")
        lines += [f"- {c.span}: {c.rule}: {c.message}" for c in consequences[:MAX_LISTED]]
        if len(consequences) > MAX_LISTED:
            lines.append(f"- and {len(consequences) - MAX_LISTED} more")
    command = "notice" if d.consequence_of is not None else _COMMANDS[d.severity]
    return f"::{command} {joined}::{escape_data(chr(10).join(lines))}"


def render(result: Result) -> str:
    lines = [annotation(g.root, g.consequences) for g in grouped(result.diagnostics)]
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"
