"""Plan stage, maintenance: which nodes a maintenance window takes out (`capacity --without`),
and the policy as it would be without them, so every plan fact (capacity per resource, quota
plans, reach) is computed for the reduced fleet by the same functions as for the whole one.

A selector names nodes the way an operator says it: a pool name (all its nodes), a node name,
a shell pattern over node names (`gpu-a800-b02-*`), or `rack=NAME` / `zone=NAME` (the nodes'
`rack` and `zone` in the pool inventory)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from hetgitops.model.policy import Node, Policy, Pool

PLACES = ("rack", "zone")


@dataclass(frozen=True)
class Selection:
    """The nodes taken out, by pool, in inventory order; and selectors that matched nothing."""

    nodes: Mapping[str, tuple[Node, ...]]  # pool -> its nodes taken out (pools with any)
    unmatched: tuple[str, ...]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(n.name for nodes in self.nodes.values() for n in nodes)


def _matches(selector: str, pool: Pool, node: Node) -> bool:
    key, eq, value = selector.partition("=")
    if eq and key in PLACES:
        return (node.rack if key == "rack" else node.zone) == value
    if selector == pool.name or selector == node.name:
        return True
    return any(c in selector for c in "*?[") and fnmatch.fnmatchcase(node.name, selector)


def split(values: Iterable[str]) -> tuple[str, ...]:
    """`--without a,b --without c` as selectors a, b, c (blanks dropped, order kept)."""
    return tuple(s.strip() for v in values for s in v.split(",") if s.strip())


def select(policy: Policy, selectors: Sequence[str]) -> Selection:
    """The nodes any selector names; each selector that names none is `unmatched`."""
    taken: dict[str, list[Node]] = {}
    used: set[str] = set()
    for pool in policy.pools.values():
        for node in pool.nodes:
            hits = [s for s in selectors if _matches(s, pool, node)]
            if hits:
                taken.setdefault(pool.name, []).append(node)
                used.update(hits)
    unmatched = tuple(s for s in selectors if s not in used)
    return Selection({p: tuple(n) for p, n in taken.items()}, unmatched)


def without(policy: Policy, selection: Selection) -> Policy:
    """The policy with the selected nodes out of their pools' inventories (a pool may be left
    empty): what the fleet offers during the window."""
    gone = selection.names
    pools = {
        name: replace(pool, nodes=tuple(n for n in pool.nodes if n.name not in gone))
        if name in selection.nodes
        else pool
        for name, pool in policy.pools.items()
    }
    return replace(policy, pools=pools)


# What becomes of an admitted Workload whose nodes the window takes out (`capacity --without
# --kubeconfig`): the preemption model's answer, plain data both capacity and explain read.
READMITTED, PREEMPTS, PENDING, UNKNOWN = "readmitted", "preempts", "pending", "unknown"


class VictimFacts(Protocol):
    """What every preemption answer says of a victim (explain --preempt's `Victim`, the
    maintenance plan's `Preempted`)."""

    @property
    def name(self) -> str: ...
    @property
    def cluster_queue(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def reason(self) -> str: ...
    @property
    def setting(self) -> str: ...


def victim_json(v: VictimFacts) -> dict[str, object]:
    """A victim in the JSON reports (schemas/explain-preempt and maintenance): one shape."""
    return {
        "name": v.name,
        "clusterQueue": v.cluster_queue,
        "priority": v.priority,
        "reason": v.reason,
        "setting": v.setting,
    }


@dataclass(frozen=True)
class Preempted:
    """A Workload Kueue would preempt to re-admit one from the nodes, with Kueue's reason."""

    name: str  # namespace/name
    cluster_queue: str
    priority: int
    reason: str  # InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing
    setting: str  # the ClusterQueue preemption setting that allows it


@dataclass(frozen=True)
class Readmission:
    """One Workload from the nodes (or one they preempted), in the order Kueue would process
    it: re-admitted in its flavor (pool) without preempting, re-admitted by preempting
    `victims`, or left pending (`why`); `unknown` when the model cannot say (fair sharing)."""

    name: str  # namespace/name
    cluster_queue: str
    priority: int
    pools: tuple[str, ...]  # the flavors' pools it held and asks again
    outcome: str
    victims: tuple[Preempted, ...] = ()
    why: tuple[str, ...] = ()
    preempted_by: str = ""  # not on the nodes: queued again because this one preempted it
