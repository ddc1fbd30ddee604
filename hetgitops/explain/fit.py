"""Will it run: whether a pod of each pod set Kueue admitted fits one node of its flavor,
for flavors without a Topology (with one, Kueue's own placement answers, `topology.py`).

Why: without topology-aware scheduling Kueue admits on quota alone; a pod that asks more of
a resource than any node of the flavor offers is then admitted and never scheduled. cpu and
memory per node are the estimate of `nodes.NodeView.host`."""

from __future__ import annotations

from collections.abc import Mapping

from hetgitops.explain.kueue import KueueVerdict
from hetgitops.explain.kueue_messages import fmt
from hetgitops.explain.nodes import NodeView, admits, pool_nodes, untolerated
from hetgitops.explain.quotas import Flavor
from hetgitops.model.policy import Policy

UNSCHEDULABLE = "Unschedulable"
SKIPPED = ("pods", "ephemeral-storage")


def _offer(node: NodeView, resource: str) -> int:
    if resource in ("cpu", "memory"):
        return node.host.get(resource, 0)
    return node.units.get(resource, 0)


def _holds(node: NodeView, requests: Mapping[str, int]) -> bool:
    return all(
        amount <= _offer(node, resource)
        for resource, amount in requests.items()
        if amount > 0 and resource not in SKIPPED
    )


def unschedulable(
    policy: Policy, verdict: KueueVerdict, flavors: Mapping[str, Flavor]
) -> str | None:
    """For an admitted verdict: why no node of a pod set's flavor holds one of its pods (the
    first such pod set), or None when every pod fits some node or a Topology placed it."""
    if not verdict.admitted:
        return None
    for result in verdict.pod_sets:
        chosen = result.flavor
        pod_set = result.pod_set
        flavor = flavors.get(chosen.flavor) if chosen else None
        if flavor is None or result.placement is not None or pod_set.count == 0:
            continue
        selector = {**pod_set.node_selector, **flavor.node_labels}
        tolerations = (*pod_set.tolerations, *flavor.tolerations)
        nodes = [
            n
            for n in pool_nodes(policy, flavor.plan.pool)
            if admits(selector, pod_set.node_affinity, n.labels)
            and untolerated(n, tolerations) is None
        ]
        if any(_holds(n, pod_set.requests) for n in nodes):
            continue
        head = (
            f"Kueue admits the quota in flavor {flavor.name} (pool {flavor.plan.pool.name}); "
            f"no node can hold a pod of pod set {pod_set.name}"
        )
        if not nodes:
            return f"{head}: no node of the pool matches its selector, affinity and tolerations"
        for resource, amount in sorted(pod_set.requests.items()):
            most = max(_offer(n, resource) for n in nodes)
            if amount > 0 and resource not in SKIPPED and amount > most:
                return (
                    f"{head}: it asks {fmt(resource, amount)} {resource}, the biggest node "
                    f"offers {fmt(resource, most)}"
                )
        return f"{head}: no node offers all it asks at once"
    return None
