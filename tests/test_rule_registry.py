"""The rule registry is the one source of emitted rule ids (issue 7, item 9).

Two halves: at run time a Diagnostic cannot be made with an unregistered id; statically, every
call that makes a finding in hetgitops/ is scanned and the id it passes is resolved (a literal,
a module constant, or one of a few reviewed dynamic sources) and must be registered — so an id
like `node-range-invalid`, emitted but missing from `hetgitops rules`, fails here."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import hetgitops.adopt.findings
import hetgitops.diagnostics
import hetgitops.diff.hazards
import hetgitops.drift.findings
import hetgitops.load.git_tree
from hetgitops import compilers
from hetgitops.diagnostics import RULE_REGISTRY, Diagnostic, Severity, UnregisteredRule, error
from hetgitops.reporting.catalog import all_rules

PACKAGE = Path(hetgitops.diagnostics.__file__).resolve().parent
# Callables that make a finding, and the position of their rule-id argument.
BASE_EMITTERS = {"Diagnostic": 0, "error": 0, "finding_at": 1, "error_at": 0, "warning_at": 0}


@dataclass(frozen=True)
class Site:
    module: str
    line: int
    expression: str
    resolved: str | None  # the literal id, when the scan could resolve it


def _modules() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(PACKAGE.parent)): ast.parse(p.read_text())
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "id"` and `A, B = "a", "b"` assignments."""
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = [(target, node.value)]
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs = list(zip(target.elts, node.value.elts, strict=True))
            for name, value in pairs:
                literal = isinstance(value, ast.Constant) and isinstance(value.value, str)
                if isinstance(name, ast.Name) and literal:
                    found[name.id] = str(getattr(value, "value", ""))
    return found


def _callee(call: ast.Call) -> tuple[str | None, bool]:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id, False
    if isinstance(func, ast.Attribute):
        return func.attr, isinstance(func.value, ast.Name) and func.value.id == "self"
    return None, False


def _rule_argument(call: ast.Call, index: int) -> ast.expr | None:
    keyword = next((k.value for k in call.keywords if k.arg == "rule"), None)
    return call.args[index] if len(call.args) > index else keyword


def _emitters(modules: dict[str, ast.Module]) -> dict[str, dict[str, int]]:
    """Per module: the callables there that make a finding, including local wrappers (a
    function passing its own parameter on as the rule id) and wrappers imported by name."""
    local: dict[str, dict[str, int]] = {m: dict(BASE_EMITTERS) for m in modules}
    changed = True
    while changed:
        changed = False
        for module, tree in modules.items():
            for fn in ast.walk(tree):
                if not isinstance(fn, ast.FunctionDef) or fn.name in local[module]:
                    continue
                params = [a.arg for a in fn.args.args]
                method = params[:1] == ["self"]
                for call in (c for c in ast.walk(fn) if isinstance(c, ast.Call)):
                    name, _ = _callee(call)
                    if name not in local[module]:
                        continue
                    arg = _rule_argument(call, local[module][name])
                    if isinstance(arg, ast.Name) and arg.id in params:
                        local[module][fn.name] = params.index(arg.id) - int(method)
                        changed = True
                        break
        for module, tree in modules.items():
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module:
                    source = node.module.replace(".", "/") + ".py"
                    for alias in node.names:
                        index = local.get(source, {}).get(alias.name)
                        if index is not None and alias.name not in local[module]:
                            local[module][alias.asname or alias.name] = index
                            changed = True
    return local


def _sites() -> Iterator[Site]:
    modules = _modules()
    emitters = _emitters(modules)
    for module, tree in modules.items():
        constants = _constants(tree)
        # A wrapper's own body passes its parameter on; its callers are scanned instead.
        wrapper_params = {
            a.arg
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef) and fn.name in emitters[module]
            for a in fn.args.args
        }
        for call in (c for c in ast.walk(tree) if isinstance(c, ast.Call)):
            name, _ = _callee(call)
            if name not in emitters[module]:
                continue
            arg = _rule_argument(call, emitters[module][name])
            assert arg is not None, f"{module}:{call.lineno}: no rule id argument"
            if isinstance(arg, ast.Name) and arg.id in wrapper_params:
                continue
            resolved = None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                resolved = arg.value
            elif isinstance(arg, ast.Name):
                resolved = constants.get(arg.id)
            yield Site(module, call.lineno, ast.unparse(arg), resolved)


def _registered() -> set[str]:
    return set(RULE_REGISTRY)


