"""Scaffold stage: what `init` was told about one pool; the error for an impossible answer."""

from __future__ import annotations

from dataclasses import dataclass

from hetgitops.checks.inventory import PLACEHOLDER_PREFIX
from hetgitops.model.ranges import RangeError, expand


class BadAnswer(ValueError):
    """An answer that cannot make a valid fleet (the CLI reports it as a usage error)."""


@dataclass(frozen=True)
class PoolAnswer:
    name: str
    card_type: str
    nodes: int = 2
    cards_per_node: int = 8
    # The nodes' real names (`gpu-[01:16]` ranges allowed); None: placeholders
    # `replace-me-<pool>-[1:N]`, which validate warns about (node-name-placeholder).
    node_names: tuple[str, ...] | None = None
    # `init --mig POOL=LAYOUT`: `all-<profile>` or `mixed` (see mig_devices); None: whole GPUs.
    mig_layout: str | None = None

    @property
    def cards(self) -> int:
        return self.nodes * self.cards_per_node

    @property
    def placeholder(self) -> bool:
        return self.node_names is None

    def names(self) -> tuple[str, ...]:
        if self.node_names is not None:
            return self.node_names
        stem = PLACEHOLDER_PREFIX + self.name[:40]  # a node name is a label value: 63 at most
        return (f"{stem}-[1:{self.nodes}]" if self.nodes > 1 else stem,)


def named_pool(pool: PoolAnswer, names: str) -> PoolAnswer:
    """`pool` with the nodes `names` lists (comma-separated, ranges allowed), counted."""
    patterns = tuple(n.strip() for n in names.split(",") if n.strip())
    try:
        count = sum(len(expand(p)) for p in patterns)
    except RangeError as exc:
        raise BadAnswer(f"pool {pool.name!r}: {exc}") from None
    if not count:
        return pool
    return PoolAnswer(
        pool.name, pool.card_type, count, pool.cards_per_node, patterns, pool.mig_layout
    )
