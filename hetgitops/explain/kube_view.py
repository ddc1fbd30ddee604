"""Explain stage: kube-scheduler's view of a workload's pods: per pod set the nodes that
match its selectors, tolerate their taints and fit a pod (after Kueue injected the flavor's
node labels and tolerations)."""

from __future__ import annotations

from hetgitops.explain import kueue
from hetgitops.explain.nodes import admits, pool_nodes, slots, taint_text, untolerated
from hetgitops.explain.quotas import Flavor, flavors
from hetgitops.explain.workload import PodSet, Workload
from hetgitops.model.policy import Policy, Pool


def kube_scheduler(
    policy: Policy, workload: Workload, verdict: kueue.KueueVerdict | None
) -> tuple[str, ...]:
    """Per pod set: the largest node, selectors and taints, after Kueue injected the flavor's
    nodeLabels and tolerations."""
    lines: list[str] = []
    results = verdict.pod_sets if verdict else ()
    by_set = {r.pod_set.name: r for r in results}
    for pod_set in workload.pod_sets:
        result = by_set.get(pod_set.name)
        pools = (
            [policy.pools[result.flavor.pool]]
            if result is not None and result.flavor is not None
            else list(policy.pools.values())
        )
        flavor = None
        if result is not None and result.flavor is not None:
            team = policy.teams.get(verdict.cluster_queue) if verdict else None
            if team is not None:
                flavor = next(
                    (f for f in flavors(policy, team) if f.name == result.flavor.flavor),
                    None,
                )
        lines.append(pod_line(policy, pod_set, pools, flavor))
    return tuple(lines)


def pod_line(policy: Policy, pod_set: PodSet, pools: list[Pool], flavor: Flavor | None) -> str:
    selector = {**pod_set.node_selector, **(flavor.node_labels if flavor else {})}
    tolerations = (*pod_set.tolerations, *(flavor.tolerations if flavor else ()))
    nodes = [n for pool in pools for n in pool_nodes(policy, pool)]
    matched = [n for n in nodes if admits(selector, pod_set.node_affinity, n.labels)]
    tolerating = [n for n in matched if untolerated(n, tolerations) is None]
    fitting = [n for n in tolerating if slots(n, pod_set.requests, None) >= 1]
    accel = {r: v for r, v in pod_set.requests.items() if r not in ("cpu", "memory")}
    ask = ", ".join(f"{v} {r}" for r, v in sorted(accel.items())) or "no accelerator"
    if fitting:
        largest = max(slots(n, pod_set.requests, None) for n in fitting)
        return (
            f"pod set {pod_set.name}: {len(fitting)} node(s) fit a pod of {ask} "
            f"(up to {largest} such pods per node)"
        )
    parts = []
    if len(matched) < len(nodes):
        parts.append(
            f"{len(nodes) - len(matched)} node(s) didn't match Pod's node affinity/selector"
        )
    untol = [n for n in matched if untolerated(n, tolerations) is not None]
    if untol:
        taint = untolerated(untol[0], tolerations)
        assert taint is not None
        parts.append(f"{len(untol)} node(s) had untolerated taint {{{taint_text(taint)}}}")
    if tolerating:
        resource = next(iter(accel), "cpu")
        parts.append(f"{len(tolerating)} Insufficient {resource}")
    return f"pod set {pod_set.name}: 0/{len(nodes)} nodes are available: " + ", ".join(parts) + "."
