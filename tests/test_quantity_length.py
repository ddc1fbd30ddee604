"""A policy quantity is bounded in length (schemas/common.schema.json): a 5,000-digit
memoryPerCard was an internal error (decimal.InvalidOperation in the compilers, exit 3);
it is a located schema finding."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hetgitops import api

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("value", ['"' + "9" * 5000 + '"', '"' + "9" * 30 + 'Ei"'])
def test_an_overlong_quantity_is_a_located_schema_finding(tmp_path: Path, value: str) -> None:
    shutil.copytree(REPO / "policies", tmp_path / "p")
    team = tmp_path / "p" / "teams" / "training.yaml"
    text = team.read_text()
    assert "memoryPerCard: 128Gi" in text
    team.write_text(text.replace("memoryPerCard: 128Gi", f"memoryPerCard: {value}"))
    result = api.render([tmp_path / "p"])
    found = [(d.rule, d.span.file, d.span.line) for d in result.diagnostics if d.rule == "schema"]
    line = text[: text.index("memoryPerCard: 128Gi")].count("\n") + 1
    assert found == [("schema", str(team), line)]


@pytest.mark.parametrize(
    "value", ['"99999999999999999999Ei"', '"8Ei"', '"9223372036854775808"', '"9300P"']
)
def test_a_quantity_past_int64_is_a_plain_schema_finding(tmp_path: Path, value: str) -> None:
    """Short enough for the length bound, yet past the int64 Kubernetes keeps a quantity in
    (apimachinery resource.Quantity; Kueue saturates it): refused where it is written."""
    shutil.copytree(REPO / "policies", tmp_path / "p")
    team = tmp_path / "p" / "teams" / "training.yaml"
    text = team.read_text()
    team.write_text(text.replace("memoryPerCard: 128Gi", f"memoryPerCard: {value}"))
    result = api.render([tmp_path / "p"])
    (found,) = [d for d in result.diagnostics if d.rule == "schema"]
    line = text[: text.index("memoryPerCard: 128Gi")].count("\n") + 1
    assert (found.span.file, found.span.line) == (str(team), line)
    assert "is more than Kubernetes holds in a quantity" in found.message, found.message


@pytest.mark.parametrize("value", ['"7Ei"', '"9223372036854775807"', "128Gi"])
def test_the_largest_int64_quantities_are_accepted(tmp_path: Path, value: str) -> None:
    shutil.copytree(REPO / "policies", tmp_path / "p")
    team = tmp_path / "p" / "teams" / "training.yaml"
    text = team.read_text()
    team.write_text(text.replace("memoryPerCard: 128Gi", f"memoryPerCard: {value}"))
    result = api.render([tmp_path / "p"])
    assert not [d for d in result.diagnostics if d.rule == "schema"]
