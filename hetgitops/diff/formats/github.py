"""GitHub Actions: introduced findings and hazards as annotations on the head's lines, then text."""

from __future__ import annotations

from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.diff.formats import text
from hetgitops.diff.run import DiffResult
from hetgitops.reporting.github import annotation


def render(result: DiffResult) -> str:
    lines = [annotation(d) for d in result.introduced]
    for hazard in result.hazards:
        as_finding = Diagnostic(
            rule=hazard.rule,
            severity=Severity.WARNING,
            message=f"{hazard.subject} {hazard.message}"
            + (f" ({hazard.live})" if hazard.live else ""),
            span=hazard.span,
            hint=hazard.action,
        )
        lines.append(annotation(as_finding))
    return "\n".join(lines) + ("\n" if lines else "") + text.render(result)
