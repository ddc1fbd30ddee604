"""`{"diagnostics": [...], "summary": {...}}` for machines; the shape is public API."""

from __future__ import annotations

import json
from typing import Any

from hetgitops.api import Result
from hetgitops.diagnostics import Diagnostic
from hetgitops.reporting.summary import summarize


def diagnostic_dict(d: Diagnostic) -> dict[str, Any]:
    return {
        "rule": d.rule,
        "severity": d.severity.label,
        "message": d.message,
        "file": d.span.file,
        "line": d.span.line,
        "column": d.span.column,
        "path": d.path,
        "hint": d.hint,
    }


def render(result: Result) -> str:
    body = {
        "diagnostics": [diagnostic_dict(d) for d in result.diagnostics],
        "summary": summarize(result),
    }
    return json.dumps(body, indent=2, sort_keys=False) + "\n"
