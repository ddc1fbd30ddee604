"""A Markdown table of findings for pull-request comments."""

from __future__ import annotations

import re

from hetgitops.api import Result
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.reporting.grouping import grouped
from hetgitops.reporting.summary import summarize

TITLE = "### hetgitops validate"
# \u2139 is the information source emoji (written escaped: it looks like a plain letter i).
_ICONS = {Severity.ERROR: "❌", Severity.WARNING: "⚠️", Severity.INFO: "\u2139\ufe0f"}
_MARKUP = re.compile(r"([\\`*_\[\]|~#])")
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
# `@name` in a PR comment pings a user or team: a zero-width space after the @ keeps the text
# and drops the ping.
_MENTION = re.compile(r"(?<![\w.])@(?=[A-Za-z0-9])")


def _no_mentions(text: str) -> str:
    return _MENTION.sub("@\u200b", text)


def text_cell(text: str) -> str:
    """Plain text in a table cell: no markup, no HTML, no cell or row breaks."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _no_mentions(_CONTROL.sub("", _MARKUP.sub(r"\\\1", text))).replace("\n", "<br>")


def code_cell(text: str) -> str:
    """A code span: markup is inert there, but `|` still ends a cell and a backtick the span."""
    text = _CONTROL.sub("", text.replace("`", "'").replace("|", "\\|").replace("\n", " "))
    return f"`{text}`"


def _row(d: Diagnostic) -> str:
    message = text_cell(d.message)
    if d.hint:
        message += f"<br>_hint: {text_cell(d.hint)}_"
    for note in d.related:
        if note.message:
            message += f"<br>note: {code_cell(str(note.span))} {text_cell(note.message)}"
    icon = _ICONS[d.severity]
    if d.consequence_of is not None:  # listed under its cause, not counted on its own
        icon = "↳"
        message = f"_follows from {code_cell(str(d.consequence_of))}:_ {message}"
    return f"| {icon} | {code_cell(str(d.span))} | {code_cell(d.rule)} | {message} |"


def _summary(result: Result) -> str:
    counts = summarize(result)
    icon = "❌" if counts["errors"] else "⚠️" if counts["warnings"] else "✅"
    return (
        f"{icon} **{counts['errors']} error(s), {counts['warnings']} warning(s)** in "
        f"{counts['files']} file(s), {counts['documents']} document(s)"
    )


def render(result: Result, /, *, title: str = TITLE) -> str:
    lines = [title, ""]
    if result.diagnostics:
        lines += ["| | Location | Rule | Message |", "|---|---|---|---|"]
        lines += [_row(d) for g in grouped(result.diagnostics) for d in (g.root, *g.consequences)]
        lines.append("")
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"
