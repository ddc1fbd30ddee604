"""Diagnostics stage: Span, Severity, Diagnostic - the one type for every finding."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

# Policy and server text reach a message; a terminal must not act on control characters (ESC,
# C1), and bidi overrides or line separators must not reorder or split what is shown. A line
# feed is left to the caller (the text report indents it; a one-line message escapes it).
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """Control and bidi characters as `\\xNN` / `\\uNNNN`, visible and inert."""
    return CONTROL.sub(_escape_control, text)


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


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
class Related:
    """Another place a finding involves, with what it contributes: a compiler's `note:` line.

    An aggregate finding (a sum, a total, a whole-policy property) lists every contributing
    location here, including the one it is reported at (see `Diagnostic.focus`)."""

    span: Span
    message: str = ""
    path: str = ""

    def __str__(self) -> str:
        return str(self.span)


@dataclass(frozen=True, order=True)
class Cause:
    """The earlier finding that another one follows from, named by its rule id and location
    (a report holds that finding too)."""

    span: Span
    rule: str

    def __str__(self) -> str:
        return f"{self.rule} at {self.span}"


@dataclass(frozen=True)
class RuleDoc:
    """One rule id's documentation: `hetgitops rules RULE` prints it, SARIF describes it.

    `doc` is a summary line, then why the rule exists, then `Fails:` / `Passes:` examples and a
    `Fix:` line where the rule has them (a check rule's docstring has this shape)."""

    id: str
    stage: str
    severity: Severity
    doc: str


class UnregisteredRule(ValueError):
    """A Diagnostic was made with a rule id no stage registered: a bug in hetgitops."""


# Every rule id any stage may emit, registered by the module that emits it (`register_rules`,
# or the checks' `@rule`). `hetgitops rules` lists exactly this, and a Diagnostic cannot be
# made with any other id, so an emitted id can never be missing from the catalogue.
RULE_REGISTRY: dict[str, RuleDoc] = {}
_RULE_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def register_rules(
    stage: str,
    docs: Mapping[str, str],
    severities: Mapping[str, Severity] | None = None,
) -> None:
    """Register the rule ids one stage emits, each with its documentation and default severity
    (error unless `severities` says otherwise). An id registered twice must mean one rule."""
    for rule_id, doc in docs.items():
        entry = RuleDoc(rule_id, stage, (severities or {}).get(rule_id, Severity.ERROR), doc)
        if not _RULE_ID.match(rule_id):
            raise ValueError(f"rule id {rule_id!r} is not kebab-case")
        if RULE_REGISTRY.setdefault(rule_id, entry) != entry:
            raise ValueError(f"rule id {rule_id!r} registered twice")


@dataclass(frozen=True, kw_only=True)
class Diagnostic:
    """One finding. `rule` is a stable kebab-case id and part of the public API.

    `consequence_of` marks a finding that only exists because of an earlier one (a reference
    into a file that did not load, a cost computed from an unknown MIG profile): reports show
    it under that root cause and do not count it as an independent finding."""

    rule: str
    severity: Severity
    message: str
    span: Span = NOWHERE
    path: str = ""
    hint: str = ""
    related: tuple[Related, ...] = field(default=())
    consequence_of: Cause | None = None
    # Multi-cluster fleets: the cluster the finding is about (drift reads each cluster on its
    # own); "" when the policy has one cluster or the finding is about the policy as a whole.
    cluster: str = ""
    # An aggregate finding's items, one line each (drift: one finding per pool, a line per
    # node): the JSON report always carries them, the text report with `drift --verbose`.
    details: tuple[str, ...] = field(default=())

    @property
    def cause(self) -> Cause:
        """How a consequence of this finding names it."""
        return Cause(self.span, self.rule)

    def because(self, cause: Cause | None) -> Diagnostic:
        """This finding marked as a consequence of `cause` (unchanged when None)."""
        return self if cause is None else replace(self, consequence_of=cause)

    def focus(self, changed: Callable[[Span], bool]) -> Diagnostic:
        """An aggregate finding re-anchored at a contributor the change touched.

        An aggregate finding lists its primary location among its related ones; when the
        primary is outside the change (a pull request's diff) but another contributor is
        inside, the first such contributor becomes the primary, so an annotation lands on a
        line the author edited. Other findings are returned unchanged."""
        spans = [r.span for r in self.related]
        if self.span not in spans or changed(self.span):
            return self
        touched = next((r for r in self.related if changed(r.span)), None)
        return self if touched is None else replace(self, span=touched.span, path=touched.path)

    def on_cluster(self, cluster: str) -> Diagnostic:
        """This finding about cluster `cluster`: its message starts with `[cluster] `, so every
        report format shows where it was found, and machine formats carry the field."""
        return replace(self, cluster=cluster, message=f"[{cluster}] {self.message}")

    def __post_init__(self) -> None:
        if self.rule not in RULE_REGISTRY:
            raise UnregisteredRule(f"rule id {self.rule!r} is not registered (register_rules)")

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.span.file, self.span.line, self.span.column, self.rule, self.message)

    def __lt__(self, other: Diagnostic) -> bool:
        return self.sort_key() < other.sort_key()


def error(
    rule: str, message: str, span: Span = NOWHERE, path: str = "", hint: str = ""
) -> Diagnostic:
    return Diagnostic(
        rule=rule, severity=Severity.ERROR, message=message, span=span, path=path, hint=hint
    )


def sort_unique(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Stable report order; the same finding reached twice is reported once."""
    return sorted(set(diagnostics), key=Diagnostic.sort_key)


def related(*notes: Span | Related) -> tuple[Related, ...]:
    """Related locations from plain spans (no note text) or `Related` entries."""
    return tuple(n if isinstance(n, Related) else Related(n) for n in notes)


def independent(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The findings that are not consequences of another one: what reports count."""
    return [d for d in diagnostics if d.consequence_of is None]


def has_errors(diagnostics: Iterable[Diagnostic], *, strict: bool = False) -> bool:
    threshold = Severity.WARNING if strict else Severity.ERROR
    return any(d.severity >= threshold for d in diagnostics)


def listing(items: Sequence[str], limit: int = 6, *, sep: str = ", ") -> str:
    """`a, b, c` or `a, b, c and 4 more`: the first `limit` items and how many more, so a
    message stays one line on a big fleet."""
    shown = sep.join(items[:limit])
    extra = len(items) - limit
    return f"{shown} and {extra} more" if extra > 0 else shown
