"""A policy that did not load, reported in the format a report command was asked for.

`capacity` and `explain` print their own reports; when the policy does not load there is
none, and the findings take its place on stdout in the requested format, as `validate`,
`diff` and `drift` print theirs: the diagnostics formatters for text, json and markdown, and
here CSV rows and a static, escaped HTML page for the formats only `capacity` offers."""

from __future__ import annotations

import html

from hetgitops.api import Result
from hetgitops.reporting import FORMATTERS, csvcells, markdown, text
from hetgitops.reporting.summary import summary_line

CSV_HEADER = ["file", "line", "column", "severity", "rule", "message", "hint"]


def render_csv(result: Result) -> str:
    """One row per finding; policy and file text defused for spreadsheets (`csvcells`)."""
    return csvcells.rows(
        CSV_HEADER,
        (
            [d.span.file, d.span.line, d.span.column, d.severity.label, d.rule, d.message, d.hint]
            for d in result.diagnostics
        ),
    )


def render_html(result: Result) -> str:
    """One static page; every word of the policy is escaped (a team named `<script>` is text)."""
    lines = [line for d in result.diagnostics for line in text.finding_lines(d)]
    body = html.escape("\n".join([*lines, summary_line(result)]))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>hetgitops: the policy has errors</title></head>\n"
        f"<body><h1>The policy has errors</h1>\n<pre>{body}</pre></body></html>\n"
    )


def render(result: Result, output_format: str) -> str:
    """The findings in `output_format` (a diagnostics formatter's key, `csv` or `html`)."""
    if output_format == "csv":
        return render_csv(result)
    if output_format == "html":
        return render_html(result)
    if output_format == "markdown":
        return markdown.render(result, title="### hetgitops: the policy has errors")
    return FORMATTERS[output_format](result)