# Sites whose id is computed; each names the ids it can take, checked below to be registered.
# A new dynamic site fails `test_every_emitted_rule_id_is_registered` until it is listed here.
DYNAMIC_SITES: dict[tuple[str, str], set[str]] = {
    # CompileError and its subclasses carry their id as a class attribute.
    ("hetgitops/api.py", "exc.rule"): {
        cls.rule for cls in (compilers.CompileError, *compilers.CompileError.__subclasses__())
    },
    # Diff hazards become GitHub annotations under their hazard id.
    ("hetgitops/diff/formats/github.py", "hazard.rule"): set(hetgitops.diff.hazards.HAZARD_RULES),
    # Conformance findings are (rule, path, message) tuples from k8s schemas and kueue_rules.
    ("hetgitops/conformance/output_checks.py", "rule"): {"k8s-schema", "crd-schema"}
    | {"kueue-cel", "kueue-limits"},
    ("hetgitops/conformance/output_checks.py", "kueue_rules.LIMITS"): {"kueue-limits"},
    # The YAML reader picks one of two literal ids for an alias it cannot resolve.
    ("hetgitops/load/yamlbuild.py", "rule"): {"syntax", "recursive-alias"},
}


def test_every_emitted_rule_id_is_registered() -> None:
    sites = list(_sites())
    assert len(sites) > 100  # the scan found the emitters (it would pass vacuously otherwise)
    unresolved = {(s.module, s.expression) for s in sites if s.resolved is None} - set(
        DYNAMIC_SITES
    )
    assert not unresolved, f"emitters with an id the scan cannot resolve: {sorted(unresolved)}"
    missing = {f"{s.module}:{s.line}: {s.resolved}" for s in sites if s.resolved is not None}
    missing = {m for m in missing if m.rsplit(": ", 1)[1] not in _registered()}
    assert not missing, f"emitted but not registered: {sorted(missing)}"
    for ids in DYNAMIC_SITES.values():
        assert ids <= _registered(), ids - _registered()


def test_model_stage_ids_are_registered_and_listed() -> None:
    """The two ids issue 7 found missing from `hetgitops rules`."""
    listed = {info.id for info in all_rules()}
    assert {"node-range-invalid", "duplicate-singleton"} <= listed
    assert listed == _registered()


def test_drift_ids_are_registered_with_their_severity() -> None:
    for rule_id in hetgitops.drift.findings.RULES:
        assert RULE_REGISTRY[rule_id].severity == hetgitops.drift.findings.severity(rule_id)


def test_an_unregistered_id_cannot_be_emitted() -> None:
    with pytest.raises(UnregisteredRule):
        Diagnostic(rule="no-such-rule", severity=Severity.ERROR, message="x")
    with pytest.raises(UnregisteredRule):
        error("node-ranges-invalid", "a misspelt id")
    assert error("node-range-invalid", "fine").rule == "node-range-invalid"


def test_every_rule_has_its_own_fix_text() -> None:
    """Issue 22 item 14: `rules RULE` says how to fix *that* rule. A rule registered without a
    `Fix:` line in its docs fails here (this file runs in every landing's smoke set), and so
    does a fix text shared word for word with another rule (boilerplate, not advice)."""
    rules = all_rules()
    assert len(rules) == len(RULE_REGISTRY)
    missing = [info.id for info in rules if not info.section("Fix:")]
    assert missing == [], f"rules without a `Fix:` line in their docs: {missing}"
    by_text: dict[str, list[str]] = {}
    for info in rules:
        by_text.setdefault(info.section("Fix:"), []).append(info.id)
    shared = {text: ids for text, ids in by_text.items() if len(ids) > 1}
    assert shared == {}, f"fix texts shared by several rules: {shared}"


def test_a_warnings_fails_example_is_an_example_not_prose() -> None:
    """`Fails (warns):` opens the failing example as `Fails:` does (it was read as prose)."""
    info = next(info for info in all_rules() if info.id == "targets-incomplete")
    assert info.section("Fails:").startswith("`targets: [kueue]`")
    assert "Fails" not in info.why


def test_every_rule_summary_is_a_whole_sentence() -> None:
    """`rules`, SARIF's short descriptions and the troubleshooting page print a rule's summary
    alone. A docstring whose first sentence wraps printed 19 summaries cut mid-sentence (`...
    says evictsRunningPods: true: the sync that`), which read as the opposite of the rule."""
    cut = [info.id for info in all_rules() if not info.summary.endswith(".")]
    assert cut == []
    info = next(info for info in all_rules() if info.id == "taint-evicts-running-pods")
    assert info.summary.endswith("evicts every pod on the pool's nodes that does not tolerate it.")
    roles = next(info for info in all_rules() if info.id == "cluster-roles")
    assert roles.summary.endswith("a manager needs a worker.")
    assert roles.why.startswith("Only a manager carries `admissionChecks`")
