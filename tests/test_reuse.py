"""diff's head takes the node-level rules' findings and targets' manifests from its base
(hetgitops.checks.reuse) when it reads the very same Fleet, LabelTaxonomy, CardType and Pool data.
That is only right if those rules and targets read nothing else: every policy the tests hold
must give the same node-level results from those documents alone. And a diff that shares must
report what two separate analyses report, each finding at its own side's file."""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hetgitops import api, checks, compilers
from hetgitops.checks.reuse import NODE_KINDS, NODE_RULES, NODE_TARGETS, NodeReuse
from hetgitops.diagnostics import Diagnostic, Severity, Span
from hetgitops.diff.run import compare
from hetgitops.load.documents import ParseMemo, load_paths, load_sources
from hetgitops.load.git_source import select_sides
from hetgitops.model import schema
from hetgitops.model.building import build_policy
from tests.diff.test_shared_checks import separate_analyses, shared_diff

REPO = Path(__file__).resolve().parents[1]
NOW = dt.date(2026, 9, 1)
POLICY_DIRS = [REPO / "policies", *sorted((REPO / "tests" / "cases").glob("*/*/policy"))]
LABELS = REPO / "tests" / "cases" / "invalid" / "label-violations" / "policy"


def _whole_models() -> Iterator[Any]:
    """Each test policy whose documents all load and pass the schema, with one cluster: the
    only policies diff shares node-level results for."""
    for folder in POLICY_DIRS:
        loaded = load_paths([folder])
        problems = schema.check_documents(loaded.documents)
        if loaded.losses or any(problems) or any(d.kind == "Cluster" for d in loaded.documents):
            continue
        yield pytest.param(loaded.documents, id=str(folder.relative_to(REPO)))


WHOLE = list(_whole_models())


def test_enough_policies_are_whole() -> None:
    assert len(WHOLE) >= 10  # the property below is checked on many policies, not none


@pytest.mark.parametrize("documents", WHOLE)
def test_node_level_results_read_only_node_level_documents(documents: list[Any]) -> None:
    full, _ = build_policy(documents, [])
    nodes_only, _ = build_policy([d for d in documents if d.kind in NODE_KINDS], [])
    context = checks.CheckContext(NOW)
    for rule in sorted(NODE_RULES):
        function = checks.RULES[rule].function
        assert list(function(full, context)) == list(function(nodes_only, context)), rule
    for target in sorted(NODE_TARGETS):
        compiler = compilers.COMPILERS[target]
        assert compiler(full) == compiler(nodes_only), target


def _key(d: Diagnostic) -> tuple[object, ...]:
    return (d.rule, int(d.severity), d.message, d.span, d.path, d.related, d.consequence_of)


def _sides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: Path) -> None:
    """`base` and `head`: `source` twice, head's teams changed (a new team quota line)."""
    shutil.copytree(source, tmp_path / "base")
    shutil.copytree(source, tmp_path / "head")
    teams = next((tmp_path / "head").glob("teams*.yaml"), None) or next(
        (tmp_path / "head").glob("teams/*.yaml")
    )
    text = teams.read_text(encoding="utf-8")
    teams.write_text(text.replace("description:", "description: Changed.", 1), encoding="utf-8")
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("source", [LABELS, REPO / "policies"], ids=["label-findings", "bundled"])
def test_a_reusing_diff_reports_what_two_analyses_report(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sides(tmp_path, monkeypatch, source)
    calls: list[str] = []
    for rule in NODE_RULES:
        registered = checks.RULES[rule]

        def counted(policy: Any, ctx: Any, _f: Any = registered.function, _r: str = rule) -> Any:
            calls.append(_r)
            return _f(policy, ctx)

        monkeypatch.setitem(checks.RULES, rule, dataclasses.replace(registered, function=counted))
    options = api.Options(now=NOW)
    _, result = shared_diff(tmp_path, options)
    assert sorted(calls) == sorted(NODE_RULES)  # once each, for base only: head took them
    _, alone = separate_analyses(options)
    for side, separate in zip((result.base, result.head), alone, strict=True):
        assert list(map(_key, side.result.diagnostics)) == list(map(_key, separate.diagnostics))
        assert side.result.manifests == separate.manifests
    node_findings = [d for d in result.head.result.diagnostics if d.rule in NODE_RULES]
    if source == LABELS:
        assert node_findings and all(d.span.file.startswith("head/") for d in node_findings)
    else:  # bundled renders: head's Node plans are base's objects, at head's lines
        plans = [m for m in result.head.result.manifests if m.kind == "Node"]
        before = {m.name: m for m in result.base.result.manifests if m.kind == "Node"}
        assert plans and all(m.obj is before[m.name].obj for m in plans)
        assert all(m.origin.file.startswith("head/") for m in plans)


def test_a_changed_pool_is_analysed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(LABELS, tmp_path / "base")
    shutil.copytree(LABELS, tmp_path / "head")
    pools = tmp_path / "head" / "pools.yaml"
    text = pools.read_text(encoding="utf-8")
    assert "purpose: batch" in text
    pools.write_text(text.replace("purpose: batch", "purpose: training"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    sides = select_sides(
        [], base=None, head=None, base_dir=Path("base"), head_dir=Path("head"), cwd=tmp_path
    )
    result = compare(*sides, api.Options(now=NOW))
    said = [d.message for d in result.resolved]
    assert any("'batch' is not an allowed value" in m for m in said), said


def test_a_finding_that_spells_out_a_base_location_is_computed_again() -> None:
    files = [(f"base/{p.name}", p.read_bytes()) for p in sorted(LABELS.glob("*.yaml"))]
    memo = ParseMemo()
    base = load_sources(files, memo)
    head = load_sources([(name.replace("base/", "head/"), raw) for name, raw in files], memo)
    reuse = NodeReuse()
    record = reuse.taken(base.documents, base.files, NOW).record
    assert record is reuse
    at = Span("base/pools.yaml", 11, 7)
    reuse.rules["label-missing"] = [
        Diagnostic(rule="label-missing", severity=Severity.ERROR, message="no rack", span=at)
    ]
    reuse.rules["label-value-invalid"] = [
        Diagnostic(
            rule="label-value-invalid", severity=Severity.ERROR, message=f"as at {at}", span=at
        )
    ]
    taken = reuse.taken(head.documents, head.files, NOW)
    assert taken.record is None
    assert [d.span for d in taken.rules["label-missing"]] == [Span("head/pools.yaml", 11, 7)]
    assert "label-value-invalid" not in taken.rules  # its text names a base file
    assert not reuse.taken(head.documents, head.files, dt.date(2026, 9, 2)).rules  # another day
