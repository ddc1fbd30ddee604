"""`diff` of a change to a quota entry's `hostLimits` or `cpuPerCard`: only cpu and memory
change, and the quota table still shows the row with what changes (issue 32 item 5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from hetgitops.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "schemas" / "diff.schema.json").read_text("utf-8"))
L40S = "    - {pool: l40s-infer, cards: 24, lendingLimit: 12}\n"
RTX = "    - {pool: rtx4090-dev, cards: 32}\n"


def _head(tmp: Path) -> Path:
    head = tmp / "policies"
    shutil.copytree(REPO / "policies", head)
    teams = head / "teams" / "others.yaml"
    text = teams.read_text()
    assert text.count(L40S) == 1 and text.count(RTX) == 1
    text = text.replace(L40S, L40S.replace("}", ", hostLimits: false}"))
    teams.write_text(text.replace(RTX, RTX.replace("}", ", cpuPerCard: 16}")))
    return head


def _diff(head: Path, fmt: str) -> str:
    args = ["diff", "--base-dir", str(REPO / "policies"), "--head-dir", str(head)]
    result = CliRunner().invoke(main, [*args, "--format", fmt])
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def test_the_quota_table_shows_host_only_changes(tmp_path: Path) -> None:
    head = _head(tmp_path)
    data = json.loads(_diff(head, "json"))
    jsonschema.validate(data, SCHEMA)
    rows = {(r["team"], r["pool"]): r for r in data["impact"]["quotas"]}
    lent = rows["online-inference", "l40s-infer"]
    assert lent["hostChange"] == "hostLimits true -> false"
    assert lent["before"]["resources"] == lent["after"]["resources"]
    assert rows["research", "rtx4090-dev"]["hostChange"] == "cpuPerCard 12 -> 16"
    text = _diff(head, "text")
    assert "research / rtx4090-dev (rtx4090-24gb)" in text
    assert "host cpuPerCard 12 -> 16" in text
    assert "| replica 1/4 32 → 32; cpuPerCard 12 → 16 |" in _diff(head, "markdown")
