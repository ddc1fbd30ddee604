"""Model stage: `Origin`, where a model object (or part of one) was written: its file's source
map and the YAML path inside it, so a finding about the object, or about anything rendered
from it, points at the policy line."""

from __future__ import annotations

from dataclasses import dataclass

from hetgitops.diagnostics import Span
from hetgitops.load.documents import PathKey, SourceMap


@dataclass(frozen=True)
class Origin:
    """Where a model object (or part of one) was written; `at()` narrows to a field."""

    source: SourceMap
    base: PathKey = ()

    def at(self, *path: str | int) -> Span:
        return self.source.at((*self.base, *path))

    def key_at(self, *path: str | int) -> Span:
        return self.source.key_at((*self.base, *path))

    def child(self, *path: str | int) -> Origin:
        return Origin(self.source, (*self.base, *path))

    @property
    def span(self) -> Span:
        return self.source.at(self.base)
