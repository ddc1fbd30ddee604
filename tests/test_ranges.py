"""`model.ranges.compact`: names to the ranges `expand` reads back, sorted or in order."""

from __future__ import annotations

import pytest

from hetgitops.model.ranges import compact, expand


@pytest.mark.parametrize(
    "names",
    [
        ["gpu-001", "gpu-002", "gpu-003", "gpu-007"],
        ["n1", "n2", "n10", "x"],
        ["a-9", "a-10"],
        ["n-0", "n-1", "n-2"],
        ["r1-gpu-01a", "r1-gpu-02a", "r1-gpu-03b"],
        ["b-3", "a-1", "b-1", "b-2", "a-1"],
    ],
)
def test_sorted_ranges_expand_to_the_same_names(names: list[str]) -> None:
    found = compact(names, sort=True)
    assert found == sorted(found)
    assert sorted(n for r in found for n in expand(r)) == sorted(set(names))


def test_sorted_and_in_order() -> None:
    names = ["gpu-002", "cpu-x", "gpu-001", "gpu-003", "gpu-10"]
    assert compact(names, sort=True) == ["cpu-x", "gpu-10", "gpu-[001:003]"]
    assert compact(names, sort=False) == ["gpu-002", "cpu-x", "gpu-001", "gpu-003", "gpu-10"]
    assert compact(["n-1", "n-2", "x", "n-4"], sort=False) == ["n-[1:2]", "x", "n-4"]
    assert compact(["n-01a", "n-02a"], sort=False) == ["n-[01:02]a"]
