"""Drift stage: who wrote which field, from `metadata.managedFields` (read by
`live.managed_fields`), resolved against the live object so that list entries become indexes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hetgitops.live.managed_fields import Concrete, locate, managed_fields

Path = Concrete


@dataclass(frozen=True)
class Writer:
    """One managedFields entry: the manager, how it wrote (Apply or Update) and when."""

    manager: str
    operation: str
    time: str

    def __str__(self) -> str:
        verb = "applied" if self.operation == "Apply" else "updated"
        when = f" at {self.time}" if self.time else ""
        return f"{self.manager} ({verb}{when})"


class Ownership:
    """The managers of one live object and the concrete paths each owns."""

    def __init__(self, live: Mapping[str, Any]) -> None:
        self.entries: list[tuple[Writer, frozenset[Path]]] = []
        for entry in managed_fields(live):
            if entry.subresource:
                continue  # status writers never touch what the policy declares
            writer = Writer(entry.manager, entry.operation, entry.time)
            located = (locate(path, live) for path in entry.fields)
            self.entries.append((writer, frozenset(p for p in located if p is not None)))

    def at(self, path: Path) -> list[Writer]:
        """Writers owning `path` itself or the atomic value that contains it (deepest first,
        then the most recent)."""
        best: list[tuple[int, Writer]] = []
        for writer, paths in self.entries:
            depth = max((len(p) for p in _prefixes(path) if p in paths), default=-1)
            if depth >= 0:
                best.append((depth, writer))
        if not best:
            return []
        deepest = max(depth for depth, _ in best)
        writers = [w for depth, w in best if depth == deepest]
        return sorted(writers, key=lambda w: w.time, reverse=True)

    def under(self, path: Path) -> list[Writer]:
        """Writers owning `path`, something that contains it, or anything inside it."""
        n = len(path)
        found = [
            writer
            for writer, paths in self.entries
            if any(p[:n] == path or path[: len(p)] == p for p in paths if p)
        ]
        return sorted(set(found), key=lambda w: (w.time, w.manager), reverse=True)

    def latest(self, *, excluding: Iterable[str] = ()) -> Writer | None:
        skip = set(excluding)
        writers = [w for w, _ in self.entries if w.manager not in skip]
        return max(writers, key=lambda w: w.time, default=None)


def _prefixes(path: Path) -> list[Path]:
    return [path[:i] for i in range(len(path), 0, -1)]
