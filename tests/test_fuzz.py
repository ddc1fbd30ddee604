"""Property: whatever bytes arrive, `validate_sources` returns diagnostics and never raises.

Four generators, from raw to nearly right: arbitrary bytes; YAML-flavoured text (anchors, tags,
merges, flow and block syntax); arbitrary data dumped as YAML, in and out of the policy's
document shape; and the bundled policy with one value somewhere replaced by arbitrary data, which
reaches the model, the semantic rules and the compilers. Every report format must then render.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from pathlib import Path
from typing import Any

import fastyaml
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_yaml_emitter import assert_kubectl_reads, kubectl  # noqa: F401 (a fixture)

from hetgitops import api
from hetgitops.diagnostics import Diagnostic
from hetgitops.load.documents import KINDS, load_paths, load_sources
from hetgitops.output import manifests
from hetgitops.output.manifests import Manifest
from hetgitops.reporting import FORMATTERS

# Property and fuzz sweeps: out of the quick loop (-m 'not slow'), in every full run.
pytestmark = pytest.mark.slow

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
    return fastyaml.dump_all(docs, allow_unicode=True).encode()


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


# -- seeded mutants through the whole pipeline: validate (every format), render and jobs -----

# Values a reviewer would try on every field: numbers the schema's types admit but the model
# may not (NaN, inf, 8.0, 1e308, 10**30, int32 and int64 edges, the quantity 1e1000000),
# strings YAML or Go readers misread, and text that reports must escape.
EDGE_VALUES: list[Any] = [
    float("nan"),
    float("inf"),
    float("-inf"),
    1e308,
    10**30,
    2**31,
    2**63,
    -1,
    0,
    8.0,
    0.5,
    "1e1000000",
    "12e5",
    "y",
    "n",
    "0o17",
    "",
    "🚀",
    "a\u202eb",
    "@platform-team",
    "x\x1b[31m",
    "n" * 249,
    None,
    True,
    [],
    {},
]
MUTANTS = int(os.environ.get("HETGITOPS_FUZZ_MUTANTS", "400"))
RENDER_OPTIONS = api.Options(now=dt.date(2026, 9, 1))


def _mutant(rng: random.Random) -> list[tuple[str, bytes]]:
    index = rng.randrange(len(BUNDLED))
    _, doc = BUNDLED[index]
    path = rng.choice(paths(doc)[1:])
    mutated = replaced(doc, path, rng.choice(EDGE_VALUES))
    by_file: dict[str, list[Any]] = {}
    for i, (name, original) in enumerate(BUNDLED):
        by_file.setdefault(name, []).append(mutated if i == index else original)
    return [(name, dump(*docs)) for name, docs in sorted(by_file.items())]


def _pipeline(sources: list[tuple[str, bytes]]) -> list[Manifest]:
    """What validate, render and jobs do with one policy; returns the changed manifests."""
    from hetgitops.compilers.jobs import render as job_render

    loaded = load_sources(sources)
    result = api.analyse(loaded, RENDER_OPTIONS, downgrade=RENDER_OPTIONS.render_warnings)
    for render in FORMATTERS.values():
        assert render(result).endswith("\n")
    if result.failed() or result.policy is None:
        return []
    stream = manifests.stream(result.manifests)
    applied = [m.obj for m in manifests.ordered(result.manifests) if m.applied]
    assert [d for d in fastyaml.load_all(stream) if d is not None] == applied
    manifests.tree(result.manifests)
    made, _ = job_render.compile_jobs(result.policy)
    job_render.tree(made)
    for doc in fastyaml.load_all(job_render.stream(made)):
        assert doc is None or isinstance(doc, dict)
    return [*result.manifests, *made]


def test_seeded_mutants_of_the_bundled_fleet_run_the_whole_pipeline(
    kubectl: str,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    """No traceback anywhere (an exception here is exit 3 in the CLI); accepted mutants
    read back to the same objects, and the real kubectl decodes what changed as meant.
    HETGITOPS_FUZZ_MUTANTS=3000 for a longer run (the suite runs 400)."""
    names = sorted({name for name, _ in BUNDLED})
    original = [(n, dump(*[d for m, d in BUNDLED if m == n])) for n in names]
    baseline = {manifests.to_yaml(m.obj) for m in _pipeline(original)}
    assert baseline  # the unmutated fleet renders
    rng = random.Random(12)
    changed: dict[str, Manifest] = {}
    for number in range(MUTANTS):
        sources = _mutant(rng)
        try:
            made = _pipeline(sources)
        except Exception as exc:  # name the mutant, not only the traceback
            raise AssertionError(f"mutant {number} crashed: {type(exc).__name__}: {exc}") from exc
        for manifest in made:
            changed.setdefault(manifests.to_yaml(manifest.obj), manifest)
    fresh = [m for text, m in changed.items() if text not in baseline]
    assert fresh  # some mutants were accepted and changed the output
    assert_kubectl_reads(kubectl, fresh, tmp_path)
