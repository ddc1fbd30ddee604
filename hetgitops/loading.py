"""Load stage: read each policy file once, compose YAML, keep a path -> Span map per document."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hetgitops import API_VERSION
from hetgitops.diagnostics import Diagnostic, Span, error

KINDS = ("Fleet", "LabelTaxonomy", "CardType", "Pool", "Team", "PriorityTier", "WorkloadProfile")
POLICY_SUFFIXES = (".yaml", ".yml")
MAX_FILE_BYTES = 4 * 1024 * 1024
# Real policies expand to a few thousand nodes; a billion-laughs document explodes past this fast.
MAX_NODES_PER_DOCUMENT = 100_000
MAX_DEPTH = 64

PathKey = tuple[str | int, ...]
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


def format_path(path: PathKey) -> str:
    """JSON-path-like rendering used in diagnostics: `spec.quotas[0].cards`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@dataclass(frozen=True)
class SourceMap:
    """Where each value (and each mapping key) of one document stands in its file."""

    file: str
    values: dict[PathKey, Span] = field(default_factory=dict)
    keys: dict[PathKey, Span] = field(default_factory=dict)

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


class _Invalid(Exception):
    """A structural YAML problem that ends the current document."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def _span(file: str, mark: Any) -> Span:
    return Span(file, mark.line + 1, mark.column + 1) if mark is not None else Span(file)


class _Builder:
    """Turns a composed node graph into plain data while recording spans and enforcing limits."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.budget = MAX_NODES_PER_DOCUMENT
        self.constructor = yaml.constructor.SafeConstructor()
        self.source = SourceMap(file)
        self.active: set[int] = set()

    def build(self, node: yaml.Node, path: PathKey) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise _Invalid(error("alias-bomb", "document expands to more than "
                                 f"{MAX_NODES_PER_DOCUMENT} nodes (alias expansion bomb?)",
                                 _span(self.file, node.start_mark), format_path(path),
                                 "remove the nested aliases; policies never need this many values"))
        if len(path) > MAX_DEPTH:
            raise _Invalid(error("too-deep", f"nesting deeper than {MAX_DEPTH} levels",
                                 _span(self.file, node.start_mark), format_path(path)))
        self.source.values.setdefault(path, _span(self.file, node.start_mark))
        if id(node) in self.active:
            raise _Invalid(error("recursive-alias", "an alias refers to its own ancestor",
                                 _span(self.file, node.start_mark), format_path(path)))
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            return self._scalar(node, path)
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: yaml.Node, path: PathKey) -> Any:
        if node.tag == _TIMESTAMP_TAG:
            # Dates stay strings so JSON Schema `format: date` and the model see one type.
            return str(node.value)
        try:
            value = self.constructor.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            raise _Invalid(error("syntax", f"cannot read value: {getattr(exc, 'problem', exc)}",
                                 _span(self.file, node.start_mark), format_path(path))) from None
        if isinstance(value, bytes):
            raise _Invalid(error("syntax", "binary (!!binary) values are not allowed",
                                 _span(self.file, node.start_mark), format_path(path)))
        return value

    def _mapping(self, node: yaml.MappingNode, path: PathKey) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged.update(self._merge_source(value_node, path))
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Invalid(error("syntax", "mapping keys must be plain scalars",
                                     _span(self.file, key_node.start_mark), format_path(path)))
            key = self._scalar(key_node, path)
            key = key if isinstance(key, str) else str(key).lower() if isinstance(key, bool) \
                else str(key)
            child = (*path, key)
            if key in result:
                first = self.source.keys[child]
                raise _Invalid(error("duplicate-key", f"duplicate key '{key}' (first at line "
                                     f"{first.line})", _span(self.file, key_node.start_mark),
                                     format_path(child), "YAML keeps only the last value; "
                                     "remove one of them"))
            self.source.keys[child] = _span(self.file, key_node.start_mark)
            result[key] = self.build(value_node, child)
        for key, value in merged.items():
            result.setdefault(key, value)
        return result

    def _merge_source(self, node: yaml.Node, path: PathKey) -> dict[str, Any]:
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        out: dict[str, Any] = {}
        for source in reversed(sources):
            value = self.build(source, path)
            if not isinstance(value, dict):
                raise _Invalid(error("syntax", "a merge key (<<) needs a mapping",
                                     _span(self.file, source.start_mark), format_path(path)))
            out.update(value)
        return out


