"""Compile stage, `jobs`: a rendered template read back as one object, the same as PyYAML's safe
load, without its generic constructor.

libyaml parses and composes (CSafeLoader); the nodes are then turned into Python values
directly. PyYAML's SafeConstructor walks the same nodes through generators and per-node
bookkeeping, which was a quarter of `jobs` at the 5,000-node fleet (896 templates). Anything
beyond plain mappings, sequences and str/int/float/bool/null scalars (merge keys, timestamps,
binary, sets, an alias that contains itself, an unhashable key) goes to SafeConstructor, so
the result is always what `yaml.load(text, Loader=CSafeLoader)` returns.

Before libyaml, a line reader tries the shape the bundled templates render (block mappings and
`- ` sequences of plain keys, each value a plain word or one line of JSON from `tojson`): JSON
through the json module's C scanner, words through PyYAML's own resolver and constructors.
libyaml's per-node Python callbacks (resolve, descend/ascend, Node and Mark objects) were
~0.3-0.5 s of `jobs` at the 5,000-node fleet. Anything else in the text (tabs, control
characters, non-ASCII, comments, anchors, tags, quotes outside JSON, multi-line scalars, a
float, a value the resolver does not make str/int/bool/null, an odd indent) sends the whole
text to libyaml, so invalid YAML still fails there with libyaml's own message.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_STR, _MAP, _SEQ = _TAG + "str", _TAG + "map", _TAG + "seq"
_PLAIN = {_TAG + "int", _TAG + "float", _TAG + "bool", _TAG + "null"}


class _Unusual(Exception):
    """A node the direct builder leaves to SafeConstructor."""


def load(text: str) -> Any:
    """The single document of `text` (None when empty), as `yaml.load(.., CSafeLoader)`;
    raises yaml.YAMLError as it does."""
    try:
        return _Lines(text).document()
    except (_Unusual, RecursionError):
        pass
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return _Builder(loader).build(node)
        except (_Unusual, RecursionError):
            return loader.construct_document(node)
    finally:
        loader.dispose()


class _Builder:
    def __init__(self, loader: yaml.SafeLoader) -> None:
        self.loader = loader
        self.open: set[int] = set()  # collections being built: an alias back to one is a cycle

    def build(self, node: yaml.Node) -> Any:
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            if tag == _STR:
                return node.value
            if tag in _PLAIN:
                return self.loader.yaml_constructors[tag](self.loader, node)
            raise _Unusual
        if id(node) in self.open:
            raise _Unusual
        self.open.add(id(node))
        try:
            if tag == _MAP and isinstance(node, yaml.MappingNode):
                return self._mapping(node)
            if tag == _SEQ and isinstance(node, yaml.SequenceNode):
                return [self.build(item) for item in node.value]
            raise _Unusual
        finally:
            self.open.discard(id(node))

    def _mapping(self, node: yaml.MappingNode) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                raise _Unusual
            key = self.build(key_node)
            if isinstance(key, (dict, list)):
                raise _Unusual  # SafeConstructor reports an unhashable key; let it
            result[key] = self.build(value_node)
        return result


# The shape the line reader takes (anything else is left to libyaml).
_TEXT_UNUSUAL = re.compile(r"[^\n\x20-\x7e]")  # tabs, control characters, non-ASCII
_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_./-]*):(?: (.*))?")  # `key: value` / `key:`
_WORD = re.compile(r"-?[A-Za-z0-9_][A-Za-z0-9_./-]*")  # a plain scalar without indicators
# JSON escapes YAML reads otherwise or rejects: `\/` (YAML 1.2 only) and UTF-16 surrogates.
_JSON_UNUSUAL = re.compile(r"\\(?:/|u[dD][89abAB])")
_SCALAR = yaml.ScalarNode
_WORD_TAGS = {_STR, _TAG + "int", _TAG + "bool", _TAG + "null"}
_RESOLVER = Resolver()
_CONSTRUCTOR = SafeConstructor()
_WORDS: dict[str, Any] = {}  # a word's value, as PyYAML makes it (templates repeat them)
_WORDS_KEPT = 4096


def _reject(text: str) -> Any:
    raise _Unusual


_JSON = json.JSONDecoder(parse_float=_reject, parse_constant=_reject)


def _word(text: str) -> Any:
    """A plain scalar's value (str, int, bool or None); _Unusual for any other tag."""
    try:
        return _WORDS[text]
    except KeyError:
        pass
    tag = _RESOLVER.resolve(_SCALAR, text, (True, False))  # type: ignore[no-untyped-call]
    if tag not in _WORD_TAGS:
        raise _Unusual
    value = _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, _SCALAR(tag, text))
    if len(_WORDS) < _WORDS_KEPT:
        _WORDS[text] = value
    return value


