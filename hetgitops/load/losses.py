"""Load stage, losses: what a file or document that did not load might have defined.

A file that fails the size, encoding, binary or YAML checks loses its documents, and so does a
document the loader cannot identify or the schema rejects. Every reference to an object defined
there would then fail as well ("Pool 'x' is not defined"), although the reader has one mistake
to fix. Each loss is recorded with the finding that caused it and, from a plain line scan of the
text (the text cannot be parsed, or it would have loaded), the (kind, name) pairs it seems to
define; the model turns them into unknown facts (`model.unknowns`) and later rules report what
follows from them as consequences of that first finding.
"""

from __future__ import annotations

import codecs
import difflib
import re
from dataclasses import dataclass

from hetgitops.diagnostics import Cause

# `kind: X` at the top level of a document, and `name: x` under its top-level `metadata:`.
_KIND = re.compile(r"""^kind:\s*["']?([A-Za-z][\w-]*)""", re.MULTILINE)
_METADATA_FLOW = re.compile(r"""^metadata:\s*\{[^}]*?\bname:\s*["']?([^"',}\s#]+)""", re.MULTILINE)
_METADATA_BLOCK = re.compile(r"^metadata:\s*(?:#.*)?$", re.MULTILINE)
_NAME = re.compile(r"""^[ \t]+name:\s*["']?([^"'\s#]+)""", re.MULTILINE)
_DOCUMENT_START = re.compile(r"^(?:---|\.\.\.)(?:[ \t].*)?$", re.MULTILINE)
_CONTENT = re.compile(r"^[ \t]*[^\s#]", re.MULTILINE)

ANY_KIND = "*"


@dataclass(frozen=True)
class Loss:
    """Input that did not reach the model. `definitions` are the (kind, name) pairs its text
    seems to define (kind `*` when the kind itself is unknown); `complete` says every document
    of the text named both, so a name not among them was not lost there."""

    cause: Cause
    definitions: frozenset[tuple[str, str]]
    complete: bool


def of_unreadable(cause: Cause) -> Loss:
    """A file or directory that could not be read: it might have defined anything."""
    return Loss(cause, frozenset(), complete=False)


def of_document(cause: Cause, kind: str, name: str) -> Loss:
    """One identified document that failed the schema: its kind and name are known."""
    if not name:
        return Loss(cause, frozenset(), complete=False)
    return Loss(cause, frozenset({(kind, name)}), complete=True)


def of_file(cause: Cause, raw: bytes, kinds: tuple[str, ...]) -> Loss:
    """A file that lost some or all of its documents: what its text seems to define."""
    definitions: set[tuple[str, str]] = set()
    complete = True
    for chunk in _DOCUMENT_START.split(readable(raw)):
        if not _CONTENT.search(chunk):
            continue
        kind, name = _kind_and_name(chunk)
        if name is None:
            complete = False
            continue
        definitions.add((meant_kind(kind, kinds), name))
    return Loss(cause, frozenset(definitions), complete)


def meant_kind(kind: str, kinds: tuple[str, ...]) -> str:
    """The policy kind a document's `kind:` names or plainly means (`Teams`, `team`: Team), or
    `*`. Without the guess, a lost `kind: Teams` named like any loaded object of another kind
    (a Team and its PriorityTier are often both `online-inference`) would lose nothing."""
    if kind in kinds:
        return kind
    close = difflib.get_close_matches(kind.lower(), [k.lower() for k in kinds], n=1, cutoff=0.8)
    return next((k for k in kinds if close and k.lower() == close[0]), ANY_KIND)


def readable(raw: bytes) -> str:
    """Best-effort text of bytes that failed to decode: only ever scanned, never parsed."""
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if raw.startswith(bom):
            return raw.decode(codec, "replace")
    # UTF-16 without a byte order mark is ASCII text with a NUL beside every character.
    return raw.decode("utf-8", "replace").replace("\x00", "")


def _kind_and_name(chunk: str) -> tuple[str, str | None]:
    kind = _KIND.search(chunk)
    flow = _METADATA_FLOW.search(chunk)
    name = flow.group(1) if flow else None
    block = _METADATA_BLOCK.search(chunk)
    if name is None and block is not None:
        found = _NAME.search(chunk, block.end())
        name = found.group(1) if found else None
    return (kind.group(1) if kind else ANY_KIND), name
