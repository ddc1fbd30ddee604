"""Check stage, inventory family: the node lists of the pools."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, in_file_order, listing, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity, Span
from hetgitops.model.policy import Node, Policy, Pool

# Node fields behind the Fleet topology levels; `hostname` is every node's own name.
_LEVEL_FIELDS = {"zone": "zone", "rack": "rack", "nvlink-domain": "nvlinkDomain"}


@rule("node-duplicate", Severity.ERROR)
def node_duplicate(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A node belongs to one pool and is listed once.

    Fails: pool a lists `gpu-[01:04]` and pool b lists `gpu-04`.
    Passes: pool a lists `gpu-[01:03]` and pool b lists `gpu-04`.
    One finding per overlapping pair of node entries, naming the nodes, with the first entry
    as the related location.
    """
    first_seen: dict[str, tuple[Pool, Node]] = {}
    # (where the repeat is, where the first is) -> the repeated names, in order.
    clashes: dict[tuple[Span, Span], tuple[Node, Pool, Pool, list[str]]] = {}
    for pool in in_file_order(policy.pools.values()):
        for node in pool.nodes:
            first_pool, first = first_seen.setdefault(node.name, (pool, node))
            if first is node:
                continue
            entry = clashes.setdefault(
                (node.origin.span, first.origin.span), (node, first_pool, pool, [])
            )
            entry[3].append(node.name)
    for (_, first_span), (node, first_pool, pool, names) in clashes.items():
        where = "this pool" if first_pool is pool else f"pool '{first_pool.name}'"
        noun = f"node '{names[0]}' is" if len(names) == 1 else f"{len(names)} nodes are"
        detail = "" if len(names) == 1 else f" ({listing(names, 4)})"
        yield error_at(
            "node-duplicate",
            f"{noun} already listed in {where}{detail}, at {first_span}",
            node.origin,
            hint="a node carries one pool's labels; list each node once",
            related=[Related(first_span, "first listed here")],
        )


@rule("topology-incomplete", Severity.WARNING)
def topology_incomplete(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every node has a value for each Fleet topology level (else it is outside the Topology).

    Fails: `topology: {levels: [zone, rack, hostname]}` and a node entry without `rack`.
    Passes: `- {names: "gpu-[01:04]", zone: zone-a, rack: rack-a01}`.
    """
    fleet = policy.fleet
    if fleet is None or fleet.topology_name is None:
        return
    levels = [level for level in fleet.topology_levels if level in _LEVEL_FIELDS]
    reported: set[tuple[Span, str]] = set()
    for pool in policy.pools.values():
        for node in pool.nodes:
            for level in levels:
                where = (node.origin.span, level)
                if _level_value(node, level) is None and where not in reported:
                    reported.add(where)
                    yield warning_at(
                        "topology-incomplete",
                        f"the node entry starting at '{node.name}' (pool '{pool.name}') has no "
                        f"{_LEVEL_FIELDS[level]}, so topology-aware scheduling skips its nodes",
                        node.origin,
                        hint=f"set {_LEVEL_FIELDS[level]} on this node entry, or drop the "
                        f"'{level}' level from Fleet.spec.topology.levels",
                    )


def _level_value(node: Node, level: str) -> str | None:
    return {"zone": node.zone, "rack": node.rack, "nvlink-domain": node.nvlink_domain}[level]
