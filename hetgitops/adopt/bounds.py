"""Adopt stage: what one input of `import -f` may cost before it is read (size, depth, aliases).

The same bounds every other reader applies: a file or standard input no larger than one live
answer may be (`live.client.MAX_BODY`), values nested no deeper than a policy's
(`load.yamllimits.MAX_DEPTH`, which also stops a recursive alias), and aliases adding no more
values or characters to one file than a policy file's may (`MAX_ALIAS_*_PER_FILE`, a 'billion
laughs'). A dump is parsed by libyaml (or orjson) for speed, so these are checked on what the
parser composed, before any object is built from it or walked by a phase.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import yaml

from hetgitops.live.client import MAX_BODY
from hetgitops.load.yamllimits import (
    MAX_ALIAS_CHARS_PER_FILE,
    MAX_ALIAS_NODES_PER_FILE,
    MAX_DEPTH,
)

MAX_INPUT_BYTES = MAX_BODY


class TooCostly(Exception):
    """An input past a bound; its message says which, in plain words."""


def read_bounded(stream: BinaryIO, name: str) -> bytes:
    """At most MAX_INPUT_BYTES of `stream` (a file, standard input): one byte more is refused
    before it is held, so a 2 GB dump costs 256 MiB at most, not 2 GB."""
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise TooCostly(
            f"{name} is larger than {MAX_INPUT_BYTES >> 20} MiB, the limit of one input "
            "(and of one answer of a live cluster); split the dump, e.g. one file per kind"
        )
    return data


_DEEP = (
    f"values nested more than {MAX_DEPTH} deep (or an alias inside itself); no Kubernetes "
    "object is; the document is left out"
)


class NodeBudget:
    """What the aliases of one file have added so far, each alias counted at the size of
    what it repeats; a node already measured is not walked again (so a bomb costs little)."""

    def __init__(self) -> None:
        self.alias_nodes = 0
        self.alias_chars = 0
        # collection id -> (values, characters, levels of collections at and below it)
        self._sizes: dict[int, tuple[int, int, int]] = {}

    def check(self, node: yaml.Node) -> None:
        """Raises TooCostly when `node` (a composed document) is too deep or recursive, or
        when the file's aliases pass their bound."""
        try:
            self._measure(node, 1)
        finally:  # no alias reaches into another document, and ids are reused once freed
            self._sizes.clear()

    def _measure(self, node: yaml.Node, depth: int) -> tuple[int, int, int]:
        known = self._sizes.get(id(node))
        if known is not None:  # an alias (or a shared anchor): what it repeats, again
            if depth + known[2] - 1 > MAX_DEPTH:
                raise TooCostly(_DEEP)
            self._add_alias(known[0], known[1])
            return known
        if isinstance(node, yaml.ScalarNode):  # an aliased scalar shares its one string
            return 1, len(node.value), 0
        if depth > MAX_DEPTH:  # also where a recursive alias ends: it is infinitely deep
            raise TooCostly(_DEEP)
        nodes, chars, height = 1, 0, 1
        children: list[yaml.Node] = (
            [n for pair in node.value for n in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        for child in children:
            more, length, below = self._measure(child, depth + 1)
            nodes, chars, height = nodes + more, chars + length, max(height, below + 1)
        self._sizes[id(node)] = (nodes, chars, height)
        return nodes, chars, height

    def _add_alias(self, nodes: int, chars: int) -> None:
        self.alias_nodes += nodes
        self.alias_chars += chars
        if self.alias_nodes > MAX_ALIAS_NODES_PER_FILE or self.alias_chars > (
            MAX_ALIAS_CHARS_PER_FILE
        ):
            raise TooCostly(
                f"aliases expand the file by more than {MAX_ALIAS_NODES_PER_FILE} values or "
                f"{MAX_ALIAS_CHARS_PER_FILE} characters (an alias expansion bomb?); the rest "
                "of the file was not read"
            )


def data_too_deep(data: Any) -> str:
    """'' when parsed data (JSON: no aliases) nests no deeper than MAX_DEPTH, else why not."""
    level: list[Any] = [data]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for value in level
            if isinstance(value, dict | list)
            for child in (value.values() if isinstance(value, dict) else value)
            if isinstance(child, dict | list)
        ]
        if not level:
            return ""
    return _DEEP
