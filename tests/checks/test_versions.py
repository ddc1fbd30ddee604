"""Rules of the versions family: Fleet versions against the tested matrix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hetgitops.checks.versions import TESTED

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("old", "new", "marked"),
    [
        ('kueue: "0.19.2"', 'kueue: "0.11.0"', 'kueue: ^"0.11.0"'),
        ('kueue: "0.19.2"', 'kueue: "0.20.0"', 'kueue: ^"0.20.0"'),
        ('kubernetes: "1.33"', 'kubernetes: "1.38"', 'kubernetes: ^"1.38"'),
        ('volcano: "1.15.1"', 'volcano: "1.9.0"', 'volcano: ^"1.9.0"'),
    ],
)
def test_version_untested(policy, old: str, new: str, marked: str):
    policy.replace("fleet.yaml", old, new)
    assert policy.spans("version-untested") == [policy.pos("fleet.yaml", marked)]


def test_tested_versions_pass(policy):
    assert policy.spans("version-untested") == []


def test_the_matrix_page_lists_the_tested_ranges():
    text = (REPO / "docs" / "reference" / "versions.md").read_text()
    for field, (oldest, newest, _) in TESTED.items():
        row = re.search(rf"^\| {field} \| (\S+) \| (\S+) \|", text, re.MULTILINE)
        assert row is not None, field
        assert row.groups() == (f"{oldest[0]}.{oldest[1]}", f"{newest[0]}.{newest[1]}")
