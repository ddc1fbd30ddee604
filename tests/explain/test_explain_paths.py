"""`hetgitops explain` takes the policy PATH the way validate, render and capacity do."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from click.testing import CliRunner

from hetgitops.cli import main as cli

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
ASK = ["--team", "pretraining", "--gpus", "8", "--now", NOW.isoformat()]


def test_a_positional_path_reads_the_policy_like_validate() -> None:
    # `explain policies --team ...` was a usage error ("expected `explain workload NS/NAME`").
    positional = CliRunner().invoke(cli.main, ["explain", str(REPO / "policies"), *ASK])
    assert positional.exit_code == 0, positional.output
    option = CliRunner().invoke(cli.main, ["explain", "--policy", str(REPO / "policies"), *ASK])
    assert option.exit_code == 0 and positional.output == option.output


def test_path_and_policy_together_or_a_missing_path_are_usage_errors(tmp_path: Path) -> None:
    policies = str(REPO / "policies")
    both = CliRunner().invoke(cli.main, ["explain", policies, "--policy", policies, *ASK])
    assert both.exit_code == 2 and "not both" in both.output
    missing = CliRunner().invoke(cli.main, ["explain", str(tmp_path / "nope"), *ASK])
    assert missing.exit_code == 2 and "no such policy PATH" in missing.output
    live = CliRunner().invoke(cli.main, ["explain", "--policy", policies, "workload", "a/b"])
    assert live.exit_code == 2 and "--kubeconfig" in live.output
