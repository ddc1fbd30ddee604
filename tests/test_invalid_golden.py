"""Golden diagnostics of negative scenarios: `hetgitops validate policy --now 2026-12-01` run
in `tests/cases/invalid/<scenario>/`, text format, compared byte for byte.

`pytest --update-golden` rewrites every scenario's `expected/` folder as a whole; review the
diff like code. A scenario is a folder with `policy/*.yaml`; adding one needs no code.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import golden
import pytest
from click.testing import CliRunner

from hetgitops import api
from hetgitops.checks import RULES
from hetgitops.cli import main as cli

CASES = Path(__file__).resolve().parent / "cases" / "invalid"
SCENARIOS = sorted(p.parent.name for p in CASES.glob("*/policy"))
NOW = "2026-12-01"


def validate(scenario: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.chdir(scenario)  # paths in the report are relative to the scenario
    result = CliRunner().invoke(cli.main, ["validate", "policy", "--now", NOW])
    return result.exit_code, result.stdout


def test_there_are_scenarios():
    assert len(SCENARIOS) >= 6


@pytest.mark.parametrize("name", SCENARIOS)
def test_invalid_scenario_matches_golden(name, monkeypatch, update_golden):
    scenario = CASES / name
    code, output = validate(scenario, monkeypatch)
    assert code == 1, output
    golden.check_tree({"diagnostics.txt": output}, scenario / "expected", update_golden)


@pytest.mark.parametrize("name", SCENARIOS)
def test_findings_carry_their_rule_severity(name, monkeypatch):
    monkeypatch.chdir(CASES / name)
    result = api.validate([Path("policy")], api.Options(now=dt.date.fromisoformat(NOW)))
    for d in result.diagnostics:
        assert d.rule not in RULES or d.severity == RULES[d.rule].severity, d
