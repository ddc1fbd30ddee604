"""Load stage, YAML documents: parser events -> plain data plus a SourceMap, within hard limits.

Why events and not `yaml.compose()`: libyaml's composer recurses in C (a few tens of thousands
of nested brackets crash the interpreter) and expands every alias before anyone can count. Here
the events are consumed with an explicit stack, so reading stops at the first level too deep or
the first alias that blows the budget, long before that work is done. Aliases share the anchored
value and replay its recorded spans, so `SourceMap` still knows every path that was written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from hetgitops.diagnostics import Diagnostic, Span, error
from hetgitops.load.sourcemap import PathKey, SourceMap, format_path
from hetgitops.load.yamllimits import MAX_DEPTH, Abort, Budget
from hetgitops.load.yamlscalars import (
    MERGE,
    ScalarError,
    collection_tag_allowed,
    scalar_tag,
    scalar_value,
    shown_tag,
)

# Where the spans of a value that is reported and dropped go; nobody ever looks them up.
_NOWHERE: PathKey = ("<dropped>",)
_MERGE_SLOT = "\0<<"  # where a mapping's merge key is remembered among its keys
_MERGE_TWICE = "tools disagree on which merge wins: write one `<<: [*first, *second]`"
_PLAIN = "write plain YAML: strings, numbers, booleans, null, lists, mappings"


@dataclass(frozen=True)
class Parsed:
    """One non-empty YAML document: its data and where each part of it was written."""

    index: int
    data: Any
    source: SourceMap


@dataclass(frozen=True)
class _Anchor:
    value: Any
    text: str | None  # a scalar as written, for use as a mapping key
    # (is key, path below the anchor, span, weak): replayed wherever the alias is used
    entries: tuple[tuple[bool, PathKey, Span, bool], ...]
    nodes: int
    chars: int


_OPEN = _Anchor(None, None, (), 0, 0)  # an anchor whose node is still being read


@dataclass(eq=False)
class _Frame:
    """An open mapping or sequence. `weak` spans (from `<<` merges) never override others."""

    path: PathKey
    span: Span
    container: dict[str, Any] | list[Any]
    anchor: str | None
    weak: bool
    mark: tuple[int, int, int]  # (log length, nodes, chars) when opened, to size an anchor
    merging: bool = False  # a list of merge sources: items sit on the mapping's own path
    state: str = "key"  # a mapping expects a "key", its "value", "merge" sources, or "drop"s one
    key: str = ""
    key_spans: dict[str, Span] = field(default_factory=dict)
    merged: list[dict[str, Any]] = field(default_factory=list)


class DocumentBuilder:
    """Builds one document's data from its events, recording a span for every value and key."""

    def __init__(self, budget: Budget, index: int) -> None:
        self.budget, self.index, self.file = budget, index, budget.file
        self.source = SourceMap(budget.file)
        self.stack: list[_Frame] = []
        self.anchors: dict[str, _Anchor] = {}
        self.log: list[tuple[bool, PathKey, Span, bool]] = []
        self.recording = 0  # anchored collections open: their spans are logged for replay
        self.problems: list[Diagnostic] = []
        self.unusable = False  # a problem after which the data would mislead later stages
        self.root: Any = None

    def feed(self, event: yaml.Event) -> None:
        mark: Any = event.start_mark
        span = Span(self.file, mark.line + 1, mark.column + 1)
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event, span)

    def finish(self) -> Iterator[Parsed | Diagnostic]:
        yield from self.problems
        if self.root is not None and not self.unusable:
            yield Parsed(self.index, self.root, self.source)

    # -- where the next node goes -----------------------------------------------------------

    def _expects_key(self) -> bool:
        top = self.stack[-1] if self.stack else None
        return top is not None and isinstance(top.container, dict) and top.state == "key"

    def _where(self) -> tuple[PathKey, bool]:
        """The path of the next value, and whether its spans are weak (merged by `<<`)."""
        if not self.stack:
            return (), False
        top = self.stack[-1]
        if isinstance(top.container, list):
            if top.merging:
                return top.path, True
            return (*top.path, len(top.container)), top.weak
        if top.state == "merge":
            return top.path, True
        if top.state == "drop":
            return _NOWHERE, True
        return (*top.path, top.key), top.weak

    def _here(self) -> PathKey:
        """Where a problem with the next node is reported: a key belongs to its mapping."""
        return self.stack[-1].path if self._expects_key() else self._where()[0]

    def _record(self, is_key: bool, path: PathKey, span: Span, weak: bool) -> None:
        table = self.source.keys if is_key else self.source.values
        if weak:
            table.setdefault(path, span)
        else:
            table[path] = span
        if self.recording:
            self.log.append((is_key, path, span, weak))

    def _problem(
        self,
        rule: str,
        message: str,
        span: Span,
        path: PathKey = (),
        hint: str = "",
        *,
        unusable: bool = True,
    ) -> None:
        self.problems.append(error(rule, message, span, format_path(path), hint))
        self.unusable = self.unusable or unusable

    # -- nodes ------------------------------------------------------------------------------

    def _scalar(self, event: yaml.ScalarEvent, span: Span) -> None:
        key = self._expects_key()
        path, weak = (self.stack[-1].path, False) if key else self._where()
        self.budget.charge(1, len(event.value))
        try:
            tag = scalar_tag(event, key=key)
            value = event.value if key else scalar_value(event.value, tag)
        except ScalarError as exc:
            self._problem("syntax", str(exc), span, path, _PLAIN)
            tag, value = "", None
        if event.anchor:
            self.anchors[event.anchor] = _Anchor(value, event.value, (), 1, len(event.value))
        if key:
            self._key(event.value, span, merge=tag == MERGE)
            return
        self._record(False, path, span, weak)
        if value is not None and not isinstance(value, str) and event.implicit[0]:
            self.source.written[path] = event.value
        self._attach(value, span)

    def _key(self, text: str, span: Span, *, merge: bool = False) -> None:
        top = self.stack[-1]
        # `<<` twice: PyYAML and go-yaml v2 keep the last, go-yaml v3 refuses; a duplicate key.
        name = _MERGE_SLOT if merge else text  # a quoted "<<" is an ordinary key
        first, path = top.key_spans.get(name), (*top.path, text)
        if first is not None:
            hint = _MERGE_TWICE if merge else "YAML keeps only one of the values; remove the other"
            message = f"duplicate key '{text}' (first at line {first.line})"
            self._problem(
                "duplicate-key", message, span, path[:-1] if merge else path, hint, unusable=False
            )
            top.state = "drop"
            return
        top.key_spans[name] = span
        if merge:
            top.state = "merge"
            return
        top.key, top.state = text, "value"
        self._record(True, path, span, top.weak)

    def _alias(self, event: yaml.AliasEvent, span: Span) -> None:
        anchor = self.anchors.get(str(event.anchor))
        if anchor is None or anchor is _OPEN:
            rule = "syntax" if anchor is None else "recursive-alias"
            what = "undefined" if anchor is None else "recursive"
            self._problem(rule, f"{what} alias *{event.anchor}", span, self._here())
            self._attach(None, span)
        elif self._expects_key() and anchor.text is not None:
            self._key(anchor.text, span)
        elif self._expects_key():
            self._problem("syntax", "mapping keys must be plain scalars", span, self.stack[-1].path)
            self._attach(None, span)
        else:
            self._expand(anchor, span)

    def _expand(self, anchor: _Anchor, span: Span) -> None:
        path, weak = self._where()
        self.budget.expand(anchor.nodes, anchor.chars, span, path)
        self._record(False, path, span, weak)
        for is_key, below, where, was_weak in anchor.entries:
            if is_key or below:
                self._record(is_key, path + below, where, weak or was_weak)
        self._attach(anchor.value, span)

    def _open(self, event: yaml.CollectionStartEvent, span: Span) -> None:
        mapping = isinstance(event, yaml.MappingStartEvent)
        if not collection_tag_allowed(event.tag, mapping=mapping):
            message = f"the tag {shown_tag(str(event.tag))} is not allowed in a policy"
            self._problem("syntax", message, span, self._here(), _PLAIN)
        if len(self.stack) >= MAX_DEPTH:
            raise Abort(
                error(
                    "too-deep",
                    f"nesting deeper than {MAX_DEPTH} levels",
                    span,
                    format_path(self.stack[-1].path),
                    "flatten the data; the rest of this file was not read",
                )
            )
        path, weak = self._container_place(span)
        self.budget.charge(1, 0)
        self._record(False, path, span, weak)
        top = self.stack[-1] if self.stack else None
        merging = not mapping and top is not None and top.state == "merge"
        if event.anchor:
            self.anchors[event.anchor] = _OPEN
            self.recording += 1
        mark = (len(self.log), self.budget.nodes, self.budget.chars)
        container: dict[str, Any] | list[Any] = {} if mapping else []
        self.stack.append(_Frame(path, span, container, event.anchor, weak, mark, merging))

    def _container_place(self, span: Span) -> tuple[PathKey, bool]:
        if not self._expects_key():
            return self._where()
        self._problem("syntax", "mapping keys must be plain scalars", span, self.stack[-1].path)
        return _NOWHERE, True

    def _close(self, event: yaml.Event, span: Span) -> None:
        frame = self.stack.pop()
        value = frame.container
        if isinstance(value, dict):
            for source in frame.merged:  # earlier sources win; explicit keys win over all
                for key, item in source.items():
                    value.setdefault(key, item)
        if frame.anchor is not None:
            self._remember(frame)
        self._attach(value, frame.span)

    def _remember(self, frame: _Frame) -> None:
        start, nodes, chars = frame.mark
        cut = len(frame.path)
        entries = tuple(
            (k, p[cut:], s, w) for k, p, s, w in self.log[start:] if p[:cut] == frame.path
        )
        self.anchors[str(frame.anchor)] = _Anchor(
            frame.container, None, entries, self.budget.nodes - nodes + 1, self.budget.chars - chars
        )
        self.recording -= 1
        if not self.recording:
            self.log.clear()

    def _attach(self, value: Any, span: Span) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        if isinstance(top.container, list):
            top.container.append(value)
            return
        state = top.state
        if state == "value":
            top.container[top.key] = value
        elif state == "merge":
            top.merged.extend(self._merge_sources(value, span, top.path))
        # A collection or alias used as a key: the value that follows has nowhere to go.
        top.state = "drop" if state == "key" else "key"

    def _merge_sources(self, value: Any, span: Span, path: PathKey) -> list[dict[str, Any]]:
        sources = value if isinstance(value, list) else [value]
        if all(isinstance(source, dict) for source in sources):
            return sources
        self._problem(
            "syntax", "a merge key (<<) takes a mapping or a list of mappings", span, path
        )
        return []


_HANDLERS: dict[type[yaml.Event], Callable[[DocumentBuilder, Any, Span], None]] = {
    yaml.ScalarEvent: DocumentBuilder._scalar,
    yaml.AliasEvent: DocumentBuilder._alias,
    yaml.MappingStartEvent: DocumentBuilder._open,
    yaml.SequenceStartEvent: DocumentBuilder._open,
    yaml.MappingEndEvent: DocumentBuilder._close,
    yaml.SequenceEndEvent: DocumentBuilder._close,
}
