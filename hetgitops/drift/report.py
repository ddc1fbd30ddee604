"""Drift stage: its report in one of the shared formats (reporting.FORMATTERS), titled for
drift, with what the run read from each cluster (objects, kinds, requests) in the text form."""

from __future__ import annotations

from hetgitops.drift.run import DriftResult
from hetgitops.reporting import FORMATTERS, markdown, sarif
from hetgitops.reporting import text as plain

FORMATS = ("text", "json", "markdown", "github", "sarif")


def render(found: DriftResult, output_format: str, *, verbose: bool = False) -> str:
    """The report; `verbose` (text only) adds a line per node under a pool's finding (JSON
    always carries them as `details`)."""
    if output_format == "markdown":
        return markdown.render(found.result, title="### hetgitops drift")
    if output_format == "sarif":
        return sarif.render(found.result)
    if output_format == "text":
        text = plain.render(found.result, verbose=verbose)
    else:
        text = FORMATTERS[output_format](found.result)
    if output_format == "text":
        for read in found.reads:
            where = f"{read.cluster} (context {read.context}): " if read.cluster else ""
            text += (
                f"drift: {where}read {read.objects} live object(s) ({read.kinds} kind(s) and "
                f"the nodes) in {read.requests} request(s)\n"
            )
    return text
