"""Node inventory: expand compact ranges such as `gpu-h100-[001:064]` into node names, and
compact names back into them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import product
from typing import Any

MAX_NODES_PER_PATTERN = 10_000
_BRACKET = re.compile(r"\[([^\]]*)\]")
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class RangeError(ValueError):
    """A malformed range; the message is shown to the user as is."""


def _expand_part(spec: str) -> list[str]:
    values: list[str] = []
    for piece in spec.split(","):
        start, sep, end = piece.strip().partition(":")
        if not start.isdigit() or (sep and not end.isdigit()):
            raise RangeError(f"'[{spec}]' is not a range like [001:064] or [1,3,5:7]")
        if not sep:
            values.append(start)
            continue
        if int(end) < int(start):
            raise RangeError(f"range [{piece}] ends before it starts")
        width = len(start) if start.startswith("0") else 0
        values.extend(str(n).zfill(width) for n in range(int(start), int(end) + 1))
        if len(values) > MAX_NODES_PER_PATTERN:
            raise RangeError(f"range expands to more than {MAX_NODES_PER_PATTERN} names")
    return values


def expand(pattern: str) -> list[str]:
    """Names in order; raises RangeError for malformed ranges or invalid node names."""
    literals = _BRACKET.split(pattern)[::2]
    parts = [_expand_part(m.group(1)) for m in _BRACKET.finditer(pattern)]
    total = 1
    for part in parts:
        total *= len(part)
    if total > MAX_NODES_PER_PATTERN:
        raise RangeError(f"'{pattern}' expands to more than {MAX_NODES_PER_PATTERN} names")
    names = []
    for combo in product(*parts):
        name = literals[0] + "".join(v + lit for v, lit in zip(combo, literals[1:], strict=True))
        if "[" in name or "]" in name or not _NODE_NAME.match(name) or len(name) > 253:
            raise RangeError(f"'{name}' is not a valid node name (DNS-1123 subdomain)")
        names.append(name)
    return names


_NUMBERED = re.compile(r"^(.*?)(\d+)(\D*)$")


def _numbered(name: str) -> tuple[str, str, int, int] | None:
    """`gpu-007a` -> (`gpu-`, `a`, width 3, 7): the last number of a name and its width."""
    match = _NUMBERED.match(name)
    if match is None:
        return None
    prefix, digits, suffix = match.groups()
    return prefix, suffix, len(digits), int(digits)


def _run(prefix: str, suffix: str, width: int, first: int, last: int) -> str:
    if first == last:
        return f"{prefix}{first:0{width}d}{suffix}"
    return f"{prefix}[{first:0{width}d}:{last:0{width}d}]{suffix}"


def compact(names: Iterable[str], *, sort: bool) -> list[str]:
    """Node names as the ranges `expand` reads back: consecutive numbers of one prefix,
    suffix and width become `prefix[first:last]suffix`; everything else stays a name.

    `sort=True` (a Pool's `spec.nodes`): the distinct names, every run found whatever the
    order, the result sorted. `sort=False` (a report's list): in the order given, only
    neighbours join (`gpu-001`, `gpu-002`, `cpu-x` -> `gpu-[001:002]`, `cpu-x`)."""
    items: list[str | tuple[str, str, int, int]] = [
        _numbered(n) or n for n in (set(names) if sort else names)
    ]
    if sort:  # a name's run next to it: by prefix, suffix, width, number
        items.sort(key=lambda n: ("", "", 0, 0, n) if isinstance(n, str) else (*n, ""))
    runs: list[str | list[Any]] = []  # a name, or [prefix, suffix, width, first, last]
    for item in items:
        last = runs[-1] if runs else None
        if isinstance(item, str):
            runs.append(item)
        elif isinstance(last, list) and tuple(last[:3]) == item[:3] and last[4] + 1 == item[3]:
            last[4] = item[3]
        else:
            runs.append([*item, item[3]])
    shown = [r if isinstance(r, str) else _run(*r) for r in runs]
    return sorted(shown) if sort else shown
