"""Drift stage: the Fleet's ignore rules (`spec.drift.ignore`): JSON pointers per kind (and
optionally per object) and field managers whose writes a team lets stand."""

from __future__ import annotations

from collections.abc import Iterable

from hetgitops.drift.ownership import Path, Writer
from hetgitops.model.policy import DriftIgnore, Fleet


def pointer_segments(pointer: str) -> list[str]:
    """RFC 6901: `/a/b~1c` -> ["a", "b/c"]."""
    return [s.replace("~1", "/").replace("~0", "~") for s in pointer.split("/")[1:]]


def _covers(pointer: str, path: Path) -> bool:
    segments = pointer_segments(pointer)
    if len(segments) > len(path):
        return False
    return all(s == "*" or s == str(step) for s, step in zip(segments, path, strict=False))


class Ignores:
    """The rules of one Fleet, asked per object and per finding."""

    def __init__(self, fleet: Fleet) -> None:
        self.rules = fleet.drift_ignores

    def for_object(self, kind: str, name: str) -> list[DriftIgnore]:
        return [r for r in self.rules if r.kind == kind and r.name in (None, name)]

    @staticmethod
    def skips(rules: Iterable[DriftIgnore], path: Path, writers: Iterable[Writer]) -> bool:
        """A finding at `path` written by `writers` is ignored by one of `rules`."""
        managers = {w.manager for w in writers}
        for rule in rules:
            if any(_covers(p, path) for p in rule.pointers):
                return True
            if managers and rule.managers and managers <= set(rule.managers):
                return True
        return False

    def skips_object(self, kind: str, name: str) -> bool:
        """A whole-object rule (`jsonPointers: ["/"]`-like: no pointers, no managers)."""
        return any(not r.pointers and not r.managers for r in self.for_object(kind, name))
