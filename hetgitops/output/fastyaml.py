"""Write stage: the YAML of plain manifests, written directly, byte for byte as PyYAML would.

Most rendered objects are mappings, lists, integers, booleans and short strings of name-like
characters. For those, building PyYAML nodes and handing them to libyaml costs far more than
the text itself, so this writes the text directly. Anything else (multi-line text, characters
outside a conservative set, odd keys, floats PyYAML formats its own way) raises NotPlain and
goes to the libyaml dumper. tests/test_yaml_emitter.py proves the bytes equal PyYAML's on every
golden tree and on generated objects.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from hetgitops.output.yamlsafe import ambiguous


class NotPlain(Exception):
    """The object needs the full emitter."""


# Plain scalars PyYAML writes unquoted in block context: no indicator first, no `: ` or ` #`,
# no leading or trailing space, nothing that needs escaping.
# Indicators ([]{}'"!&*|>%?) only matter as the first character; ` #` and `: ` never appear.
_PLAIN = re.compile(
    r"(?:[A-Za-z0-9_./$(]|-(?=[^ ]))[A-Za-z0-9_./:=+@,()$\[\]{}'\"!&*|>%?;<~^-]*"
    r"(?: [A-Za-z0-9_./=+@,()$\[\]{}'\"!&*|>%?;<~^-][A-Za-z0-9_./:=+@,()$\[\]{}'\"!&*|>%?;<~^-]*)*"
)
# What PyYAML writes single-quoted when its resolver (or ours) would misread it plain.
_QUOTABLE = re.compile(r"(?:[\x21-\x26\x28-\x7e](?:[\x20-\x26\x28-\x7e]*[\x21-\x26\x28-\x7e])?)?")
_KEY_LIMIT = 100  # longer keys: PyYAML and libyaml disagree on `? key` near 128


def _scalar(value: Any, key: bool = False) -> str:
    kind = type(value)
    if kind is str:
        if key and (not value or len(value) >= _KEY_LIMIT):
            raise NotPlain  # `? ''` and long keys: explicit keys to PyYAML
        text = _text(value)
        if text is None:
            raise NotPlain
        return text
    if kind is int:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    raise NotPlain


@functools.lru_cache(maxsize=1 << 16)
def _text(value: str) -> str | None:
    """A string as written (plain or single-quoted), or None; names and labels repeat."""
    if ambiguous(value):
        return f"'{value}'" if _QUOTABLE.fullmatch(value) else None
    if _PLAIN.fullmatch(value) and _plain_allowed(value):
        return value
    return None


def _plain_allowed(value: str) -> bool:
    """What the character classes cannot say: no `key: ` inside, no trailing `:`, and no
    document marker (`---`, `...`) at the start."""
    return not (value.endswith(":") or ": " in value or value.startswith(("---", "...")))


def _flow(items: list[Any]) -> str:
    if any(type(item) is not int for item in items):
        raise NotPlain
    return "[" + ", ".join(map(str, items)) + "]"


def _inline(value: Any) -> str | None:
    """The text after `key: ` or `- ` when the value fits on that line, else None."""
    kind = type(value)
    if kind is dict or kind is list:
        return None if value else ("{}" if kind is dict else "[]")
    if isinstance(value, list):  # FlowList
        return _flow(value)
    return _scalar(value)


# A mapping already written, by (id, indent) -> (the mapping, its text): see `dump`'s memo.
Memo = dict[tuple[int, int], tuple[dict[Any, Any], str]]


def _mapping(
    data: dict[Any, Any], indent: int, out: list[str], first: str | None, memo: Memo | None = None
) -> None:
    pad = " " * indent
    for key, value in data.items():
        lead = first if first is not None else pad
        first = None
        text = _inline(value)
        if text is not None:
            out.append(f"{lead}{_scalar(key, True)}: {text}\n")
        elif type(value) is dict:
            out.append(f"{lead}{_scalar(key, True)}:\n")
            if memo is None:
                _mapping(value, indent + 2, out, None)
                continue
            seen = memo.get((id(value), indent + 2))
            if seen is None or seen[0] is not value:
                block: list[str] = []
                _mapping(value, indent + 2, block, None, memo)
                seen = memo[id(value), indent + 2] = (value, "".join(block))
            out.append(seen[1])
        else:
            out.append(f"{lead}{_scalar(key, True)}:\n")
            _sequence(value, indent, out, None)  # PyYAML does not indent a mapping's list


def _sequence(items: list[Any], indent: int, out: list[str], first: str | None) -> None:
    pad = " " * indent
    for item in items:
        lead = (first if first is not None else pad) + "- "
        first = None
        text = _inline(item)
        if text is not None:
            out.append(f"{lead}{text}\n")
        elif type(item) is dict:
            _mapping(item, indent + 2, out, lead)
        else:
            _sequence(item, indent + 2, out, lead)


def dump(obj: Any, memo: Memo | None = None) -> str:
    """The document PyYAML (block style, indent 2, width unlimited) writes for `obj`, or
    NotPlain. With a `memo` (kept only while every object dumped with it is alive), a nested
    mapping that is the very object dumped before is written once: a pool's node plans share
    their label mappings, one per rack (`compilers.nodes`)."""
    out: list[str] = []
    if type(obj) is dict and obj:
        _mapping(obj, 0, out, None, memo)
    elif type(obj) is list and obj:
        _sequence(obj, 0, out, None)
    else:
        raise NotPlain
    return "".join(out)
