"""`hetgitops render`: stdout stream, --output tree, --check, exit codes, apply order."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from hetgitops.cli.main import main

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "cases" / "render"
NOW = ["--now", "2026-09-01"]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["render", *args], catch_exceptions=False)


def _kinds(stream: str) -> list[tuple[str, str]]:
    return [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(stream) if d]


def test_stdout_is_only_the_yaml_stream() -> None:
    result = run(str(REPO / "policies"), *NOW)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("---\n")
    documents = list(yaml.safe_load_all(result.stdout))
    assert all(isinstance(d, dict) and d["apiVersion"] and d["kind"] for d in documents)
    assert "error(s)" not in result.stdout


def test_stream_applies_in_dependency_order() -> None:
    kinds = _kinds(run(str(REPO / "policies"), *NOW).stdout)
    order = [kind for kind, _ in kinds]
    assert order.index("Namespace") == 0
    assert max(i for i, k in enumerate(order) if k == "Namespace") < order.index("ResourceQuota")
    assert max(i for i, k in enumerate(order) if k == "Cohort") < order.index("ClusterQueue")
    # Volcano Queues are all children of root (no order among them is needed).
    assert "pretraining-a800-train" in [name for kind, name in kinds if kind == "Queue"]
    cohorts = [name for kind, name in kinds if kind == "Cohort"]
    assert cohorts[0] == "ai-centre"  # the root before its children


def test_target_option_limits_the_output() -> None:
    result = run(str(REPO / "policies"), *NOW, "--target", "volcano")
    assert result.exit_code == 0, result.stderr
    assert {kind for kind, _ in _kinds(result.stdout)} == {"ConfigMap", "Queue"}


def test_invalid_policy_renders_nothing(tmp_path: Path) -> None:
    shutil.copytree(CASES / "kueue-only" / "policy", tmp_path / "policy")
    teams = tmp_path / "policy" / "teams.yaml"
    teams.write_text(
        teams.read_text().replace("pool: l40s-infer, cards: 8}", "pool: nope, cards: 8}")
    )
    result = run(str(tmp_path / "policy"), *NOW)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "nothing was rendered" in result.stderr


def test_empty_render_is_refused(tmp_path: Path) -> None:
    """No applied object (non-applied Helm values alone would count as empty too)."""
    shutil.copytree(CASES / "isolated-pool" / "policy", tmp_path / "policy")
    # Keep only the Ascend pool: the GPU Operator target then has nothing to configure.
    pools = tmp_path / "policy" / "pools.yaml"
    ascend = pools.read_text().split("---")[0]
    # Untainted: the GPU Operator's bundled NFD would not tolerate it (agent-untolerated-taint).
    pools.write_text(
        "\n".join(x for x in ascend.splitlines() if "taint" not in x and "{key:" not in x) + "\n"
    )
    teams = tmp_path / "policy" / "teams.yaml"
    kept = [line for line in teams.read_text().splitlines() if "h100-shared" not in line]
    teams.write_text("\n".join(kept) + "\n")
    fleet = tmp_path / "policy" / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace("[core, kueue, volcano, nodes]", "[gpu-operator]"))
    result = run(str(tmp_path / "policy"), *NOW)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "refusing to emit an empty render" in result.stderr
    out = tmp_path / "out"
    assert run(str(tmp_path / "policy"), *NOW, "--output", str(out)).exit_code == 1
    assert not out.exists()


def test_output_tree_and_check(tmp_path: Path) -> None:
    policy, out = str(CASES / "volcano-only" / "policy"), tmp_path / "out"
    assert run(policy, *NOW, "--output", str(out)).exit_code == 0
    assert (out / "kustomization.yaml").is_file()
    assert (out / "volcano" / "queue-alpha-h100-train.yaml").is_file()
    plan = yaml.safe_load_all((out / "nodes" / "plan" / "nodes-h100-train.yaml").read_text())
    assert "h100-01" in [node["metadata"]["name"] for node in plan]  # a pool's nodes, one file
    resources = yaml.safe_load((out / "kustomization.yaml").read_text())["resources"]
    assert all((out / r).is_file() for r in resources)

    result = run(policy, *NOW, "--output", str(out), "--check")
    assert (result.exit_code, result.stdout) == (0, "")

    (out / "volcano" / "queue-alpha-h100-train.yaml").write_text("tampered\n")
    (out / "core" / "namespace-alpha.yaml").unlink()
    (out / "leftover.yaml").write_text("kind: Old\n")
    result = run(policy, *NOW, "--output", str(out), "--check")
    assert result.exit_code == 1
    assert f"{out / 'volcano' / 'queue-alpha-h100-train.yaml'}: stale" in result.stderr
    assert f"{out / 'core' / 'namespace-alpha.yaml'}: missing" in result.stderr
    assert f"{out / 'leftover.yaml'}: extra" in result.stderr
    assert (
        out / "volcano" / "queue-alpha-h100-train.yaml"
    ).read_text() == "tampered\n"  # check writes nothing

    assert run(policy, *NOW, "--output", str(out)).exit_code == 0
    assert not (out / "leftover.yaml").exists()
    assert run(policy, *NOW, "--output", str(out), "--check").exit_code == 0


@pytest.mark.parametrize("output", [".", "policy", "policy/out", "unmarked"])
def test_unsafe_output_is_a_usage_error_and_touches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str
) -> None:
    shutil.copytree(CASES / "volcano-only" / "policy", tmp_path / "policy")
    (tmp_path / "unmarked").mkdir()
    (tmp_path / "unmarked" / "notes.md").write_text("mine\n")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.as_posix() for p in tmp_path.rglob("*"))
    result = run("policy", *NOW, "--output", output)
    assert result.exit_code == 2, result.output
    assert "refusing --output" in result.stderr
    assert result.stdout == ""
    assert sorted(p.as_posix() for p in tmp_path.rglob("*")) == before


def test_output_rewrites_its_own_marked_tree(tmp_path: Path) -> None:
    policy, out = str(CASES / "volcano-only" / "policy"), tmp_path / "out"
    assert run(policy, *NOW, "-o", str(out)).exit_code == 0
    assert (out / ".hetgitops-output").is_file()
    assert ".hetgitops-output" not in (out / "kustomization.yaml").read_text()
    (out / "leftover.yaml").write_text("kind: Old\n")
    assert run(policy, *NOW, "-o", str(out)).exit_code == 0
    assert not (out / "leftover.yaml").exists()
    assert (out / ".hetgitops-output").is_file()


def test_check_needs_an_output_dir() -> None:
    result = run(str(REPO / "policies"), "--check")
    assert result.exit_code == 2
    assert "--output" in result.stderr


@pytest.mark.parametrize("option", [["--target", "nope"], ["--now", "yesterday"]])
def test_usage_errors_exit_2(option: list[str]) -> None:
    assert run(str(REPO / "policies"), *option).exit_code == 2


def test_expired_pool_warns_but_renders_while_validate_fails() -> None:
    later = ["--now", "2027-06-01"]  # the bundled a100 transition pool expired on 2027-03-31
    result = run(str(REPO / "policies"), *later)
    assert result.exit_code == 0, result.stderr
    assert "warning[pool-expired]" in result.stderr and result.stdout.startswith("---\n")
    validated = CliRunner().invoke(main, ["validate", str(REPO / "policies"), *later])
    assert validated.exit_code == 1 and "error[pool-expired]" in validated.output
