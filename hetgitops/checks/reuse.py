"""Check stage (and compile stage), reuse: node-level results one analysis takes from an
earlier one of nearly the same policy, diff's head from its base.

The `nodes` and `gpu-operator` targets and the rules about node labels and node agents read
only the Fleet, LabelTaxonomy, CardType and Pool documents (tests/test_reuse.py checks that on
every policy the tests hold: they give the same results from those documents alone). A large
fleet's thousands of Node plans come from them. When every such document of the head is the
very data the base read (`load.ParseMemo` parses a byte-identical file once), the head takes
base's results with each location moved to its own file name. Anything that names another
base file is computed again instead."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from hetgitops.diagnostics import Diagnostic, Span
from hetgitops.load.documents import Document
from hetgitops.output.manifests import Manifest

NODE_KINDS = frozenset({"Fleet", "LabelTaxonomy", "CardType", "Pool"})
NODE_RULES = frozenset({"label-missing", "label-value-invalid", "agent-untolerated-taint"})
NODE_TARGETS = frozenset({"nodes", "gpu-operator"})

T = TypeVar("T")

# (kind, name, id of the document's data) of every node-level document, in load order.
Key = tuple[tuple[str, str, int], ...]


class _Foreign(Exception):
    """A result names a base file that is not one of its node-level documents' files."""


@dataclass
class NodeReuse:
    """The first analysis' node-level results and what they were computed from."""

    key: Key | None = None
    context: Any = None  # what else the results depend on (the date the rules judge by)
    files: tuple[str, ...] = ()  # the node-level documents' files, in key order
    every_file: frozenset[str] = frozenset()  # every file the first analysis read
    held: tuple[Any, ...] = ()  # the documents' data: no id in `key` is reused while held
    rules: dict[str, list[Diagnostic]] = field(default_factory=dict)
    targets: dict[str, list[Manifest]] = field(default_factory=dict)

    def taken(self, documents: Sequence[Document], files: Iterable[str], context: Any) -> Taken:
        """What an analysis of `documents` takes: base's results moved to its files when it
        reads the same node-level data (and this is not the first analysis), else nothing;
        the first analysis records its results for the next."""
        mine = [d for d in documents if d.kind in NODE_KINDS]
        key = tuple((d.kind, d.name, id(d.data)) for d in mine)
        if self.key is None:
            self.key, self.context = key, context
            self.files, self.held = tuple(d.file for d in mine), tuple(d.data for d in mine)
            self.every_file = frozenset(files)
            return Taken(record=self)
        if key != self.key or context != self.context:
            return Taken()
        move = _Mover(dict(zip(self.files, (d.file for d in mine), strict=True)), self.every_file)
        return Taken(
            rules=_moved(self.rules, lambda d: _diagnostic(d, move)),
            targets=_moved(self.targets, lambda m: _manifest(m, move)),
        )


def _moved(results: Mapping[str, list[T]], move: Callable[[T], T]) -> dict[str, list[T]]:
    """Each rule's or target's results moved to the other side's files; one that names a base
    file another way is left out (computed again)."""
    found: dict[str, list[T]] = {}
    for name, items in results.items():
        try:
            found[name] = [move(item) for item in items]
        except _Foreign:
            continue
    return found


@dataclass
class _Mover:
    moved: Mapping[str, str]
    every_file: frozenset[str]
    spans: dict[Span, Span] = field(default_factory=dict)

    def __call__(self, span: Span) -> Span:
        known = self.spans.get(span)
        if known is not None:
            return known
        file = self.moved.get(span.file)
        if file is None:
            if span.file in self.every_file:
                raise _Foreign(span.file)
            new = span  # no file of the policy ("<policy>")
        else:
            new = Span(file, span.line, span.column)
        self.spans[span] = new
        return new


def _diagnostic(d: Diagnostic, move: _Mover) -> Diagnostic:
    # A location spelt out in the text ("already listed ... at pools/a.yaml:3:5") would keep
    # the base's name: such a finding is computed again.
    texts = [d.message, d.hint, *d.details, *(r.message for r in d.related)]
    if any(file in text for file in move.moved for text in texts):
        raise _Foreign(d.rule)
    cause = d.consequence_of
    return replace(
        d,
        span=move(d.span),
        related=tuple(replace(r, span=move(r.span)) for r in d.related),
        consequence_of=None if cause is None else replace(cause, span=move(cause.span)),
    )


def _manifest(m: Manifest, move: _Mover) -> Manifest:
    # The object itself is shared: nothing changes a rendered object (it is frozen by use).
    parts = tuple((path, move(span)) for path, span in m.parts)
    return Manifest(
        m.target, m.obj, move(m.origin), m.depth, m.applied, m.filename, m.cluster, parts
    )


@dataclass
class Taken:
    """For one analysis: the results it takes, or where it records its own (the first)."""

    rules: Mapping[str, list[Diagnostic]] = field(default_factory=dict)
    targets: Mapping[str, list[Manifest]] = field(default_factory=dict)
    record: NodeReuse | None = None
