"""Check stage, inventory family: the node lists of the pools."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, in_file_order, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity, Span, listing
from hetgitops.model.policy import Node, Policy, Pool

# How `hetgitops init` begins the node names it makes up when it is given none.
PLACEHOLDER_PREFIX = "replace-me-"
# Node fields behind the Fleet topology levels; `hostname` is every node's own name.
_LEVEL_FIELDS = {"zone": "zone", "rack": "rack", "nvlink-domain": "nvlinkDomain"}


@rule("node-duplicate", Severity.ERROR)
def node_duplicate(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A node belongs to one pool and is listed once.

    One finding per overlapping pair of node entries, naming the nodes, with the first entry
    as the related location.
    Fails: pool a lists `gpu-[01:04]` and pool b lists `gpu-04`.
    Passes: pool a lists `gpu-[01:03]` and pool b lists `gpu-04`.
    Fix: remove the node from all but the pool it is physically in; when two ranges overlap, shorten
    one (`gpu-[01:03]` beside `gpu-04`).
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


@rule("topology-incomplete", Severity.ERROR)
def topology_incomplete(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every node has a value for each Fleet topology level: every ResourceFlavor of a fleet
    with a topology is topology-bound, and Kueue's topology-aware scheduling counts only nodes
    that carry every level label (Kueue v0.19.2 pkg/util/tas/node.go:21-33, used by
    pkg/cache/scheduler/tas_nodes_cache.go:118), so a node without one offers the quotas that
    count it nothing: a pool whose nodes all lack a level admits no workload at all.

    Fails: `topology: {levels: [zone, rack, hostname]}` and a node entry without `rack`.
    Passes: `- {names: "gpu-[01:04]", zone: zone-a, rack: rack-a01}`; a Topology adopted with
    its own `nodeLabels` (the nodes already carry those labels, hetgitops does not set them).
    Fix: set the missing level (`zone`, `rack` or `nvlinkDomain`) on the node entry the finding
    points at, or drop that level from Fleet.spec.topology.levels; if the nodes already carry
    Kueue's topology labels, adopt the Topology with its own `nodeLabels`.
    """
    fleet = policy.fleet
    if fleet is None or fleet.topology_name is None or fleet.topology_node_labels:
        return
    levels = [level for level in fleet.topology_levels if level in _LEVEL_FIELDS]
    for pool in policy.pools.values():
        lacking: dict[tuple[Span, str], list[Node]] = {}
        for node in pool.nodes:
            for level in levels:
                if _level_value(node, level) is None:
                    lacking.setdefault((node.origin.span, level), []).append(node)
        for (_, level), entry in lacking.items():
            cards = sum(node.cards for node in entry)
            everyone = len(entry) == len(pool.nodes)
            share = (
                "none of the pool's nodes count"
                if everyone
                else (f"{len(entry)} of its {len(pool.nodes)} nodes ({cards} cards) do not count")
            )
            yield error_at(
                "topology-incomplete",
                f"the node entry starting at '{entry[0].name}' (pool '{pool.name}') has no "
                f"{_LEVEL_FIELDS[level]}: Kueue's topology-aware scheduling leaves out every "
                f"node without the '{level}' label, so {share} toward the quotas on this pool"
                + (" and it admits nothing" if everyone else ""),
                entry[0].origin,
                hint=f"set {_LEVEL_FIELDS[level]} on this node entry, "
                f"or drop the '{level}' level from Fleet.spec.topology.levels",
            )


def _level_value(node: Node, level: str) -> str | None:
    return {"zone": node.zone, "rack": node.rack, "nvlink-domain": node.nvlink_domain}[level]


@rule("node-name-placeholder", Severity.WARNING)
def node_name_placeholder(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """No node name is a placeholder `hetgitops init` wrote (`replace-me-...`).

    Without real names the nodes target labels nodes that do not exist, and the pool's
    capacity is made up. One finding per node entry.
    Fails: `- names: replace-me-train-[1:2]` (what `hetgitops init` writes without node names).
    Passes: `- names: gpu-h100-[01:02]`.
    Fix: replace the entry with your nodes' names (`kubectl get nodes`; ranges like
    `gpu-[01:16]` expand), keeping as many nodes as the pool has.
    """
    for pool in in_file_order(policy.pools.values()):
        entries: dict[Span, list[Node]] = {}
        for node in pool.nodes:
            if node.name.startswith(PLACEHOLDER_PREFIX):
                entries.setdefault(node.origin.span, []).append(node)
        for nodes in entries.values():
            names = listing([n.name for n in nodes], 3)
            yield warning_at(
                "node-name-placeholder",
                f"pool '{pool.name}' lists placeholder node names ({names}) that "
                "`hetgitops init` wrote: replace them with your nodes' names",
                nodes[0].origin,
                hint="`kubectl get nodes` lists them; ranges like gpu-[01:16] expand",
            )
