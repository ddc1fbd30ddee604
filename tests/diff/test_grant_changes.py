"""`diff` of a change that adds a time-boxed grant: the grant, its dates and the drop."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from hetgitops.cli.main import main
from tests.plan.test_grants import BUNDLED, granted_policy

SCHEMA = json.loads((BUNDLED.parent / "schemas" / "diff.schema.json").read_text("utf-8"))


def _diff(base: Path, head: Path, day: str) -> dict:
    args = [
        "diff",
        "--base-dir",
        str(base),
        "--head-dir",
        str(head),
        "--now",
        day,
        "--format",
        "json",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


def _grants(data: dict) -> list[dict]:
    return [c for c in data["impact"]["changes"] if c["topic"] == "quota-grant"]


def test_diff_shows_an_added_grant_and_when_the_quota_drops(tmp_path: Path) -> None:
    head = granted_policy(tmp_path)
    (added,) = _grants(_diff(BUNDLED, head, "2026-12-05"))
    assert added["subject"] == "team finetune-vision pool a800-train"
    assert (added["before"], added["flag"]) == ("-", "expiry")
    assert "+8 cards 2026-12-01..2026-12-31" in added["after"]
    assert "nominal 32 today, 24 from 2027-01-01" in added["after"]


def test_diff_shows_a_removed_grant(tmp_path: Path) -> None:
    base = granted_policy(tmp_path)
    (removed,) = _grants(_diff(base, BUNDLED, "2026-11-20"))
    assert (removed["after"], removed["flag"]) == ("-", "removal")
    assert "not yet" not in removed["before"] and "pending" in removed["before"]
