"""The library API keeps its contract: user mistakes come back as diagnostics, never raise."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from hetgitops import api, compilers
from hetgitops.compilers import CompileError
from hetgitops.diagnostics import Severity
from hetgitops.model.policy import Policy

POLICIES = Path(__file__).resolve().parents[1] / "policies"
NOW = dt.date(2026, 12, 1)


def test_a_compiler_refusal_is_a_diagnostic_at_the_fleet(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(policy: Policy) -> list[compilers.Manifest]:
        raise CompileError("the target would reject this")

    monkeypatch.setitem(compilers.COMPILERS, "core", refuse)
    result = api.render([POLICIES], api.Options(now=NOW))
    assert result.failed() and result.manifests == []
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    found = [(d.rule, d.span.file.endswith("fleet.yaml"), d.span.line) for d in errors]
    assert found == [("compile-error", True, 3)]


def test_forced_volcano_target_with_conflicting_plugins_is_exit_1(tmp_path: Path) -> None:
    for source in POLICIES.rglob("*.yaml"):
        target = tmp_path / source.relative_to(POLICIES)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.read_text())
    fleet = tmp_path / "fleet.yaml"
    text = fleet.read_text().replace("queuePlugin: capacity", "queuePlugin: proportion")
    fleet.write_text(text.replace("targets: [core, kueue, volcano,", "targets: [core, kueue,"))
    result = api.render([tmp_path], api.Options(now=NOW, targets=("volcano",)))
    errors = [d.rule for d in result.diagnostics if d.severity is Severity.ERROR]
    assert errors == ["volcano-plugin-conflict"]
    assert result.manifests == []


def test_pool_expired_is_a_warning_for_render_and_jobs_but_fails_validate() -> None:
    """The nodes of an expired pool stay in the cluster until the policy changes: render keeps
    Argo CD syncing; validate (the CI gate) still fails."""
    options = api.Options(now=dt.date(2027, 6, 1))  # the bundled a100 pool expires 2027-03-31
    found = api.validate([POLICIES], options).diagnostics
    assert [(d.rule, d.severity) for d in found] == [
        ("pool-expired", Severity.ERROR),
        ("kueue-volcano-share-pool", Severity.WARNING),  # ascend-910b: Kueue TAS + Volcano
        ("job-integration", Severity.WARNING),  # PyTorchJob on Kueue 0.19, any day
    ]
    for result in (api.render([POLICIES], options), api.jobs([POLICIES], options)):
        expired = [d for d in result.diagnostics if d.rule == "pool-expired"]
        assert [(d.severity, d.span.line) for d in expired] == [(Severity.WARNING, 37)]
        assert not result.failed() and result.manifests


def test_render_warnings_can_be_turned_off() -> None:
    options = api.Options(now=dt.date(2027, 6, 1), render_warnings=frozenset())
    result = api.render([POLICIES], options)
    assert result.failed() and result.manifests == []
