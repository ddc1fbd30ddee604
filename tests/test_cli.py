"""CLI contract of `validate`, `schema` and `rules`: exit codes 0/1/2/3, formats, --strict."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from hetgitops import api
from hetgitops.checks import RULES
from hetgitops.cli import diff as diff_cli
from hetgitops.cli import jobs as jobs_cli
from hetgitops.cli import main as cli
from hetgitops.cli import render as render_cli
from hetgitops.cli import validate as validate_cli
from hetgitops.cli.common import format_option, output_dir_option
from hetgitops.diagnostics import Diagnostic, Severity, Span
from hetgitops.reporting import FORMATTERS

REPO = Path(__file__).resolve().parents[1]
CALM = "2026-09-01"  # no pool expires within the warning window
EXPIRING = "2027-03-20"  # the bundled a100-transition pool expires 11 days later
BROKEN_TIER = """\
apiVersion: hetgitops.io/v1alpha1
kind: PriorityTier
metadata: {name: gold}
spec: {value: high}
"""


def run(*args: str) -> Result:
    return CliRunner().invoke(cli.main, list(args))


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    (tmp_path / "tier.yaml").write_text(BROKEN_TIER)
    return tmp_path


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


# -- exit codes --------------------------------------------------------------------------------


def test_clean_policy_exits_0(in_repo: None) -> None:
    result = run("validate", "policies", "--now", CALM)
    assert result.exit_code == 0, result.output
    # The one warning: job-integration (PyTorchJob on Kueue 0.19), as `jobs` reports it too.
    assert "warning[job-integration]" in result.stdout
    assert "warning[kueue-volcano-share-pool]" in result.stdout  # ascend-910b: Kueue TAS + Volcano
    assert result.stdout.endswith("0 error(s), 2 warning(s) in 12 file(s), 35 document(s)\n")


def test_default_path_is_policies(in_repo: None) -> None:
    assert (
        run("validate", "--now", CALM).stdout == run("validate", "policies", "--now", CALM).stdout
    )


def test_findings_exit_1(broken: Path) -> None:
    result = run("validate", str(broken))
    assert result.exit_code == 1
    assert "error[schema]" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "--format", "yaml"],
        ["validate", "--now", "yesterday"],
        ["validate", "--now", "2026-02-30"],
        ["validate", "--no-such-option"],
        ["validate", "--crd-dir", "/no/such/dir"],
        ["no-such-command"],
        ["schema", "Deployment"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


def test_internal_error_exits_3_with_one_line_and_no_traceback(
    broken: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: object, **kwargs: object) -> api.Result:
        raise RuntimeError("boom\nwith a second line")

    monkeypatch.setattr(api, "validate", explode)
    monkeypatch.delenv("HETGITOPS_DEBUG", raising=False)
    result = run("validate", str(broken))
    assert result.exit_code == 3
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "internal error" in line and "RuntimeError: boom" in line and "please report" in line
    assert "Traceback" not in result.output


def test_internal_error_traceback_on_request(broken: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object, **kwargs: object) -> api.Result:
        raise RuntimeError("boom")

    monkeypatch.setattr(api, "validate", explode)
    monkeypatch.setenv("HETGITOPS_DEBUG", "1")
    result = run("validate", str(broken))
    assert result.exit_code == 3 and "Traceback" in result.stderr


def test_help_documents_exit_codes_and_formats() -> None:
    text = run("validate", "--help").stdout
    for code in ("0  clean", "1  findings", "2  usage error", "3  internal error"):
        assert code in text
    for name in FORMATTERS:
        assert f"\n    {name} " in text


def test_format_choices_come_from_the_registry() -> None:
    option = next(p for p in validate_cli.validate.params if p.name == "output_format")
    assert list(option.type.choices) == list(FORMATTERS)  # type: ignore[attr-defined]


# -- formats -----------------------------------------------------------------------------------


def parse(name: str, text: str) -> object:
    """Each machine format must parse as what it claims to be."""
    if name in ("json", "sarif"):
        return json.loads(text)
    if name == "junit":
        return ET.fromstring(text)
    return text.splitlines()


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_every_format_on_a_clean_policy(name: str, in_repo: None) -> None:
    result = run("validate", "policies", "--now", CALM, "--format", name)
    assert result.exit_code == 0, result.output
    assert parse(name, result.stdout)


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_every_format_on_a_failing_policy(name: str, broken: Path) -> None:
    result = run("validate", str(broken), "--format", name)
    assert result.exit_code == 1, result.output
    assert parse(name, result.stdout)
    assert "schema" in result.stdout


def test_json_report_locates_the_finding(broken: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(broken)
    body = json.loads(run("validate", "tier.yaml", "--format", "json").stdout)
    found = [(d["rule"], d["file"], d["line"], d["column"]) for d in body["diagnostics"]]
    assert found == [("schema", "tier.yaml", 4, 15)]


# -- warnings and --strict -----------------------------------------------------------------------


def test_warnings_pass_unless_strict(in_repo: None) -> None:
    relaxed = run("validate", "policies", "--now", EXPIRING)
    assert relaxed.exit_code == 0 and "warning[" in relaxed.stdout
    assert run("validate", "policies", "--now", EXPIRING, "--strict").exit_code == 1


def test_strict_with_warnings_from_any_source(
    broken: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warned = api.Result(
        [
            Diagnostic(
                rule="pool-expiring",
                severity=Severity.WARNING,
                message="careful",
                span=Span("a.yaml", 1, 1),
            )
        ],
        ["a.yaml"],
        1,
    )
    monkeypatch.setattr(api, "validate", lambda *args, **kwargs: warned)
    assert run("validate", str(broken)).exit_code == 0
    assert run("validate", str(broken), "--strict").exit_code == 1
    clean = api.Result([], ["a.yaml"], 1)
    monkeypatch.setattr(api, "validate", lambda *args, **kwargs: clean)
    assert run("validate", str(broken), "--strict").exit_code == 0


def test_now_is_passed_to_the_checks(in_repo: None) -> None:
    assert "pool-expiring" not in run("validate", "--now", CALM).stdout
    assert "pool-expiring" in run("validate", "--now", EXPIRING).stdout


# -- output to a closed pipe ---------------------------------------------------------------------


def test_closed_stdout_is_an_environment_error_not_a_bug() -> None:
    """Exit 4 (the report never reached anyone), not 3 and not a silent 0."""
    command = [sys.executable, "-c", "from hetgitops.cli.main import main; main()"]
    args = ["validate", str(REPO / "policies"), "--now", CALM, "--format", "sarif"]
    with subprocess.Popen(  # `with` closes the pipes: no ResourceWarning
        [*command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # the reader is gone before the report is written
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=120) == 4, stderr
    assert "Broken pipe" in stderr and "Traceback" not in stderr and "internal error" not in stderr


# -- rules -------------------------------------------------------------------------------------


def test_rules_lists_every_rule_once() -> None:
    lines = run("rules").stdout.splitlines()
    ids = [line.split()[0] for line in lines]
    assert len(ids) == len(set(ids))
    from hetgitops.diagnostics import RULE_REGISTRY
    from hetgitops.drift.findings import RULES as DRIFT_RULES

    assert set(RULES) | set(DRIFT_RULES) <= set(ids) == set(RULE_REGISTRY)
    assert {"schema", "job-template", "job-integration", "drift-changed"} <= set(ids)
    # Issue 7 item 9: the model stage's ids were emitted but not listed.
    assert {"node-range-invalid", "duplicate-singleton", "kueue-limits"} <= set(ids)


@pytest.mark.parametrize("command", ["validate", "render", "jobs"])
def test_a_policy_path_that_does_not_exist_is_a_usage_error(command: str, tmp_path: Path) -> None:
    """Issue 7 item 6: a typo in a path is exit 2 with click's message, never a finding (1)."""
    from click.testing import CliRunner

    from hetgitops.cli.main import main as entry

    result = CliRunner().invoke(entry, [command, str(tmp_path / "no-such-policy")])
    assert result.exit_code == 2, result.output
    assert "does not exist" in result.output


