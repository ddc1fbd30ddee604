"""Numbers: the schemas and the model agree on what a number is (finite, bounded, integral where
it must be). Anything else is a located `schema` error, never a crash (exit 3) and never a value
that silently disables a check or that the target API server refuses."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from hetgitops import api

REPO = Path(__file__).resolve().parents[1]
OPTIONS = api.Options(now=dt.date(2026, 9, 1))
SERVING = "profiles/serving.yaml"
TRAINING_TEAMS = "teams/training.yaml"
# (file, text as written, replacement); the error must sit at the replaced value
CASES = {
    "integer-written-as-8.0": ("profiles/training.yaml", "cardsPerNode: 8", "cardsPerNode: 8.0"),
    "gang-1e308": ("profiles/training.yaml", "gang: 4", "gang: 1.0e+308"),
    "gang-10^30": ("profiles/training.yaml", "gang: 4", "gang: 1000000000000000000000000000000"),
    "normalized-nan": (TRAINING_TEAMS, "normalized: 23.2", "normalized: .nan"),
    "normalized-inf": (TRAINING_TEAMS, "normalized: 23.2", "normalized: .inf"),
    "budget-nan": (TRAINING_TEAMS, "monthly: 120000", "monthly: .nan"),
    "quantity-1e1000000": (SERVING, "cpuPerCard: 8", "cpuPerCard: 1e1000000"),
    "quantity-number-1e308": (SERVING, "cpuPerCard: 8", "cpuPerCard: 1.0e+308"),
    "probe-delay-past-int32": (
        SERVING,
        "initialDelaySeconds: 120",
        "initialDelaySeconds: 2147483648",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_odd_numbers_are_located_schema_errors(tmp_path: Path, name: str) -> None:
    file, old, new = CASES[name]
    shutil.copytree(REPO / "policies", tmp_path / "p")
    path = tmp_path / "p" / file
    text = path.read_text()
    assert old in text
    before = text[: text.index(old)]
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + len(old.split(":")[0]) + 3
    path.write_text(text.replace(old, new, 1))
    for run in (api.validate, api.render, api.jobs):
        result = run([tmp_path / "p"], OPTIONS)
        found = [
            (d.rule, d.span.line, d.span.column)
            for d in result.diagnostics
            if d.severity.name == "ERROR"
        ]
        assert ("schema", line, column) in found, found
        assert result.failed() and not result.manifests


def test_whole_floats_stay_fine_where_a_number_is_wanted(tmp_path: Path) -> None:
    shutil.copytree(REPO / "policies", tmp_path / "p")
    path = tmp_path / "p" / TRAINING_TEAMS
    path.write_text(path.read_text().replace("normalized: 23.2", "normalized: 23.0", 1))
    assert not api.validate([tmp_path / "p"], OPTIONS).failed()
