"""`{"diagnostics": [...], "summary": {...}}` for machines; the shape is public API."""

from __future__ import annotations

import json
from typing import Any

from hetgitops.api import Result
from hetgitops.diagnostics import Diagnostic
from hetgitops.reporting.summary import summarize


def diagnostic_dict(d: Diagnostic) -> dict[str, Any]:
    """One finding. `related` lists the other places it involves (every contributor of an
    aggregate finding, its primary location included); `consequence_of` names the earlier
    finding it follows from (rule and location), or is null for an independent finding;
    `cluster`, present only in multi-cluster drift reports, the cluster it was found on;
    `details`, present only on an aggregate drift finding, its items (a line per node)."""
    cause = d.consequence_of
    found: dict[str, Any] = {
        "rule": d.rule,
        "severity": d.severity.label,
        "message": d.message,
        "file": d.span.file,
        "line": d.span.line,
        "column": d.span.column,
        "path": d.path,
        "hint": d.hint,
        "related": [
            {
                "file": r.span.file,
                "line": r.span.line,
                "column": r.span.column,
                "path": r.path,
                "message": r.message,
            }
            for r in d.related
        ],
        "consequence_of": None
        if cause is None
        else {
            "rule": cause.rule,
            "file": cause.span.file,
            "line": cause.span.line,
            "column": cause.span.column,
        },
    }
    if d.cluster:  # multi-cluster drift only: other reports keep their shape
        found["cluster"] = d.cluster
    if d.details:  # an aggregate drift finding's items (a line per node)
        found["details"] = list(d.details)
    return found


def render(result: Result) -> str:
    body = {
        "diagnostics": [diagnostic_dict(d) for d in result.diagnostics],
        "summary": summarize(result),
    }
    return json.dumps(body, indent=2, sort_keys=False) + "\n"
