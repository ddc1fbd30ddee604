"""Structure-aware fuzzing of `hetgitops import`: a valid dump mutated field by field with
values of the wrong type (seeded). Every mutant must import without a crash, and the mutated
object is either read or an import-unreadable finding at its location: never dropped silently.

A slice of 400 mutants runs in the quick loop; the `slow` sweep (in .ci/run) runs
HETGITOPS_FUZZ_IMPORT mutants, 5,000 by default (issue 33: about 27 s of CPU here)."""

from __future__ import annotations

import copy
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hetgitops.adopt import sources
from hetgitops.adopt.infer import infer
from hetgitops.adopt.write import policy_files
from hetgitops.load.bundled import bundled_versions
from hetgitops.model.catalogue import card_types

HERE = Path(__file__).parent
DUMPS = ("cluster_a100.yaml", "cluster_gpu_operator.yaml", "cluster_volcano.yaml")
WRONG: list[Any] = [
    [1], {"a": 1}, "abc", 5, None, True, -8, 1.5, "1e400", "²", [{"a": 1}], "", "1Ei", [None],
]  # fmt: skip
MUTANTS = int(os.environ.get("HETGITOPS_FUZZ_IMPORT", "5000"))
SLICE = 400
SEED = 33


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if path:
        yield path
    if isinstance(value, dict | list):
        for key, child in value.items() if isinstance(value, dict) else enumerate(value):
            yield from _paths(child, (*path, key))


def _mutants(count: int) -> list[tuple[str, int, tuple[Any, ...], Any]]:
    every = []
    for dump in DUMPS:
        read = sources.Read()
        sources.from_text(dump, (HERE / dump).read_text(), read)
        for index, item in enumerate(read.objects):
            for path in _paths(item.obj):
                if path not in (("kind",), ("apiVersion",)):
                    every += [(dump, index, path, value) for value in WRONG]
    return random.Random(SEED).sample(every, min(count, len(every)))


def test_a_slice_of_wrong_typed_fields_never_crashes_import() -> None:
    _sweep(SLICE)


@pytest.mark.slow
def test_wrong_typed_fields_never_crash_import_and_are_never_dropped_silently() -> None:
    _sweep(MUTANTS)


def _sweep(count: int) -> None:
    objects: dict[str, list[dict[str, Any]]] = {}
    for dump in DUMPS:
        read = sources.Read()
        sources.from_text(dump, (HERE / dump).read_text(), read)
        objects[dump] = [i.obj for i in read.objects]
    mutants = _mutants(count)
    assert len(mutants) == count  # 5,656 distinct mutants exist: the dumps' paths x WRONG
    left_out = 0
    for dump, index, path, value in mutants:
        mutated = copy.deepcopy(objects[dump])
        target = mutated[index]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        read = sources.Read()
        sources.from_text("dump.json", json.dumps(mutated), read)
        where = f"dump.json#items[{index}]"
        kept = any(i.span.file == where for i in read.objects)
        found = [d for d in read.diagnostics if d.span.file == where]
        assert kept or [d.rule for d in found] == ["import-unreadable"], (path, value)
        left_out += not kept
        inferred = infer(read.objects, card_types(), cluster="lab", versions=bundled_versions())
        policy_files(inferred)
    assert left_out > count // 4  # most wrong types are in fields import reads
