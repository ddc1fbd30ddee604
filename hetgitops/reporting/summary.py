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
