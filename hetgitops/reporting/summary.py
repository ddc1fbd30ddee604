"""Counts shared by every report format."""

from __future__ import annotations

from hetgitops.api import Result
from hetgitops.diagnostics import Severity


def summarize(result: Result) -> dict[str, int]:
    by_severity = {s: 0 for s in Severity}
    for d in result.diagnostics:
        by_severity[d.severity] += 1
    return {
        "errors": by_severity[Severity.ERROR],
        "warnings": by_severity[Severity.WARNING],
        "infos": by_severity[Severity.INFO],
        "files": len(result.files),
        "documents": result.documents,
    }


def summary_line(result: Result) -> str:
    """`2 error(s), 1 warning(s) in 11 file(s), 32 document(s)`: the last line of text reports."""
    counts = summarize(result)
    return (
        f"{counts['errors']} error(s), {counts['warnings']} warning(s) in "
        f"{counts['files']} file(s), {counts['documents']} document(s)"
    )
