"""Golden files: the one helper every golden test uses (render, jobs, diff, invalid, reports).

A golden is a whole `expected/` tree, compared byte for byte with what the code produces now.
`pytest --update-golden` (the `update_golden` fixture, tests/conftest.py) rewrites the tree as a
whole, so a file the code no longer produces vanishes; review the resulting diff like code.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path

import pytest

from hetgitops.output import writer

SHOWN = 5  # stale files whose unified diff a failure prints; the rest are only named


def check_tree(files: Mapping[str, str], expected: Path, update: bool) -> None:
    """Assert that `expected/` holds exactly `files` (relative path -> text, UTF-8, no newline
    translation); with `update`, first replace the tree with them (no output marker)."""
    if update:
        writer.replace_tree(files, expected)
        return
    diff = writer.compare_tree(files, expected)
    if diff:
        pytest.fail(explain(files, expected, diff), pytrace=False)


def explain(files: Mapping[str, str], expected: Path, diff: writer.TreeDiff) -> str:
    lines = [f"{expected} differs (run pytest --update-golden and review the diff):"]
    lines += [f"  missing from expected: {path}" for path in diff.missing]
    lines += [f"  not produced any more: {path}" for path in diff.extra]
    for path in diff.stale[:SHOWN]:
        old = (expected / path).read_bytes().decode("utf-8").splitlines()
        new = files[path].splitlines()
        lines += difflib.unified_diff(old, new, f"expected/{path}", f"actual/{path}", lineterm="")
    lines += [f"  also differs: {path}" for path in diff.stale[SHOWN:]]
    return "\n".join(lines)
