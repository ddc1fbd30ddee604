"""diff on the monitoring target: a changed threshold shows as the named alert's change."""

from __future__ import annotations

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
