"""CSV reports defuse spreadsheet formulas (CSV injection): a cell of policy, file or server
text that starts with =, +, -, @, a tab or a carriage return is written as text."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetgitops.api import Result
from hetgitops.cli import main as cli
from hetgitops.diagnostics import Span, error
from hetgitops.reporting import csvcells, failure

FORMULAS = ['=HYPERLINK("http://x")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\rx"]


@pytest.mark.parametrize("text", FORMULAS)
def test_a_formula_is_written_as_text(text: str) -> None:
    assert csvcells.cell(text) == "'" + text


@pytest.mark.parametrize("value", ["-5", "+1.5", "-1e3", "team-a", "", 7, -3])
def test_numbers_and_plain_text_are_unchanged(value: object) -> None:
    assert csvcells.cell(value) == value


def test_the_findings_csv_defuses_file_message_and_hint() -> None:
    """Before: written verbatim, each cell a live formula in a spreadsheet."""
    finding = error("schema", "=1+1", Span("=cmd.yaml", 3, 1), hint="@SUM(A1)")
    rows = list(csv.reader(io.StringIO(failure.render_csv(Result(diagnostics=[finding])))))
    assert rows[1][0] == "'=cmd.yaml" and rows[1][5] == "'=1+1" and rows[1][6] == "'@SUM(A1)"


def test_capacity_csv_of_a_policy_named_like_a_formula_is_defused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "=HYPERLINK(1)"
    folder.mkdir()
    (folder / "team.yaml").write_text("apiVersion: x\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.main, ["capacity", "=HYPERLINK(1)", "--format", "csv"])
    assert result.exit_code == 1, result.output
    cells = [c for row in csv.reader(io.StringIO(result.stdout)) for c in row]
    assert any(c.startswith("'=HYPERLINK(1)") for c in cells), cells
    assert not any(c.startswith(tuple("=+@")) for c in cells), cells
