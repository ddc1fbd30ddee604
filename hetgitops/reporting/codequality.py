"""GitLab Code Quality JSON (`artifacts:reports:codequality`): one issue per finding, in MR diffs.

GitLab reads a subset of the Code Climate spec: an array of issues, each with `description`,
`check_name`, `fingerprint` (unique per issue: GitLab merges issues that share one),
`severity` (info, minor, major, critical, blocker) and `location.path` + `location.lines.begin`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hetgitops.api import Result
from hetgitops.diagnostics import NOWHERE, Diagnostic, Severity

# GitLab ranks blocker > critical > major > minor > info. An error blocks the merge gate
# (validate exits 1), so it is "major"; "critical"/"blocker" stay free for security tools.
_SEVERITIES = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def _path(d: Diagnostic, result: Result) -> str:
    # GitLab needs a path for every issue; a finding about the whole policy goes to its first file.
    if d.span.file != NOWHERE.file:
        return d.span.file
    return result.files[0] if result.files else "."


def _issue(d: Diagnostic, result: Result) -> dict[str, Any]:
    path = _path(d, result)
    line = max(d.span.line, 1)
    description = d.message + (f" (hint: {d.hint})" if d.hint else "")
    if d.consequence_of is not None:
        description += f" (follows from {d.consequence_of})"
    # Rule, place and message: two findings of one rule on one line stay two issues.
    identity = "\0".join((d.rule, path, str(line), str(d.span.column), d.message))
    issue: dict[str, Any] = {
        "type": "issue",
        "description": description,
        "check_name": f"hetgitops/{d.rule}",
        "fingerprint": hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32],
        # A consequence stays visible in the merge request but ranks as info: it goes away
        # with its cause and is not a second problem to fix.
        "severity": "info" if d.consequence_of is not None else _SEVERITIES[d.severity],
        "categories": ["Bug Risk"],
        "location": {"path": path, "lines": {"begin": line}},
    }
    others = [r.span for r in d.related if r.span.file != NOWHERE.file and r.span != d.span]
    if others:  # Code Climate's field for the other places an issue involves
        issue["other_locations"] = [
            {"path": s.file, "lines": {"begin": max(s.line, 1)}} for s in others
        ]
    return issue


def render(result: Result) -> str:
    return json.dumps([_issue(d, result) for d in result.diagnostics], indent=2) + "\n"
