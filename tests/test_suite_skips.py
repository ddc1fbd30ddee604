"""The README's test command runs the whole suite: no test waits for an opt-in variable (issue 22
item 16). A skip must be about the machine (no Go, not root, no chromium...), said in its reason;
the `HETGITOPS_REQUIRE_*` flags only turn such a skip into a failure. An opt-in gate that is
still needed is listed here and named in the README, with why."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Gate variable -> why it still exists (the README names each).
# HETGITOPS_SIM_EXPLAIN (explain's differential test) was the last, removed in 7678f4d.
OPT_INS: dict[str, str] = {}
# HETGITOPS_REQUIRE_ARGOCD was listed here while the real Argo CD was an opt-in component; it is
# built on first use now (and by .ci/run), so the flag only turns a machine's skip into a
# failure, as HETGITOPS_REQUIRE_SIM does. The README still names what .ci/run sets.


def _environment_names(node: ast.AST) -> set[str]:
    """HETGITOPS_* names read from os.environ anywhere in `node` (directly or via a constant)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            names |= set(re.findall(r"\bHETGITOPS_[A-Z_]+\b", sub.value))
        if isinstance(sub, ast.Name) and re.fullmatch(r"[A-Z_]+", sub.id):
            names.add(f"<constant {sub.id}>")
    return names


def _gates() -> dict[str, list[str]]:
    """Every `skipif` condition of the suite that reads the environment: variable -> where."""
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text())
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name) and isinstance(node.value.value, str)
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "skipif"):
                continue
            condition = node.args[0] if node.args else None
            if condition is None or "environ" not in ast.unparse(condition):
                continue
            for name in _environment_names(condition):
                if name.startswith("<constant "):
                    name = constants.get(name[10:-1], name)
                found.setdefault(name, []).append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_no_test_waits_for_an_opt_in_variable() -> None:
    gates = _gates()
    unexplained = {name: where for name, where in gates.items() if name not in OPT_INS}
    assert unexplained == {}, "tests the README's command skips unless a variable is set"
    assert set(gates) <= set(OPT_INS)


def test_the_readme_names_every_remaining_gate() -> None:
    readme = (REPO / "README.md").read_text()
    for name in OPT_INS:
        assert f"{name}=1" in readme, name
    assert "HETGITOPS_SLOW" not in readme + (REPO / ".ci/run").read_text()
