"""Property: whatever bytes arrive, `validate_sources` returns diagnostics and never raises.

Four generators, from raw to nearly right: arbitrary bytes; YAML-flavoured text (anchors, tags,
merges, flow and block syntax); arbitrary data dumped as YAML, in and out of the policy's
document shape; and the bundled policy with one value somewhere replaced by arbitrary data, which
reaches the model, the semantic rules and the compilers. Every report format must then render.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetgitops import api
from hetgitops.diagnostics import Diagnostic
from hetgitops.load.documents import KINDS, load_paths
from hetgitops.reporting import FORMATTERS

REPO = Path(__file__).resolve().parents[1]
OPTIONS = api.Options(now=dt.date(2026, 12, 1))
FUZZ = settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=bool(os.environ.get("CI")),  # CI failures must reproduce locally
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Pieces of YAML syntax (and of the policy language) that random text rarely hits by itself.
SYNTAX = "\n|  |\t|- |: |? |[|]|{|}|,|'|\"|#|\\|~|&a |*a|&b |*b|<<: |---\n|...\n|%YAML 1.1\n"
TAGS = "!!str |!!binary |!!python/object:os.system |!local |! |%TAG ! tag:x.org,2000:\n"
VALUES = "null|on|1e3|0x1F|0o17|1_000|.inf|2026-13-45|\x00|\x07|\ufeff|\u2028|é|gpu-[1:3]"
POLICY = "apiVersion: hetgitops.io/v1alpha1\n|kind: Pool\n|metadata:\n  name: x\n|spec:\n"
TOKENS = [*"|".join([SYNTAX, TAGS, VALUES, POLICY]).split("|"), "|\n", ">-\n", "|"]
yamlish = st.lists(st.sampled_from(TOKENS) | st.text(max_size=6), max_size=60).map("".join)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(["", "binpack", "nvidia.com/gpu", "gpu-[001:004]", "2027-01-01", "8Gi"])
)
data = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.text(max_size=12) | st.sampled_from(["spec", "name", "cards"]), children, max_size=5
        )
    ),
    max_leaves=30,
)
documents = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["hetgitops.io/v1alpha1"]) | scalars,
        "kind": st.sampled_from(KINDS) | scalars,
        "metadata": st.fixed_dictionaries({"name": st.sampled_from(["a", "b"]) | scalars}) | data,
        "spec": data,
    }
)


def dump(*docs: Any) -> bytes:
    return yaml.safe_dump_all(docs, allow_unicode=True).encode()


def check(sources: list[tuple[str, bytes]]) -> None:
    result = api.validate_sources(sources, OPTIONS)
    assert all(isinstance(d, Diagnostic) and d.rule for d in result.diagnostics)
    for render in FORMATTERS.values():
        assert render(result).endswith("\n")


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes(raw: bytes) -> None:
    check([("fuzz.yaml", raw)])


@FUZZ
@given(yamlish)
def test_yaml_flavoured_text(text: str) -> None:
    check([("fuzz.yaml", text.encode("utf-8", "surrogatepass"))])


@FUZZ
@given(data)
def test_arbitrary_data(value: Any) -> None:
    check([("fuzz.yaml", dump(value))])


@FUZZ
@given(st.lists(documents, min_size=1, max_size=4))
def test_policy_shaped_documents(docs: list[dict[str, Any]]) -> None:
    check([("fuzz.yaml", dump(*docs))])


BUNDLED = [(doc.file, doc.data) for doc in load_paths([REPO / "policies"]).documents]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a document, so a mutation can land anywhere."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replaced(value[head], rest, new)}
    return [replaced(item, rest, new) if i == head else item for i, item in enumerate(value)]


@settings(FUZZ, max_examples=150)  # each example runs the whole pipeline on 32 documents
@given(st.data())
def test_bundled_policy_with_one_value_replaced(draw: st.DataObject) -> None:
    index = draw.draw(st.integers(0, len(BUNDLED) - 1))
    _, doc = BUNDLED[index]
    path = draw.draw(st.sampled_from(paths(doc)[1:]))
    mutated = replaced(doc, path, draw.draw(data))
    by_file: dict[str, list[Any]] = {}
    for i, (name, original) in enumerate(BUNDLED):
        by_file.setdefault(name, []).append(mutated if i == index else original)
    check([(name, dump(*docs)) for name, docs in sorted(by_file.items())])
