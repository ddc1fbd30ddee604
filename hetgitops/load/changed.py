"""Load stage, changed lines: which lines of the working tree differ from a Git ref.

`validate --changed-since REF` passes them to `api.Options.changed`, so an aggregate finding
(a pool's total, a team's budget) is reported at a contributor the change touched: a pull
request's annotation then lands on a line of its own diff. `hetgitops diff` has both sides
loaded already and takes the lines of the values that differ (`changed_values`), for Git refs
and folders alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hetgitops.load.documents import Document
from hetgitops.load.git_source import _git, repo_of, resolve

_FILE = re.compile(r"^\+\+\+ (?:b/)?(.*)$")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines(
    ref: str, paths: Iterable[Path] = (), cwd: Path | None = None
) -> dict[str, frozenset[int]]:
    """File (relative to `cwd`, as reports name it) -> the lines added or changed since `ref`,
    in the repository that holds the first of `paths` (the policy), wherever `cwd` is.

    A pure deletion marks the lines on both sides of the gap: removing a node group is a change
    of the pool next to it. Raises git_source.SourceError (unknown ref, not a repository) and
    GitMissing."""
    where = cwd or Path.cwd()
    repo = repo_of(paths, where, " (--changed-since reads the policy's Git history)")
    commit = resolve(repo, ref)
    out = _git(
        repo,
        "diff",
        "--unified=0",
        "--no-color",
        "--no-ext-diff",
        "--no-renames",
        commit,
        "--",
    ).decode("utf-8", "replace")
    # Git names files from the repository's top; reports name them from the working directory.
    return {
        os.path.relpath(repo / name, where).replace(os.sep, "/"): lines
        for name, lines in parse_unified(out).items()
    }


def parse_unified(text: str) -> dict[str, frozenset[int]]:
    """Changed lines per file from `git diff --unified=0` output."""
    changed: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in text.splitlines():
        if match := _FILE.match(line):
            name = match.group(1)
            current = None if name == "/dev/null" else changed.setdefault(name, set())
        elif (match := _HUNK.match(line)) and current is not None:
            start, count = int(match.group(1)), int(match.group(2) or "1")
            if count:
                current.update(range(start, start + count))
            else:
                current.update({max(start, 1), start + 1})
    return {name: frozenset(lines) for name, lines in sorted(changed.items())}


_ABSENT = object()


def changed_values(base: Iterable[Document], head: Iterable[Document]) -> dict[str, frozenset[int]]:
    """Head file -> lines of the values that differ from the base document of the same kind
    and name (every value of a new document). A list or mapping that lost entries counts as
    changed on its own line, so a removed node group marks its pool."""
    before = {(doc.kind, doc.name): doc.data for doc in base}
    changed: dict[str, set[int]] = {}
    for doc in head:
        old = before.get((doc.kind, doc.name), _ABSENT)
        if old is doc.data:  # one parse of a file both sides hold byte for byte (ParseMemo)
            continue
        for path, span in doc.source.values.items():
            if _differs(_at(old, path), _at(doc.data, path)):
                changed.setdefault(span.file, set()).add(span.line)
    return {name: frozenset(lines) for name, lines in sorted(changed.items())}


def _at(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        if isinstance(data, dict) and part in data:  # noqa: SIM114 - mypy narrows per branch
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return _ABSENT
    return data


def _differs(old: Any, new: Any) -> bool:
    if isinstance(new, dict):  # its own line changes only when keys went or came
        return not isinstance(old, dict) or old.keys() != new.keys()
    if isinstance(new, list):
        return not isinstance(old, list) or len(old) != len(new)
    return bool(old is _ABSENT or type(old) is not type(new) or old != new)
