"""Load stage: find and read policy files once, split them into identified policy documents."""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetgitops import API_VERSION
from hetgitops.diagnostics import Diagnostic, Severity, Span, error
from hetgitops.load import losses
from hetgitops.load.losses import Loss
from hetgitops.load.policyfiles import MAX_FILE_BYTES, display_name, policy_files, read_files
from hetgitops.load.sourcemap import PathKey, SourceMap, format_path
from hetgitops.load.yamlbuild import Parsed
from hetgitops.load.yamllimits import (
    MAX_ALIAS_CHARS_PER_FILE,
    MAX_ALIAS_NODES_PER_FILE,
    MAX_DEPTH,
)
from hetgitops.load.yamlread import read_documents

__all__ = [
    "KINDS",
    "LOAD_RULES",
    "Document",
    "LoadResult",
    "Loss",
    "PathKey",
    "SourceMap",
    "display_name",
    "format_path",
    "load_paths",
    "load_sources",
    "policy_files",
]

KINDS = (
    "Fleet",
    "LabelTaxonomy",
    "CardType",
    "Pool",
    "Team",
    "PriorityTier",
    "WorkloadProfile",
    "Cluster",
)
# The rule ids the load stage reports (public API like every rule id), documented for `rules`.
LOAD_RULES: dict[str, str] = {
    "not-found": "A path given to hetgitops does not exist.",
    "io-error": "A file or directory cannot be read (permissions, not a regular file).",
    "empty-policy": "A directory holds no .yaml/.yml policy file.",
    "file-too-large": f"A policy file is larger than {MAX_FILE_BYTES} bytes.",
    "not-text": "A binary file (it contains NUL bytes) sits in the policy tree.",
    "encoding": "A policy file is not UTF-8 text.",
    "syntax": "Not valid YAML, or YAML a policy may not use: tags, non-scalar keys, bad merges.",
    "duplicate-key": "A mapping repeats a key; YAML would silently keep only one of the values.",
    "recursive-alias": "An alias refers to a node that contains it.",
    "alias-bomb": f"Aliases add more than {MAX_ALIAS_NODES_PER_FILE} values or "
    f"{MAX_ALIAS_CHARS_PER_FILE} characters to a file (a 'billion laughs' document).",
    "too-deep": f"Data nested deeper than {MAX_DEPTH} levels.",
    "empty-file": "A policy file holds no document: it is empty or only comments.",
    "not-a-mapping": "A document is not a mapping with apiVersion, kind, metadata and spec.",
    "unknown-api-version": f"A document's apiVersion is not {API_VERSION}.",
    "unknown-kind": "A document's kind is not one of the policy kinds.",
    "duplicate-name": "Two objects of one kind share a metadata.name.",
}
_WIDE_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


@dataclass(frozen=True)
class Document:
    """One policy object as written, before the model is built."""

    file: str
    index: int
    kind: str
    name: str
    data: dict[str, Any]
    source: SourceMap

    @property
    def span(self) -> Span:
        return self.source.at(())


@dataclass
class LoadResult:
    documents: list[Document] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    # Input that did not load, and what it seems to have defined (see `load.losses`).
    losses: list[Loss] = field(default_factory=list)


def load_sources(sources: Iterable[tuple[str, bytes]]) -> LoadResult:
    """Load already-read files (the working tree or a Git tree); `name` is the display path."""
    result = LoadResult()
    for name, raw in sources:
        result.files.append(name)
        before = len(result.diagnostics)
        for item in _file_documents(name, raw):
            if isinstance(item, Document):
                result.documents.append(item)
            else:
                result.diagnostics.append(item)
        first = next((d for d in result.diagnostics[before:] if d.severity is Severity.ERROR), None)
        if first is not None:  # some document may be lost: remember what the text defines
            result.losses.append(losses.of_file(first.cause, raw, KINDS))
    result.diagnostics.extend(_duplicate_names(result.documents))
    return result


def load_paths(paths: Iterable[Path]) -> LoadResult:
    files, problems = policy_files(paths)
    result = load_sources(read_files(files, problems))
    result.diagnostics[:0] = problems
    # A file or directory that could not be read may have defined anything. (Other io-errors,
    # such as a directory symlink loop, lose nothing: the loop's target is read anyway.)
    result.losses[:0] = [
        losses.of_unreadable(d.cause)
        for d in problems
        if d.rule == "io-error" and d.message.startswith("cannot ")
    ]
    return result


def _file_documents(name: str, raw: bytes) -> Iterator[Document | Diagnostic]:
    if len(raw) > MAX_FILE_BYTES:
        yield error(
            "file-too-large",
            f"more than the {MAX_FILE_BYTES} byte limit for a policy file",
            Span(name, 1, 1),
            hint="split the policy into several files",
        )
        return
    text, problem = _decode(name, raw)
    if problem is not None or text is None:
        yield problem or error("encoding", "unreadable text", Span(name, 1, 1))
        return
    reported = False
    for item in read_documents(name, text):
        reported = True
        if isinstance(item, Parsed):
            yield from _identify(name, item)
        else:
            yield item
    if not reported:
        yield error(
            "empty-file",
            "no policy document in this file (empty or only comments)",
            Span(name, 1, 1),
            hint="add policy documents or delete the file",
        )


def _decode(file: str, raw: bytes) -> tuple[str | None, Diagnostic | None]:
    if raw.startswith(_WIDE_BOMS):
        return None, error(
            "encoding",
            "UTF-16/UTF-32 text; policies are UTF-8",
            Span(file, 1, 1),
            hint="save the file as UTF-8",
        )
    if b"\x00" in raw:
        return None, error(
            "not-text",
            "binary file (contains NUL bytes), not a YAML policy",
            Span(file, 1, 1),
            hint="keep only YAML policy files in the policy tree",
        )
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        return None, error(
            "encoding",
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            Span(file, line, column),
            hint="save the file as UTF-8",
        )


def _identify(file: str, parsed: Parsed) -> Iterator[Document | Diagnostic]:
    data, source = parsed.data, parsed.source
    if not isinstance(data, dict):
        yield error(
            "not-a-mapping",
            f"document {parsed.index + 1} is a {_type_name(data)}, "
            "not a mapping with apiVersion/kind/metadata/spec",
            source.at(()),
        )
        return
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if api_version != API_VERSION:
        yield error(
            "unknown-api-version",
            f"apiVersion must be '{API_VERSION}', got {_short(api_version)}",
            source.at(("apiVersion",)),
            "apiVersion",
            f"start every policy document with 'apiVersion: {API_VERSION}'",
        )
        return
    if kind not in KINDS:
        yield error(
            "unknown-kind",
            f"unknown kind {_short(kind)}",
            source.at(("kind",)),
            "kind",
            "one of: " + ", ".join(KINDS),
        )
        return
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    name = name if isinstance(name, str) else ""
    yield Document(file, parsed.index, str(kind), name, data, source)


def _type_name(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def _short(value: Any) -> str:
    """A value for a message: user text can be megabytes long."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _duplicate_names(documents: list[Document]) -> Iterator[Diagnostic]:
    seen: dict[tuple[str, str], Document] = {}
    for doc in documents:
        if not doc.name:
            continue
        first = seen.setdefault((doc.kind, doc.name), doc)
        if first is not doc:
            yield error(
                "duplicate-name",
                f"{doc.kind} '{doc.name}' is already defined at "
                f"{first.source.at(('metadata', 'name'))}",
                doc.source.at(("metadata", "name")),
                "metadata.name",
                "object names are unique per kind across the whole policy",
            )
