"""Reading rendered job templates back (compilers/jobs/parse.py): always what PyYAML's safe
load returns, the unusual nodes included, whether the line reader or libyaml read it."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from typing import Any

import jinja2
import jinja2.filters
import jinja2.sandbox
import pytest
import yaml
from jinja2.nodes import EvalContext

from hetgitops.compilers.jobs import parse
from hetgitops.compilers.jobs.render import (
    TEMPLATES,
    _yaml_unsafe,
    compile_jobs,
    environment,
    yaml_json,
)
from hetgitops.model.policy import Policy

Load = Callable[[str], Policy]

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


# What the line reader takes, and the look-alikes it must leave to libyaml (or read the same).
RENDERED = """apiVersion: batch/v1
kind: Job
metadata:
  name: "train-h100"
  labels: {"a.io/team": "t", "n": 3, "b": true, "c": null, "d": [], "e": {}}
spec:
  suspend: true
  parallelism: 0x1F
  template:
    spec:
      containers:
        - name: "main"
          command: ["sh", "-c", "echo \\"a #b\\" | x > y & z; 'q'"]
          ports:
            - name: "rendezvous"
              containerPort: 29500
        - "plain json"
        - word
      empty:
"""
LOOKALIKES = [
    "a: 1.5\n",  # floats: YAML 1.1 and JSON read some differently
    "a: [1e3, 1.0e+3, 1.5]\n",
    'a: {"x": NaN}\n',
    "a: 1e3\n",  # a str in YAML 1.1
    "a: 2024-01-01\n",  # a timestamp
    "a: ~\n",
    "a: yes\nb: off\nc: Null\nd: 0777\ne: 1_000\nf: -0\n",
    "on: 1\n",  # a bool key
    "null: 1\n",
    "1: a\n",
    "a:\n- 1\n- 2\n",  # a sequence at its key's indent
    "a: 1\n  b\n",  # a plain scalar on two lines
    'a: "x"\n  b\n',  # an error
    "a: 1 # comment\n",
    "# comment\na: 1\n",
    "a: &x 1\nb: *x\n",
    "a: !!str 1\n",
    "a: 'single'\n",
    "a: |\n  block\n",
    "a:\tb\n",
    "a: caf\u00e9\n",
    'a: "\\/"\n',
    'a: "\\ud83d\\ude80"\n',
    'a: "\\u00e9\\u0085\\ufffe"\n',
    "a:  1\n",
    "a: 1 \n",
    "a:b\n",
    "  a: 1\n",
    "a:\n    b: 1\n  c: 2\n",
    "a:\n  - 1\n  b: 2\n",
    "- a: 1\n  b: 2\n- c\n",
    "- a:\n    b: 1\n",
    "- - 1\n",
    "-\n  a: 1\n",
    "---\na: 1\n",
    "a: 1\n---\nb: 2\n",
    "a: 1\n...\n",
    "a: {b: 1}\n",
    'a: {"b":1,"b":2}\n',  # duplicate JSON keys: the last wins in both
    'a: ["x"] ["y"]\n',
    "a: 1\n\n\nb: 2\n",
    "a: 1\n   \nb: 2\n",
    '<<: {"a": 1}\n',
    '"a": 1\n',
    "a: -b\n",
    "a: -\n",
    "a:\nb:\n",
    "",
    "\n",
]


@pytest.mark.parametrize("text", [RENDERED, *LOOKALIKES])
def test_the_line_reader_reads_as_pyyaml(text: str) -> None:
    assert repr(_fast(text)) == repr(_load(text))


def test_the_line_reader_takes_what_the_templates_render() -> None:
    assert repr(parse._Lines(RENDERED).document()) == repr(_load(RENDERED))
    for text in ("a: 1.5\n", "a: 1 # c\n", "a:\n- 1\n", 'a: "\\/"\n', "a: caf\u00e9\n"):
        with pytest.raises(parse._Unusual):
            parse._Lines(text).document()


def test_every_bundled_job_is_read_without_libyaml(
    scenario_policy: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[str] = []

    class Counting(LOADER):  # type: ignore[misc,valid-type]
        def __init__(self, text: str) -> None:
            read.append(text)
            super().__init__(text)

    monkeypatch.setattr(parse, "_LOADER", Counting)
    manifests, _ = compile_jobs(scenario_policy("bundled"))
    assert manifests and read == []


def test_mutated_renders_read_as_pyyaml() -> None:
    """Random edits of a rendered job (characters YAML gives meaning to, cut lines): the line
    reader either reads what PyYAML reads or leaves the text to libyaml."""
    rng, alphabet = random.Random(24), " \n-:{}[]\",#&*!|>'%@`?~.019aeyno\\/_"
    for _ in range(1000):
        text = list(RENDERED)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text))
            choice = rng.random()
            if choice < 0.4:
                text.insert(at, rng.choice(alphabet))
            elif choice < 0.7:
                del text[at]
            else:
                text[at] = rng.choice(alphabet)
        edited = "".join(text)
        assert repr(_fast(edited)) == repr(_load(edited)), edited


# -- tojson (compilers/jobs/render.yaml_json): the text the templates write values with --------

TOJSON_VALUES: list[Any] = [
    {"a": "b", "n": 1, "t": True, "z": None, "l": [1, "x"]},
    "emoji \U0001f680 caf\u00e9",
    "del \x7f nel \x85 ls \u2028 bom \ufeff",
    'quote " backslash \\ tab \t newline \n',
    [],
    29500,
]


@pytest.mark.parametrize("value", TOJSON_VALUES)
def test_tojson_writes_what_yaml_reads_back(value: Any) -> None:
    text = yaml_json(value, sort_keys=False)
    expected = _yaml_unsafe().sub(
        lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False)
    )
    assert text == expected
    assert yaml.load(f"v: {text}\n", Loader=LOADER) == {"v": value}
    assert yaml_json(value, sort_keys=False, indent=2) == _yaml_unsafe().sub(
        lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False, indent=2)
    )


def test_tojson_makes_no_encoder_per_value(
    scenario_policy: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = scenario_policy("bundled")
    made: list[object] = []
    original = json.JSONEncoder.__init__

    def counting(self: json.JSONEncoder, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(json.JSONEncoder, "__init__", counting)
    manifests, _ = compile_jobs(policy)
    assert manifests and made == []


@pytest.mark.parametrize("value", [*TOJSON_VALUES, {"html": "<b> & 'q'"}, ["<", ">"]])
@pytest.mark.parametrize("indent", [None, 2])
def test_the_tojson_filter_is_jinjas_over_yaml_json(value: Any, indent: int | None) -> None:
    env = environment(None)
    jinja = jinja2.filters.do_tojson(EvalContext(env), value, indent)
    ours = env.filters["tojson"](EvalContext(env), value, indent)
    assert type(ours) is type(jinja) and ours == jinja
    stock = jinja2.sandbox.SandboxedEnvironment(autoescape=False)
    stock.policies.update(env.policies)
    source = "{{ v | tojson }}|{{ v | tojson(2) }}|{{ (v | tojson) + '<' }}"  # Markup escapes
    assert env.from_string(source).render(v=value) == stock.from_string(source).render(v=value)


def test_a_run_reads_each_template_file_once(
    scenario_policy: Load, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = scenario_policy("bundled")
    environment.cache_clear()
    looked: list[str] = []
    original = os.path.getmtime

    def counting(path: Any) -> float:
        looked.append(str(path))
        return original(path)

    monkeypatch.setattr(os.path, "getmtime", counting)
    try:
        manifests, _ = compile_jobs(policy)
    finally:
        environment.cache_clear()
    assert len(manifests) > 10
    assert len(looked) <= len(set(looked)) and len(set(looked)) <= len(TEMPLATES) + 2
