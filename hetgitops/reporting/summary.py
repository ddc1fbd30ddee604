"""Counts shared by every report format."""

from __future__ import annotations

from hetgitops.api import Result
from hetgitops.diagnostics import Severity, independent


def summarize(result: Result) -> dict[str, int]:
    """Counts of independent findings by severity; `consequences` counts the findings that only
    follow from another one (shown under it, never counted twice)."""
    by_severity = {s: 0 for s in Severity}
    for d in independent(result.diagnostics):
        by_severity[d.severity] += 1
    return {
        "errors": by_severity[Severity.ERROR],
        "warnings": by_severity[Severity.WARNING],
        "infos": by_severity[Severity.INFO],
        "consequences": len(result.diagnostics) - sum(by_severity.values()),
        "files": len(result.files),
        "documents": result.documents,
    }


def summary_line(result: Result) -> str:
    """`2 error(s), 1 warning(s) in 11 file(s), 32 document(s)`: the last line of text reports
    (with `, 18 consequence(s)` after the warnings when some findings follow from others)."""
    counts = summarize(result)
    following = f", {counts['consequences']} consequence(s)" if counts["consequences"] else ""
    return (
        f"{counts['errors']} error(s), {counts['warnings']} warning(s){following} in "
        f"{counts['files']} file(s), {counts['documents']} document(s)"
    )
