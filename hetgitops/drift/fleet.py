"""Drift stage: the fleet itself against the policy, pool by pool: nodes absent from the
cluster, their labels, taints and MIG state (`node_drift`), their accelerators
(`accelerators`), and nodes with accelerators that no pool lists."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from hetgitops.diagnostics import Diagnostic
from hetgitops.drift import accelerators, node_drift
from hetgitops.drift.findings import finding
from hetgitops.model.accelerators import is_accelerator
from hetgitops.model.policy import Node, Policy, Pool
from hetgitops.model.ranges import compact


def check(
    policy: Policy,
    nodes: Sequence[Mapping[str, Any]],
    cluster_queues: Sequence[Mapping[str, Any]],
    *,
    now: dt.datetime,
    mig_pending_timeout: dt.timedelta,
) -> list[Diagnostic]:
    """Node findings, one per pool and rule with the nodes as ranges (an NFD or node outage
    takes thousands of nodes at once; a line each would bury every other finding); each
    finding's `details` has a line per node."""
    live = {str(n["metadata"]["name"]): n for n in nodes}
    found: list[Diagnostic] = []
    pooled: set[str] = set()
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        absent = [n for n in pool.nodes if n.name not in live]
        if absent:
            found.append(_absent(pool, absent))
        labels: list[node_drift.Off] = []
        taints: list[node_drift.Off] = []
        short: list[accelerators.Short] = []
        for node in pool.nodes:
            pooled.add(node.name)
            obj = live.get(node.name)
            if obj is None:
                continue
            labels += node_drift.label_offs(policy, pool, node, obj)
            taints += node_drift.taint_offs(pool, node, obj)
            found += node_drift.mig_state(node, obj, now, mig_pending_timeout)
            if card is not None:
                short += accelerators.shortfalls(policy, pool, card, node, obj)
        found += node_drift.pool_findings(policy, pool, labels, taints)
        if short:
            found.append(accelerators.pool_finding(policy, pool, short, live, cluster_queues))
    resources = {c.resource_name for c in policy.card_types.values()}
    found += [
        _unpooled(policy, n)
        for name, n in live.items()
        if name not in pooled and _has_gpus(n, resources)
    ]
    return found


def _absent(pool: Pool, nodes: Sequence[Node]) -> Diagnostic:
    """One finding per pool, the missing nodes as ranges."""
    if len(nodes) == 1:
        what = f"node {nodes[0].name} of pool {pool.name} is not in the cluster"
    else:
        shown = ", ".join(compact([n.name for n in nodes], sort=False))
        what = f"{len(nodes)} nodes of pool {pool.name} are not in the cluster: {shown}"
    return finding(
        "drift-node-absent",
        what,
        nodes[0].origin.span,
        path=f"Node {nodes[0].name}",
        hint="remove them from the pool, or bring the nodes back",
        details=[f"node {n.name} is not in the cluster" for n in nodes] if len(nodes) > 1 else (),
    )


def _has_gpus(obj: Mapping[str, Any], resources: set[str]) -> bool:
    status = obj.get("status") or {}
    names = set(status.get("capacity") or {}) | set(status.get("allocatable") or {})
    return any(n in resources or is_accelerator(n) for n in names) and any(
        accelerators.advertised(obj, n) > 0 for n in names if n in resources or is_accelerator(n)
    )


def _unpooled(policy: Policy, obj: Mapping[str, Any]) -> Diagnostic:
    name = obj["metadata"]["name"]
    span = (
        policy.fleet.origin.span if policy.fleet else next(iter(policy.pools.values())).origin.span
    )
    return finding(
        "drift-node-unpooled",
        f"node {name} advertises accelerators but is in no pool of the policy",
        span,
        path=f"Node {name}",
        hint="add it to a pool (its cards get no quota and no labels otherwise)",
    )
