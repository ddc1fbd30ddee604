"""GitLab Code Quality report: the shape GitLab documents for `artifacts:reports:codequality`
(https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format): an array of
issues with description, check_name, fingerprint, severity and location.path/lines.begin."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonschema

from hetgitops import api
from hetgitops.reporting import FORMATTERS

REPO = Path(__file__).resolve().parents[2]
GITLAB_SHAPE = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}


def test_every_invalid_case_gives_a_report_in_gitlab_shape_with_unique_fingerprints() -> None:
    cases = sorted((REPO / "tests/cases/invalid").glob("*/policy"))
    assert cases
    for policy in cases:
        result = api.validate([policy])
        issues = json.loads(FORMATTERS["codequality"](result))
        jsonschema.validate(issues, GITLAB_SHAPE)
        assert len(issues) == len(result.diagnostics) > 0
        # GitLab merges issues with one fingerprint: each finding must keep its own.
        assert len({i["fingerprint"] for i in issues}) == len(issues)
        for issue, finding in zip(issues, result.diagnostics, strict=True):
            assert issue["check_name"] == f"hetgitops/{finding.rule}"
            assert (REPO / issue["location"]["path"]).is_file() or Path(
                issue["location"]["path"]
            ).is_file()
            if finding.span.line > 0:
                assert issue["location"]["lines"]["begin"] == finding.span.line


def test_clean_policy_gives_an_empty_array() -> None:
    policy = REPO / "tests/cases/render/no-mig/policy"
    result = api.validate([policy], api.Options(now=dt.date(2026, 9, 1)))
    assert not result.diagnostics
    assert json.loads(FORMATTERS["codequality"](result)) == []


def test_errors_outrank_warnings() -> None:
    result = api.validate([REPO / "tests/cases/invalid/expired-pool/policy"])
    by_rule = {
        i["check_name"]: i["severity"] for i in json.loads(FORMATTERS["codequality"](result))
    }
    levels = {d.rule: d.severity.label for d in result.diagnostics}
    for rule, severity in by_rule.items():
        expected = {"error": "major", "warning": "minor", "info": "info"}[
            levels[rule.removeprefix("hetgitops/")]
        ]
        assert severity == expected
