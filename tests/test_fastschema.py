"""The compiled schema fast path (model/fastschema.py) changes no finding and no message: with it
and with jsonschema alone, policy documents and rendered objects get the same diagnostics,
including on mutants with edge values at every field."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetgitops import api
from hetgitops.conformance import output_checks
from hetgitops.load.documents import load_paths
from hetgitops.model import fastschema, schema

REPO = Path(__file__).resolve().parents[1]
NOW = dt.date(2026, 9, 1)
EDGES: list[Any] = [
    0,
    0.0,
    1.0,
    8.0,
    -1,
    2**31,
    2**63,
    10**30,
    1e308,
    math.nan,
    math.inf,
    True,
    False,
    None,
    "",
    "x",
    "8",
    "1e3",
    "Y",
    "UPPER",
    "a" * 300,
    "2026-13-45",
    "2026-09-01",
    "([",
    "(?<n>x)",
    "\u0663",
    "abc\n",
    [],
    [0, 0.0],
    ["a", "a"],
    [1, True],
    {},
    {"unknown": 1},
    dt.date(2026, 1, 1),
]


def _paths(node: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield where
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*where, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*where, index))


def _mutate(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copied = copy.deepcopy(obj)
    node = copied
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return copied


IDENTITY = ("apiVersion", "kind", "metadata")
BUNDLED = load_paths([REPO / "policies"]).documents
RENDERED = api.render([REPO / "policies"], api.Options(now=NOW, check_output=False))


def _messages(findings: Any) -> list[str]:
    return [f"{d.rule} {d.span} {d.path} {d.message} {d.hint}" for d in findings]


def _outcome(run: Callable[[], list[str]]) -> list[str] | str:
    """The findings, or the exception (Kueue's rules assume the compilers' types; a mutant of
    the wrong type may break them, and must break them the same way on both paths)."""
    try:
        return run()
    except Exception as exc:
        return type(exc).__name__


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_policy_findings_are_jsonschemas(
    data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = data.draw(st.sampled_from(BUNDLED))
    path = data.draw(st.sampled_from(list(_paths(doc.data))[1:]))
    value = data.draw(st.sampled_from(EDGES))
    mutant = dataclasses.replace(doc, data=_mutate(doc.data, path, value))
    fast = _messages(d for ds in schema.check_documents([mutant, doc]) for d in ds)
    with monkeypatch.context() as patch:
        patch.setattr(fastschema.Checker, "is_valid", lambda self, instance: False)
        patch.setattr(fastschema.Checker, "valid_all", lambda self, instances: False)
        slow = _messages(d for ds in schema.check_documents([mutant, doc]) for d in ds)
    assert fast == slow


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_output_findings_are_jsonschemas(
    data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = data.draw(st.sampled_from(RENDERED.manifests))
    # The body, not the identity: compilers always write apiVersion, kind and metadata maps.
    fields = [p for p in _paths(dict(manifest.obj)) if p and p[0] not in IDENTITY]
    path = data.draw(st.sampled_from(fields or [("spec",)]))
    value = data.draw(st.sampled_from(EDGES))
    mutant = type(manifest)(
        manifest.target, _mutate(dict(manifest.obj), path, value), manifest.origin
    )
    policy = RENDERED.policy
    assert policy is not None
    fast = _outcome(lambda: _messages(output_checks.check([mutant, manifest], policy)))
    with monkeypatch.context() as patch:
        patch.setattr(fastschema.Checker, "is_valid", lambda self, instance: False)
        patch.setattr(fastschema.Checker, "valid_all", lambda self, instances: False)
        slow = _outcome(lambda: _messages(output_checks.check([mutant, manifest], policy)))
    assert fast == slow


@pytest.mark.parametrize("case", sorted(p.name for p in (REPO / "tests/cases/invalid").iterdir()))
def test_invalid_cases_same_findings(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = REPO / "tests/cases/invalid" / case / "policy"
    fast = _messages(api.validate([folder], api.Options(now=NOW)).diagnostics)
    monkeypatch.setattr(fastschema.Checker, "is_valid", lambda self, instance: False)
    monkeypatch.setattr(fastschema.Checker, "valid_all", lambda self, instances: False)
    assert _messages(api.validate([folder], api.Options(now=NOW)).diagnostics) == fast


FORMAT_SAMPLES = [
    "2026-09-01",
    "2026-02-30",
    "2026-9-1",
    "20260901",
    "2026-09-01T00:00:00Z",
    "\u0662026-09-01",
    "\uff12\uff10\uff12\uff16-09-01",
    "",
    "x",
    "[a-z]+",
    "([",
    "(?<n>x)",
    "(?P<n>x)",
    "a{2,1}",
    "\\p{L}",
    "(?i)x",
]


@pytest.mark.parametrize("name", sorted(fastschema.FORMATS))
def test_formats_are_jsonschemas(name: str) -> None:
    import jsonschema

    # hetgitops' own formats (k8s-quantity) are added to jsonschema's by format_checker()
    checker = fastschema.format_checker()
    assert set(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers) <= set(checker.checkers)
    for sample in [*FORMAT_SAMPLES, "8Ei", "7Ei", "9223372036854775807", "9223372036854775808"]:
        assert fastschema.FORMATS[name](sample) == checker.conforms(sample, name), sample


def test_clean_validate_never_imports_jsonschema() -> None:
    """jsonschema (and kubernetes_validate, which imports it) cost ~0.2 s per process; a
    clean policy needs neither."""
    import subprocess
    import sys

    code = (
        "import sys, datetime as dt; from pathlib import Path; from hetgitops import api\n"
        "r = api.validate([Path(sys.argv[1])], api.Options(now=dt.date(2026, 9, 1)))\n"
        "assert not r.failed() and r.manifests\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('jsonschema', 'referencing', 'kubernetes_validate')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "policies")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
