"""SARIF 2.1.0 for code-scanning upload; rules come from the rule registry."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from hetgitops import __version__
from hetgitops.api import Result
from hetgitops.diagnostics import NOWHERE, Diagnostic, Severity, Span
from hetgitops.reporting.catalog import RuleInfo, known_rules

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://hetgitops.io"
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def render(result: Result) -> str:
    """Rule descriptions come from the rule registry, drift's ids included."""
    rules = known_rules({d.rule for d in result.diagnostics})
    index = {rule.id: i for i, rule in enumerate(rules)}
    run = {
        "tool": {"driver": _driver(rules)},
        # libyaml counts columns in characters, not bytes or UTF-16 units.
        "columnKind": "unicodeCodePoints",
        "results": [_result(d, index[d.rule]) for d in result.diagnostics],
    }
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _driver(rules: list[RuleInfo]) -> dict[str, Any]:
    return {
        "name": "hetgitops",
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [_rule(rule) for rule in rules],
    }


def _rule(rule: RuleInfo) -> dict[str, Any]:
    described: dict[str, Any] = {
        "id": rule.id,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.summary}\n\n{rule.details}".strip()},
        "defaultConfiguration": {"level": _LEVELS[rule.severity]},
    }
    return described


def _result(d: Diagnostic, rule_index: int) -> dict[str, Any]:
    cause = d.consequence_of
    text = d.message + (f"\nhint: {d.hint}" if d.hint else "")
    if cause is not None:
        text += f"\nThis follows from {cause}."
    found: dict[str, Any] = {
        "ruleId": d.rule,
        "ruleIndex": rule_index,
        # A consequence is shown, but as a note: code scanning must not count it as an alert
        # of its own beside the root cause.
        "level": "note" if cause is not None else _LEVELS[d.severity],
        "message": {"text": text},
    }
    if d.span.file != NOWHERE.file:
        found["locations"] = [_location(d.span)]
    related = [(r.span, r.message) for r in d.related if r.span.file != NOWHERE.file]
    if cause is not None and cause.span.file != NOWHERE.file:
        related.append((cause.span, f"root cause: {cause.rule}"))
    if related:
        found["relatedLocations"] = [
            _location(span, i, message) for i, (span, message) in enumerate(related, start=1)
        ]
    properties: dict[str, Any] = {}
    if d.path:
        properties["path"] = d.path
    if d.cluster:
        properties["cluster"] = d.cluster
    if cause is not None:
        properties["consequenceOf"] = {"ruleId": cause.rule, "location": str(cause.span)}
    if properties:
        found["properties"] = properties
    return found


def _location(span: Span, ident: int | None = None, message: str = "") -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(span.file)}}
    if span.line > 0:
        physical["region"] = {"startLine": span.line, "startColumn": max(span.column, 1)}
    location: dict[str, Any] = {"physicalLocation": physical}
    if ident is not None:
        location["id"] = ident
    if message:
        location["message"] = {"text": message}
    return location


def artifact_uri(file: str) -> str:
    """A relative path stays relative (code scanning resolves it against the checkout)."""
    path = PurePath(file)
    if path.is_absolute():
        return "file://" + quote(path.as_posix())
    return quote(path.as_posix())