def _decode(file: str, raw: bytes) -> tuple[str | None, Diagnostic | None]:
    if b"\x00" in raw:
        return None, error("not-text", "binary file (contains NUL bytes), not a YAML policy",
                           Span(file, 1, 1), hint="keep only YAML policy files in the policy tree")
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        return None, error("encoding", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
                           Span(file, line, column), hint="save the file as UTF-8")


def _documents(file: str, text: str) -> Iterator[Document | Diagnostic]:
    try:
        for index, root in enumerate(yaml.compose_all(text, Loader=_Loader)):
            if root is None:
                continue
            builder = _Builder(file)
            try:
                data = builder.build(root, ())
            except _Invalid as invalid:
                yield invalid.diagnostic
                continue
            yield from _identify(file, index, data, builder.source)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        yield error("syntax", f"YAML syntax error: {exc.problem or exc.context}",
                    _span(file, mark))
    except yaml.YAMLError as exc:
        yield error("syntax", f"YAML error: {exc}", Span(file, 1, 1))


def _identify(file: str, index: int, data: Any, source: SourceMap) -> Iterator[Document | Diagnostic]:
    where = source.at(())
    if not isinstance(data, dict):
        yield error("not-a-mapping", f"document {index + 1} is a {type(data).__name__}, "
                    "not a mapping with apiVersion/kind/metadata/spec", where)
        return
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if api_version != API_VERSION:
        yield error("unknown-api-version", f"apiVersion must be '{API_VERSION}', got "
                    f"{api_version!r}", source.at(("apiVersion",)), "apiVersion",
                    f"start every policy document with 'apiVersion: {API_VERSION}'")
        return
    if kind not in KINDS:
        yield error("unknown-kind", f"unknown kind {kind!r}", source.at(("kind",)), "kind",
                    "one of: " + ", ".join(KINDS))
        return
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    yield Document(file, index, str(kind), name if isinstance(name, str) else "", data, source)


def load_sources(sources: Iterable[tuple[str, bytes]]) -> LoadResult:
    """Load already-read files (the working tree or a Git tree); `name` is the display path."""
    result = LoadResult()
    for name, raw in sources:
        result.files.append(name)
        if len(raw) > MAX_FILE_BYTES:
            result.diagnostics.append(error("file-too-large", f"{len(raw)} bytes is more than the "
                                            f"{MAX_FILE_BYTES} byte limit for a policy file",
                                            Span(name, 1, 1)))
            continue
        text, problem = _decode(name, raw)
        if problem is not None or text is None:
            result.diagnostics.append(problem or error("encoding", "unreadable", Span(name)))
            continue
        for item in _documents(name, text):
            if isinstance(item, Document):
                result.documents.append(item)
            else:
                result.diagnostics.append(item)
    result.diagnostics.extend(_duplicate_names(result.documents))
    return result


def _duplicate_names(documents: list[Document]) -> Iterator[Diagnostic]:
    seen: dict[tuple[str, str], Document] = {}
    for doc in documents:
        if not doc.name:
            continue
        first = seen.setdefault((doc.kind, doc.name), doc)
        if first is not doc:
            yield error("duplicate-name", f"{doc.kind} '{doc.name}' is already defined at "
                        f"{first.source.at(('metadata', 'name'))}",
                        doc.source.at(("metadata", "name")), "metadata.name",
                        "object names are unique per kind across the whole policy")


def policy_files(paths: Iterable[Path]) -> tuple[list[Path], list[Diagnostic]]:
    """Expand PATH arguments into policy files: directories recursively, hidden entries skipped."""
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in POLICY_SUFFIXES
                           and p.is_file() and not _hidden(p.relative_to(path)))
            if not found:
                problems.append(error("empty-policy", "no .yaml/.yml policy files found",
                                      Span(display_name(path)),
                                      hint="point hetgitops at a directory of policy files"))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(error("not-found", "no such file or directory",
                                  Span(display_name(path))))
    return files, problems


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def display_name(path: Path) -> str:
    """Relative to the working directory when inside it (what editors and CI annotations want)."""
    if not path.is_absolute():
        return os.path.normpath(path)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def load_paths(paths: Iterable[Path]) -> LoadResult:
    files, problems = policy_files(paths)
    result = load_sources(_read(files))
    result.diagnostics[:0] = problems
    return result


def _read(files: list[Path]) -> Iterator[tuple[str, bytes]]:
    for path in files:
        size = path.stat().st_size
        with path.open("rb") as handle:
            # Read one byte past the limit so an oversize file is reported, not slurped.
            yield display_name(path), handle.read(min(size, MAX_FILE_BYTES) + 1)
