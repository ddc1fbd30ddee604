"""Drift stage: nodes advertising fewer accelerator units than the policy counts (a failed or
missing card), and what that does to the pool's live quota against its live capacity."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hetgitops.diagnostics import Diagnostic
from hetgitops.drift.findings import finding, some_nodes
from hetgitops.drift.queue_usage import live_quota
from hetgitops.model import quantities
from hetgitops.model.policy import CardType, Node, Policy, Pool
from hetgitops.model.ranges import compact
from hetgitops.plan.capacity import node_units


def node_resources(policy: Policy, pool: Pool, card: CardType, node: Node) -> dict[str, int]:
    """Accelerator units the device plugin should advertise on `node`: during a staged
    sharing reduction the old replicas it is still configured with."""
    units = node_units(pool, card, policy.fleet, node.cards, replicas="advertised")
    return {name: count for name, count in units.items() if count}


def advertised(obj: Mapping[str, Any], resource: str) -> int:
    status = obj.get("status") or {}
    values = status.get("allocatable") or status.get("capacity") or {}
    try:
        return int(quantities.value_of(values.get(resource, 0)))
    except quantities.QuantityError:
        return 0


@dataclass(frozen=True)
class Short:
    """A node advertising fewer units of `resource` than the policy counts."""

    node: Node
    resource: str
    have: int
    want: int

    @property
    def line(self) -> str:
        return f"node {self.node.name} advertises {self.have} of {self.want} {self.resource}"


def shortfalls(
    policy: Policy, pool: Pool, card: CardType, node: Node, obj: Mapping[str, Any]
) -> Iterator[Short]:
    for resource, want in node_resources(policy, pool, card, node).items():
        have = advertised(obj, resource)
        if have < want:
            yield Short(node, resource, have, want)


def pool_finding(
    policy: Policy,
    pool: Pool,
    short: Sequence[Short],
    live: Mapping[str, Mapping[str, Any]],
    cluster_queues: Sequence[Mapping[str, Any]],
) -> Diagnostic:
    """One finding per pool: the nodes short of each resource, and what that does to the
    pool's live quota against its live capacity (counted once per resource)."""
    by_resource: dict[str, list[Short]] = {}
    for item in short:
        by_resource.setdefault(item.resource, []).append(item)
    parts, impacts = [], []
    for resource, items in by_resource.items():
        have, want = sum(i.have for i in items), sum(i.want for i in items)
        names = ", ".join(compact([i.node.name for i in items], sort=False))
        parts.append(f"{names}: {have} of {want} {resource}")
        capacity = sum(advertised(live[n.name], resource) for n in pool.nodes if n.name in live)
        quota = live_quota(policy, cluster_queues, pool, resource)
        if quota > capacity:
            impacts.append(
                f"the live ClusterQueues' quota on {pool.name} ({quota}) now exceeds its "
                f"live capacity ({capacity})" + ("" if len(by_resource) == 1 else f" of {resource}")
            )
        else:
            impacts.append(
                f"live capacity of {pool.name} is {capacity}, live quota {quota}"
                + ("" if len(by_resource) == 1 else f" ({resource})")
            )
    nodes = list({i.node.name: i.node for i in short}.values())
    if len(short) == 1:
        message = f"{short[0].line}; {impacts[0]}"
    else:
        message = (
            f"{some_nodes(nodes)} of pool {pool.name} "
            + ("advertises" if len(nodes) == 1 else "advertise")
            + f" fewer accelerators than the policy counts: {'; '.join(parts)}; "
            + "; ".join(impacts)
        )
    return finding(
        "drift-accelerators",
        message,
        nodes[0].origin.span,
        path=f"Node {nodes[0].name}: status.allocatable.{short[0].resource}",
        hint="a card failed or fell off the bus: repair the node, or lower its card count "
        "in the pool (and the quotas)",
        details=[i.line for i in short] if len(short) > 1 else (),
    )