def _inline(text: str) -> Any:
    """A value written on its key's line: one JSON value, or a word."""
    if text[:1] in ('"', "[", "{"):
        if _JSON_UNUSUAL.search(text):
            raise _Unusual
        try:
            value, end = _JSON.raw_decode(text)
        except ValueError:
            raise _Unusual from None
        if end != len(text):
            raise _Unusual
        return value
    if _WORD.fullmatch(text) is None:
        raise _Unusual
    return _word(text)


class _Lines:
    """Block mappings and `- ` sequences, one entry per line, indented by spaces."""

    def __init__(self, text: str) -> None:
        if _TEXT_UNUSUAL.search(text):
            raise _Unusual
        # (indent, content) of every line that is not blank; a line of spaces is unusual
        self.lines: list[tuple[int, str]] = []
        for line in text.split("\n"):
            if not line:
                continue
            content = line.lstrip(" ")
            if not content or content.endswith(" ") or content.startswith(("#", "%", "---", "...")):
                raise _Unusual
            self.lines.append((len(line) - len(content), content))
        self.at = 0

    def document(self) -> Any:
        if not self.lines or self.lines[0][0] != 0:
            raise _Unusual
        value = self._block(0)
        if self.at != len(self.lines):
            raise _Unusual
        return value

    def _block(self, indent: int) -> Any:
        content = self.lines[self.at][1]
        if content == "-" or content.startswith("- "):
            return self._sequence(indent)
        return self._mapping(indent)

    def _deeper(self, indent: int) -> int | None:
        """The indent of the next line if it is deeper than `indent`, else None."""
        if self.at < len(self.lines) and self.lines[self.at][0] > indent:
            return self.lines[self.at][0]
        return None

    def _mapping(self, indent: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        lines = self.lines
        while self.at < len(lines) and lines[self.at][0] == indent:
            entry = _ENTRY.fullmatch(lines[self.at][1])
            if entry is None:
                raise _Unusual
            key, text = entry.group(1), entry.group(2)
            if _word(key).__class__ is not str:
                raise _Unusual
            self.at += 1
            if text is not None:
                result[key] = _inline(text)
                if self._deeper(indent) is not None:
                    raise _Unusual  # a multi-line scalar, or a mistake for libyaml to name
                continue
            deeper = self._deeper(indent)
            if deeper is not None:
                result[key] = self._block(deeper)
            elif self.at < len(lines) and lines[self.at][1].startswith("-"):
                raise _Unusual  # a sequence at the key's own indent
            else:
                result[key] = None
        if self._deeper(indent) is not None:
            raise _Unusual
        return result

    def _sequence(self, indent: int) -> list[Any]:
        result: list[Any] = []
        lines = self.lines
        while self.at < len(lines) and lines[self.at][0] == indent:
            content = lines[self.at][1]
            if not content.startswith("- "):
                raise _Unusual  # `-` alone, or a mapping entry among the items
            rest = content[2:]
            if rest[:1] in ('"', "[", "{") or _ENTRY.fullmatch(rest) is None:
                self.at += 1
                result.append(_inline(rest))
                if self._deeper(indent) is not None:
                    raise _Unusual
                continue
            # `- key: value`: a mapping whose keys stand two columns in
            lines[self.at] = (indent + 2, rest)
            result.append(self._mapping(indent + 2))
        return result
