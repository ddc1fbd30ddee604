"""The package layout is the pipeline: a folder per stage, nothing else at the top."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hetgitops"
TOP_MODULES = {"__init__.py", "api.py", "diagnostics.py"}
STAGES = {
    "load", "model", "plan", "checks", "compilers", "output", "conformance", "reporting",
    "scaffold", "diff", "cli", "drift", "live", "explain", "capacity", "adopt",
}  # fmt: skip


def test_only_api_and_diagnostics_are_top_level_modules() -> None:
    assert {p.name for p in PACKAGE.glob("*.py")} == TOP_MODULES


def test_every_stage_is_a_package_that_says_what_it_takes_and_gives() -> None:
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages == STAGES
    for stage in STAGES:
        doc = ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text()))
        assert doc and len(doc) > 40, f"hetgitops/{stage}/__init__.py needs a docstring"
