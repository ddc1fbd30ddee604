"""Compile stage, `jobs`: a rendered template read back as one object, the same as PyYAML's safe
load, without its generic constructor.

libyaml parses and composes (CSafeLoader); the nodes are then turned into Python values
directly. PyYAML's SafeConstructor walks the same nodes through generators and per-node
bookkeeping, which was a quarter of `jobs` at the 5,000-node fleet (896 templates). Anything
beyond plain mappings, sequences and str/int/float/bool/null scalars (merge keys, timestamps,
binary, sets, an alias that contains itself, an unhashable key) goes to SafeConstructor, so
the result is always what `yaml.load(text, Loader=CSafeLoader)` returns.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_STR, _MAP, _SEQ = _TAG + "str", _TAG + "map", _TAG + "seq"
_PLAIN = {_TAG + "int", _TAG + "float", _TAG + "bool", _TAG + "null"}


class _Unusual(Exception):
    """A node the direct builder leaves to SafeConstructor."""


def load(text: str) -> Any:
    """The single document of `text` (None when empty), as `yaml.load(.., CSafeLoader)`;
    raises yaml.YAMLError as it does."""
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