def _option(command: object, name: str) -> dict[str, object]:
    assert isinstance(command, click.Command)
    found = next(p for p in command.params if p.name == name)
    info = found.to_info_dict()
    info.pop("help", None)
    info.get("type", {}).pop("choices", None)  # each command lists its own formatters
    return info


def test_report_and_tree_commands_share_one_option_definition() -> None:
    @format_option(["text"])
    @output_dir_option("x")
    def reference(output_format: str, output: Path | None) -> None: ...

    built = click.command()(reference)
    for command in (validate_cli.validate, diff_cli.diff):
        assert _option(command, "output_format") == _option(built, "output_format")
    for command in (render_cli.render, jobs_cli.jobs):
        assert _option(command, "output") == _option(built, "output")


def test_rules_rule_prints_the_full_documentation() -> None:
    """Issue 7 item 9: `rules RULE` gives severity, stage, why, example and fix."""
    result = run("rules", "quota-exceeds-capacity")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[:3] == [
        "quota-exceeds-capacity",
        "  severity: error",
        "  stage:    check (semantic rules over the whole policy, hetgitops/checks/)",
    ]
    assert "kueue#2665" in result.output  # the rule's docstring body, not only its summary
    assert "  fails:  2 nodes x 8 cards" in result.output
    assert "  passes: the same pool" in result.output
    assert any(line.startswith("How to fix: ") for line in lines)
    assert max(map(len, lines)) <= 99
    model = run("rules", "node-range-invalid").output
    assert "stage:    model" in model and "How to fix: write ranges as" in model
    drift = run("rules", "drift-orphan").output
    assert "severity: error" in drift and "How to fix: delete the object" in drift


@pytest.mark.parametrize("rule", [*sorted(RULES), "schema", "mig-mode-flip"])
def test_rules_rule_works_for_every_rule(rule: str) -> None:
    result = run("rules", rule)
    assert result.exit_code == 0 and result.output.startswith(f"{rule}\n"), result.output


def test_rules_unknown_rule_is_a_usage_error_with_suggestions() -> None:
    result = run("rules", "node-range")
    assert result.exit_code == 2
    assert "no rule 'node-range'" in result.output
    assert "Did you mean: node-range-invalid" in result.output
    far = run("rules", "zzz")
    assert far.exit_code == 2 and "`hetgitops rules` lists them" in far.output
