"""Structure-aware fuzz of the bundled fleet, seeded and bounded (beside test_fuzz.py's one-value
mutants): several values and whole documents changed at once, rewrites that must render byte for
byte the same, and objects renamed consistently to names YAML, DNS and file systems find tricky.

HETGITOPS_FUZZ_STRUCTURE=1000 for a longer run of the mutants (the suite runs 40).
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from test_fuzz import BUNDLED, EDGE_VALUES, RENDER_OPTIONS, _pipeline, dump, paths, replaced

from hetgitops import api
from hetgitops.load.documents import load_sources
from hetgitops.output import manifests

Layout = dict[str, list[Any]]  # file name -> its documents, in order
MUTANTS = int(os.environ.get("HETGITOPS_FUZZ_STRUCTURE", "40"))
# File names a user may give policy files: all must be read (or reported), none may crash.
FILE_NAMES = ["TEAM.YAML", "a.Yml", "b.json", "x.yaml ", "ü.yaml", "a b.yaml", "-x.yaml", "t.yaml~"]


def bundled() -> Layout:
    layout: Layout = {}
    for name, doc in BUNDLED:
        layout.setdefault(name, []).append(copy.deepcopy(doc))
    return layout


def sources(layout: Layout, dumper: Callable[..., str] | None = None) -> list[tuple[str, bytes]]:
    write = dumper or (lambda *docs: dump(*docs).decode())
    return [(name, write(*docs).encode()) for name, docs in sorted(layout.items()) if docs]


def analysed(files: list[tuple[str, bytes]]) -> api.Result:
    loaded = load_sources(files)
    return api.analyse(loaded, RENDER_OPTIONS, downgrade=RENDER_OPTIONS.render_warnings)


BASELINE = analysed(sources(bundled()))
BASELINE_STREAM = manifests.stream(BASELINE.manifests)


# -- several values and whole documents at once ---------------------------------------------------


def _any_doc(rng: random.Random, layout: Layout) -> tuple[str, int] | None:
    files = [name for name, docs in sorted(layout.items()) if docs]
    if not files:
        return None
    name = rng.choice(files)
    return name, rng.randrange(len(layout[name]))


def _swap_type(value: Any) -> Any:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return {str(i): item for i, item in enumerate(value)}
    return [value]


def _edit_value(rng: random.Random, layout: Layout) -> None:
    picked = _any_doc(rng, layout)
    if picked is None:
        return
    name, index = picked
    doc = layout[name][index]
    where = paths(doc)[1:]
    if not where:
        return
    path = rng.choice(where)
    old: Any = doc
    for part in path:
        old = old[part]
    new = _swap_type(old) if rng.random() < 0.3 else rng.choice(EDGE_VALUES)
    layout[name][index] = replaced(doc, path, new)


def _delete_doc(rng: random.Random, layout: Layout) -> None:
    picked = _any_doc(rng, layout)
    if picked is not None:
        del layout[picked[0]][picked[1]]


def _duplicate_doc(rng: random.Random, layout: Layout) -> None:
    picked = _any_doc(rng, layout)
    if picked is not None:
        target = rng.choice(sorted(layout))
        layout[target].append(copy.deepcopy(layout[picked[0]][picked[1]]))


def _move_doc(rng: random.Random, layout: Layout) -> None:
    picked = _any_doc(rng, layout)
    if picked is not None:
        moved = layout[picked[0]].pop(picked[1])
        layout.setdefault(rng.choice([*sorted(layout), "moved.yaml"]), []).append(moved)


def _rename_file(rng: random.Random, layout: Layout) -> None:
    old = rng.choice(sorted(layout))
    layout.setdefault(f"policies/{rng.choice(FILE_NAMES)}", []).extend(layout.pop(old))


def _rename_object(rng: random.Random, layout: Layout) -> None:
    old, new = rng.choice(RENAMES), rng.choice(TRICKY_NAMES)
    for name, docs in layout.items():
        layout[name] = [renamed(doc, old, new) for doc in docs]


EDITS = [_edit_value, _delete_doc, _duplicate_doc, _move_doc, _rename_file, _rename_object]


@pytest.mark.slow  # a fuzz sweep
def test_seeded_structural_mutants_never_crash() -> None:
    """2-5 edits per mutant (values, type swaps, deleted / duplicated / moved documents,
    renamed files and objects): no exception anywhere in validate (every format), render and
    jobs; an accepted mutant's stream reads back to the same objects (`_pipeline`)."""
    rng = random.Random(23)
    accepted = 0
    for number in range(MUTANTS):
        layout = bundled()
        edits = [rng.choice(EDITS) for _ in range(rng.randint(2, 5))]
        for edit in edits:
            edit(rng, layout)
        try:
            accepted += bool(_pipeline(sources(layout)))
        except Exception as exc:  # name the mutant, not only the traceback
            names = [e.__name__ for e in edits]
            raise AssertionError(f"mutant {number} ({names}) crashed: {exc!r}") from exc
    assert 0 < accepted < MUTANTS  # some mutants render, some are refused


# -- rewrites that mean the same policy render byte-identically -----------------------------------


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: _shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


