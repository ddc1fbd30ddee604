"""Drift stage: its report in one of the shared formats (reporting.FORMATTERS), titled for
drift, with what the run read from the cluster (objects, kinds, requests) in the text form."""

from __future__ import annotations

from hetgitops.drift.engine import DriftResult
from hetgitops.reporting import FORMATTERS, markdown

FORMATS = ("text", "json", "markdown", "github")


def render(found: DriftResult, output_format: str) -> str:
    if output_format == "markdown":
        return markdown.render(found.result, title="### hetgitops drift")
    text = FORMATTERS[output_format](found.result)
    if output_format == "text" and found.requests:
        text += (
            f"drift: read {found.objects} live object(s) ({found.kinds} kind(s) and the nodes) "
            f"in {found.requests} request(s)\n"
        )
    return text
