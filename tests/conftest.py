"""Shared test options and fixtures: `pytest --update-golden` rewrites golden trees (through
tests/golden.py, the one golden helper); the render scenarios under tests/cases/render double as
compiler unit-test inputs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from hetgitops import api
from hetgitops.model.policy import Policy


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite golden files (whole expected trees) from the current output.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


REPO = Path(__file__).resolve().parents[1]
RENDER_CASES = REPO / "tests" / "cases" / "render"
GOLDEN_NOW = dt.date(2026, 9, 1)


@pytest.fixture
def scenario_policy() -> Callable[[str], Policy]:
    """`scenario_policy(name)`: the model of `tests/cases/render/<name>/policy/` (or of the
    bundled `policies/` for "bundled"), built without the output checks."""

    def load(name: str) -> Policy:
        directory = REPO / "policies" if name == "bundled" else RENDER_CASES / name / "policy"
        result = api.validate([directory], api.Options(now=GOLDEN_NOW, check_output=False))
        assert result.policy is not None and not result.failed(), result.diagnostics
        return result.policy

    return load
