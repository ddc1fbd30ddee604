"""`hetgitops capacity --now`: grants in force counted in the rows, the drop after `until` shown."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from hetgitops.cli.main import main
from tests.plan.test_grants import granted_policy


def _capacity(root: Path, day: str, fmt: str = "json") -> str:
    result = CliRunner().invoke(main, ["capacity", str(root), "--now", day, "--format", fmt])
    assert result.exit_code == 0, result.output
    return result.stdout


def _vision_a800(data: dict) -> int:
    (row,) = [
        q
        for q in data["quotas"]
        if (q["team"], q["pool"], q["resource"])
        == ("finetune-vision", "a800-train", "nvidia.com/gpu")
    ]
    return int(row["nominal"])


def test_capacity_counts_the_grant_on_its_days_and_shows_the_drop(tmp_path: Path) -> None:
    root = granted_policy(tmp_path)
    before, during, after = (
        json.loads(_capacity(root, d)) for d in ("2026-11-30", "2026-12-31", "2027-01-01")
    )
    assert [_vision_a800(d) for d in (before, during, after)] == [24, 32, 24]
    (grant,) = during["grants"]
    assert (grant["state"], grant["daysLeft"], grant["nominalNow"], grant["nominalAfter"]) == (
        "in force",
        0,
        32,
        24,
    )
    assert grant["dropsOn"] == "2027-01-01"
    assert after["grants"][0]["state"] == "ended"


def test_capacity_text_and_markdown_name_the_grant(tmp_path: Path) -> None:
    root = granted_policy(tmp_path)
    text = _capacity(root, "2026-12-27", "text")
    assert "finetune-vision  a800-train  +8 cards (INFRA-1 CVPR deadline)" in text
    assert "in force, 4 day(s) left  32           24 from 2027-01-01" in text
    assert "| finetune-vision | a800-train | +8 cards (INFRA-1 CVPR deadline) |" in _capacity(
        root, "2026-12-27", "markdown"
    )


def test_capacity_without_grants_has_no_grant_section() -> None:
    bundled = Path(__file__).resolve().parents[2] / "policies"
    assert "grants" not in json.loads(_capacity(bundled, "2026-12-05"))
