"""Diagnostics stage: Span, Severity, Diagnostic - the one type for every finding."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field


class Severity(enum.IntEnum):
    """Ordered so that `max()` over findings gives the worst one."""

    INFO = 0
    WARNING = 1
    ERROR = 2

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, order=True)
class Span:
    """A place in a policy file; line and column are 1-based like a compiler's."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.column}"


NOWHERE = Span("<policy>")


@dataclass(frozen=True)
class Diagnostic:
    """One finding. `rule` is a stable kebab-case id and part of the public API."""

    rule: str
    severity: Severity
    message: str
    span: Span = NOWHERE
    path: str = ""
    hint: str = ""
    related: tuple[Span, ...] = field(default=())

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.span.file, self.span.line, self.span.column, self.rule, self.message)

    def __lt__(self, other: Diagnostic) -> bool:
        return self.sort_key() < other.sort_key()


def error(
    rule: str, message: str, span: Span = NOWHERE, path: str = "", hint: str = ""
) -> Diagnostic:
    return Diagnostic(rule, Severity.ERROR, message, span, path, hint)


def sort_unique(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Stable report order; the same finding reached twice is reported once."""
    return sorted(set(diagnostics), key=Diagnostic.sort_key)


def has_errors(diagnostics: Iterable[Diagnostic], *, strict: bool = False) -> bool:
    threshold = Severity.WARNING if strict else Severity.ERROR
    return any(d.severity >= threshold for d in diagnostics)
