"""Reading rendered job templates back (compilers/jobs/parse.py): always what PyYAML's safe
load returns, the unusual nodes included."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from hetgitops.compilers.jobs import parse

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TEXTS = [
    "apiVersion: batch/v1\nkind: Job\nspec:\n  parallelism: 4\n  x: [1, 2.5, true, null, '3']\n",
    "a: &x [1, *x]\n",  # an alias inside itself
    "base: &b {a: 1}\nuse:\n  <<: *b\n  c: 2\n",  # merge key
    "t: 2024-01-01\nu: !!binary aGk=\nv: !!set {a, b}\n",
    "a: 1\na: 2\n",  # a duplicate key: the last wins, as PyYAML does
    "",
    "- plain\n- 'quoted: yes'\n- \"0x1F\"\n- 0x1F\n- 1e3\n- .inf\n- yes\n",
]


def _load(text: str) -> Any:
    try:
        return yaml.load(text, Loader=LOADER)
    except yaml.YAMLError as exc:
        return type(exc)


def _fast(text: str) -> Any:
    try:
        return parse.load(text)
    except yaml.YAMLError as exc:
        return type(exc)


@pytest.mark.parametrize("text", TEXTS)
def test_same_as_pyyaml(text: str) -> None:
    assert repr(_fast(text)) == repr(_load(text))


@pytest.mark.parametrize("text", ["? [1]\n: 2\n", "a: [1\n", "--- 1\n--- 2\n"])
def test_errors_as_pyyaml(text: str) -> None:
    assert _fast(text) is _load(text)
    assert isinstance(_fast(text), type) and issubclass(_fast(text), yaml.YAMLError)