def _shared(value: Any, seen: dict[str, Any]) -> Any:
    """Equal mappings and lists made one object, so the dumper writes anchors and aliases."""
    if isinstance(value, dict | list):
        inner: Any = (
            {k: _shared(v, seen) for k, v in value.items()}
            if isinstance(value, dict)
            else [_shared(v, seen) for v in value]
        )
        return seen.setdefault(json.dumps(inner, sort_keys=True, default=str), inner)
    return value


def _merged(value: Any, rng: random.Random) -> Any:
    """Some keys of some mappings moved under a `<<` merge key (written plain below)."""
    if isinstance(value, list):
        return [_merged(v, rng) for v in value]
    if not isinstance(value, dict):
        return value
    value = {k: _merged(v, rng) for k, v in value.items()}
    if len(value) >= 2 and rng.random() < 0.5:
        keys = sorted(value)
        moved = set(rng.sample(keys, rng.randint(1, len(keys) - 1)))
        return {"<<": {k: value[k] for k in sorted(moved)}} | {
            k: v for k, v in value.items() if k not in moved
        }
    return value


def _yaml(*docs: Any, **options: Any) -> str:
    return yaml.safe_dump_all(docs, allow_unicode=True, sort_keys=False, **options)


def _one_file(layout: Layout) -> Layout:
    return {"policies/all.yaml": [doc for _, docs in sorted(layout.items()) for doc in docs]}


def _file_per_document(layout: Layout) -> Layout:
    docs = [doc for _, docs in sorted(layout.items()) for doc in docs]
    return {f"policies/d/{len(docs) - i:03}.yaml": [doc] for i, doc in enumerate(docs)}


REWRITES: dict[str, Callable[[random.Random], list[tuple[str, bytes]]]] = {
    "one-file": lambda rng: sources(_one_file(bundled())),
    "file-per-document-reversed": lambda rng: sources(_file_per_document(bundled())),
    "flow-style": lambda rng: sources(
        bundled(), lambda *d: _yaml(*d, default_flow_style=True, width=10**6)
    ),
    "json": lambda rng: [
        (name.replace(".yaml", f"-{i}.json"), json.dumps(doc, indent="\t").encode())
        for name, docs in sorted(bundled().items())
        for i, doc in enumerate(docs)
    ],
    "shuffled-keys": lambda rng: sources(
        {n: [_shuffled(d, rng) for d in docs] for n, docs in bundled().items()}, _yaml
    ),
    "anchors-and-aliases": lambda rng: sources(
        {n: [_shared(d, {}) for d in docs] for n, docs in bundled().items()}, _yaml
    ),
    "merge-keys": lambda rng: sources(
        {n: [_merged(d, rng) for d in docs] for n, docs in bundled().items()},
        lambda *d: _yaml(*d).replace("'<<':", "<<:"),
    ),
    "comments-and-markers": lambda rng: [
        (name, b"%YAML 1.1\n# a comment\n---\n" + text.replace(b"\n---\n", b"\n...\n---\n"))
        for name, text in sources(bundled())
    ],
    "upper-case-suffixes": lambda rng: [
        (re.sub(r"\.yaml$", ".YAML", name), text) for name, text in sources(bundled())
    ],
}


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_a_rewrite_that_means_the_same_renders_byte_identically(name: str) -> None:
    rewritten = analysed(REWRITES[name](random.Random(23)))
    assert Counter(d.rule for d in rewritten.diagnostics) == Counter(
        d.rule for d in BASELINE.diagnostics
    ), [str(d) for d in rewritten.diagnostics]
    assert manifests.stream(rewritten.manifests) == BASELINE_STREAM


# -- consistent renames to tricky names -----------------------------------------------------------

# Names that are unique in the bundled fleet (an exact-value rename touches only references).
RENAMES = ["pretraining", "research", "a800-train", "llm-pretrain", "l40s-48gb"]
# Valid DNS labels YAML 1.1 reads as no string when unquoted, plus edge shapes.
TRICKY_NAMES = ["on", "no", "y", "null", "true", "0x1f", "1e3", "012", "nan", "0abc", "x--y", "a"]


def renamed(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {k: renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v, old, new) for v in value]
    return new if value == old else value


def _stream_values(text: str) -> set[str]:
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            found.add(value)

    for doc in yaml.safe_load_all(text):
        walk(doc)
    return found


@pytest.mark.parametrize(
    ("old", "new"),
    [(old, random.Random(f"{old}23").choice(TRICKY_NAMES)) for old in RENAMES],
)
def test_a_consistent_rename_to_a_tricky_name_changes_only_the_name(old: str, new: str) -> None:
    layout = {n: [renamed(d, old, new) for d in docs] for n, docs in bundled().items()}
    files = sources(layout)
    result = analysed(files)
    assert Counter(d.rule for d in result.diagnostics) == Counter(
        d.rule for d in BASELINE.diagnostics
    ), [str(d) for d in result.diagnostics]
    made = _pipeline(files)  # render and jobs read back whole: `on` stays the text 'on'
    assert Counter(m.obj.get("kind") for m in result.manifests) == Counter(
        m.obj.get("kind") for m in BASELINE.manifests
    )
    values = _stream_values("---\n".join(manifests.to_yaml(m.obj) for m in made))
    assert old not in values
    assert any(v == new or v.startswith(f"{new}-") or v.endswith(f"-{new}") for v in values)
