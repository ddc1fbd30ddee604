"""`diagnostics.listing`: the first N items and how many more, one line."""

from __future__ import annotations

from hetgitops.diagnostics import listing


def test_listing() -> None:
    assert listing([]) == ""
    assert listing(["a", "b"], 3) == "a, b"
    assert listing(["a", "b", "c"], 3) == "a, b, c"
    assert listing(["a", "b", "c", "d"], 3) == "a, b, c and 1 more"
    assert listing([str(n) for n in range(10)]) == "0, 1, 2, 3, 4, 5 and 4 more"
    assert listing(["x", "y", "z"], 2, sep="; ") == "x; y and 1 more"
