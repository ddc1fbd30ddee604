"""diff on the monitoring target: a changed threshold shows as the named alert's change."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from hetgitops.cli.main import main

REPO = Path(__file__).resolve().parents[2]
TARGETS = "  targets: [core, kueue, volcano, nodes, gpu-operator]\n"


def _copy(folder: Path, extra: str = "") -> Path:
    shutil.copytree(REPO / "policies", folder)
    fleet = folder / "fleet.yaml"
    text = fleet.read_text(encoding="utf-8")
    monitored = TARGETS.replace("]", ", monitoring]") + extra
    fleet.write_text(text.replace(TARGETS, monitored), encoding="utf-8")
    return folder


def test_a_threshold_change_names_the_alert(tmp_path: Path) -> None:
    base = _copy(tmp_path / "base")
    head = _copy(tmp_path / "head", "  monitoring:\n    idle: {utilisationPercent: 20}\n")
    args = ["diff", "--base-dir", str(base), "--head-dir", str(head), "--now", "2026-09-01"]
    result = CliRunner().invoke(main, args)
    assert "PrometheusRule monitoring/hetgitops-alerts" in result.output, result.output
    changed = "rules[alert=HetGitOpsGPUsAllocatedButIdle].expr"
    lines = [line.strip() for line in result.output.splitlines() if changed in line]
    assert len(lines) == 2
    assert lines[0].startswith("-") and "< 0.1)" in lines[0]
    assert lines[1].startswith("+") and "< 0.2)" in lines[1]


def test_a_recording_rule_change_names_the_rule_in_the_pr_comment(tmp_path: Path) -> None:
    # One more node: the pool's declared-cards recording rule changes. Its `record` name repeats
    # once per pool, so the rules were matched by position and the PR comment said `rules[8]`.
    base = _copy(tmp_path / "base")
    head = _copy(tmp_path / "head")
    pools = head / "pools" / "training.yaml"
    text = pools.read_text(encoding="utf-8")
    pools.write_text(text.replace("gpu-a800-[013:016]", "gpu-a800-[013:017]"), encoding="utf-8")
    args = ["diff", "--base-dir", str(base), "--head-dir", str(head), "--now", "2026-09-01"]
    result = CliRunner().invoke(main, [*args, "--format", "markdown"])
    named = 'rules[record=hetgitops:pool_declared_cards{card_type="a800-80gb",pool="a800-train"}]'
    changed = [line for line in result.output.splitlines() if "hetgitops:pool_declared" in line]
    assert [line[:2] for line in changed] == ["- ", "+ "], result.output
    assert all(f"{named}.expr: vector(" in line for line in changed)
    assert not re.search(r"rules\[[0-9]+\]", result.output)
