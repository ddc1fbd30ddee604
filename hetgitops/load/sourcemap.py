"""Load stage, positions: a path -> Span map per document, shared by every later stage."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hetgitops.diagnostics import Span

PathKey = tuple[str | int, ...]


def format_path(path: Iterable[str | int]) -> str:
    """JSON-path-like rendering used in diagnostics: `spec.quotas[0].cards`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def span_of(file: str, mark: Any) -> Span:
    """A YAML parser mark (0-based) as a Span (1-based, like a compiler's)."""
    return Span(file, mark.line + 1, mark.column + 1) if mark is not None else Span(file, 1, 1)


@dataclass(frozen=True)
class SourceMap:
    """Where each value (and each mapping key) of one document stands in its file."""

    file: str
    values: dict[PathKey, Span] = field(default_factory=dict)
    keys: dict[PathKey, Span] = field(default_factory=dict)
    # Plain scalars that did not read as text, as written (`012`, `0x1F`, `1:30`, `on` read as
    # 10, 31, 90, True under YAML 1.1): a finding about the value shows what the user typed.
    written: dict[PathKey, str] = field(default_factory=dict)

    def at(self, path: Iterable[str | int]) -> Span:
        """The span of `path`, or of its nearest ancestor that exists."""
        key = tuple(path)
        while key:
            if key in self.values:
                return self.values[key]
            key = key[:-1]
        return self.values.get((), Span(self.file))

    def key_at(self, path: Iterable[str | int]) -> Span:
        key = tuple(path)
        return self.keys.get(key) or self.at(key)
