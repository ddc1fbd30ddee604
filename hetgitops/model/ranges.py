"""Node inventory: expand compact ranges such as `gpu-h100-[001:064]` into node names."""

from __future__ import annotations

import re
from itertools import product

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
