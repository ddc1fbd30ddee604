"""Drift stage: who wrote which field, from `metadata.managedFields` (server-side apply's field
sets), resolved against the live object so that list entries become indexes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]


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
        for entry in (live.get("metadata") or {}).get("managedFields") or []:
            if entry.get("subresource") or entry.get("fieldsType", "FieldsV1") != "FieldsV1":
                continue  # status writers never touch what the policy declares
            writer = Writer(
                str(entry.get("manager", "")),
                str(entry.get("operation", "")),
                str(entry.get("time", "")),
            )
            paths = frozenset(_resolve(entry.get("fieldsV1") or {}, live, ()))
            self.entries.append((writer, paths))

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


def _resolve(fields: Mapping[str, Any], value: Any, prefix: Path) -> list[Path]:
    """Concrete paths of a FieldsV1 set: `f:name` map fields, `k:{...}` list entries by key,
    `v:value` set entries, `i:n` indexes; `.` marks the entry itself."""
    found: list[Path] = []
    for key, sub in fields.items():
        if key == ".":
            found.append(prefix)
            continue
        step = _step(key, value)
        if step is None:
            continue
        path = (*prefix, step)
        inner = value.get(step) if isinstance(value, dict) and isinstance(step, str) else None
        if isinstance(value, list) and isinstance(step, int):
            inner = value[step]
        if sub:
            found.extend(_resolve(sub, inner, path))
        else:
            found.append(path)
    return found


def _step(key: str, value: Any) -> str | int | None:
    kind, _, text = key.partition(":")
    if kind == "f":
        return text
    if not isinstance(value, list):
        return None
    if kind == "i":
        return int(text)
    try:
        wanted = json.loads(text)
    except ValueError:
        return None
    for index, item in enumerate(value):
        if kind == "v" and item == wanted:
            return index
        if kind == "k" and isinstance(item, dict) and _matches(item, wanted):
            return index
    return None


def _matches(item: Mapping[str, Any], wanted: Any) -> bool:
    return isinstance(wanted, dict) and all(item.get(k) == v for k, v in wanted.items())
