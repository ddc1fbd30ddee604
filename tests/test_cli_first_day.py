"""What a first day meets (issue 22 item 14): help texts that say what is true of the command,
a render that says what it wrote, a folder without policies/, a broken kubeconfig named, and a
README quick start that works on a system Python that refuses `pip install`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hetgitops.cli import main as cli

REPO = Path(__file__).resolve().parents[1]


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="hetgitops", env=env)


def test_validate_help_names_no_cluster_for_exit_4() -> None:
    text = run("validate", "--help").output
    assert "4  environment error" in text and "cluster" not in text.lower()


def test_drift_help_carries_no_project_history() -> None:
    text = run("drift", "--help").output
    assert "4  environment error" in text
    assert "The issue that asked" not in text and "proposed exit 3" not in text


def test_render_output_says_what_it_wrote(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("render", str(REPO / "policies"), "--now", "2026-09-01", "--output", str(out))
    assert result.exit_code == 0, result.output
    files = [p for p in out.rglob("*") if p.is_file() and p.name != ".hetgitops-output"]
    assert result.stdout == ""
    assert f"hetgitops: wrote 73 object(s) in {len(files)} file(s) to {out}" in result.stderr


@pytest.mark.parametrize("command", ["validate", "render"])
def test_no_policies_folder_is_a_usage_error_with_a_hint(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(command)
    assert result.exit_code == 2, result.output
    assert "no policies/ folder here" in result.stderr
    assert f"hetgitops {command} path/to/policies" in result.stderr


def test_a_broken_kubeconfig_is_named_exit_4(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("clusters: [\n")
    result = run("drift", str(REPO / "policies"), "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 4, result.output
    assert f"the kubeconfig {kubeconfig} is not valid YAML" in result.stderr
    missing = tmp_path / "missing"
    result = run("drift", str(REPO / "policies"), env={"KUBECONFIG": str(missing)})
    assert result.exit_code == 4, result.output
    assert f"kubeconfig {missing}" in result.stderr


def test_the_quick_start_creates_a_virtual_environment_first() -> None:
    readme = (REPO / "README.md").read_text()
    start = readme.index("## Quick start")
    venv, install = (
        readme.find("python3 -m venv", start),
        readme.find("python3 -m pip install", start),
    )
    assert 0 <= venv < install


def test_rules_format_json_is_the_catalogue_for_tooling() -> None:
    import json

    listed = json.loads(run("rules", "--format", "json").stdout)
    assert {"id", "severity", "stage", "summary", "why", "fails", "passes", "fix"} == set(listed[0])
    by_id = {r["id"]: r for r in listed}
    assert by_id["duplicate-name"]["stage"] == "load"
    one = json.loads(run("rules", "tier-preemptible-above", "--format", "json").stdout)
    assert one == by_id["tier-preemptible-above"] and one["severity"] == "warning"
    assert one["fix"].startswith("give the preemptible tier a value below")
