"""`capacity --without`: the exact cordon/taint sequence for a maintenance window, per pool.

Order and why (Kubernetes and Kueue v0.19.2 behaviour):
1. `kubectl cordon`: `spec.unschedulable` makes kube-scheduler's NodeUnschedulable filter
   refuse new pods, and a Kueue flavor with a topology drops the node from its TAS node cache,
   so no new TAS admission counts it.
2. `kubectl taint ... hetgitops.io/maintenance=planned:NoSchedule`: says why the node is out and
   survives an uncordon by another tool; the pool's own taints stay, and no toleration the
   pool's ResourceFlavor adds to admitted pods (`plan.flavors.toleration`) tolerates this key.
3. `kubectl drain`: evicts the running pods (PodDisruptionBudgets respected; DaemonSet pods
   stay). Their Workloads keep their quota until their jobs stop.
4. MIG nodes after the work: wait for `nvidia.com/mig.config.state=success` (the MIG manager
   re-applies the layout the nodes' `nvidia.com/mig.config` label names) before step 5.
5. Remove the taint, then uncordon.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from hetgitops.model.policy import Policy
from hetgitops.model.tolerations import tolerates
from hetgitops.plan import flavors
from hetgitops.plan.maintenance import Selection

KEY, VALUE = "hetgitops.io/maintenance", "planned"
# The GPU Operator's MIG manager reports a layout applied in this node label.
MIG_STATE = "'{.metadata.labels.nvidia\\.com/mig\\.config\\.state}'"


@dataclass(frozen=True)
class Step:
    command: str  # a kubectl command line
    why: str


def _pool_taints(policy: Policy, pool_name: str) -> str:
    pool = policy.pools[pool_name]
    shown = [
        f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in pool.taints
    ]
    tolerations = [flavors.toleration(t) for t in pool.taints]
    if tolerates(tolerations, KEY, VALUE, "NoSchedule"):  # a pool taint keyed like ours
        return f"; WARNING: pool '{pool_name}' admitted pods tolerate {KEY}: pick another key"
    kept = ", ".join(shown) if shown else "none"
    return f"; the pool's taints stay ({kept}) and its pods' tolerations do not match {KEY}"


def _cordon_why(policy: Policy, pool_name: str) -> str:
    """What cordoning changes for Kueue: a topology-aware flavor stops counting the node; a
    quota-only flavor never counted nodes."""
    pool = policy.pools[pool_name]
    fleet = policy.fleet
    if fleet is not None and "topologyName" in flavors.flavor_spec(policy, fleet, pool):
        return (
            f"pool {pool_name}: no new pods; Kueue's topology-aware flavor drops the node "
            "from its TAS cache, so work it cannot place elsewhere stays pending in Kueue"
        )
    return (
        f"pool {pool_name}: no new pods; Kueue's flavor counts quota, not nodes: work it "
        "admits for these cards waits at kube-scheduler"
    )


def steps(policy: Policy, selection: Selection, mig_nodes: Set[str]) -> tuple[Step, ...]:
    """The commands in order, every node by name (one node per command, so a failed one is
    visible); `mig_nodes` wait for the MIG manager before they return."""
    found: list[Step] = []
    for pool, nodes in selection.nodes.items():
        names = [n.name for n in nodes]
        for name in names:
            found.append(Step(f"kubectl cordon {name}", _cordon_why(policy, pool)))
        for name in names:
            found.append(
                Step(
                    f"kubectl taint nodes {name} {KEY}={VALUE}:NoSchedule",
                    "marks the window" + _pool_taints(policy, pool),
                )
            )
        for name in names:
            found.append(
                Step(
                    f"kubectl drain {name} --ignore-daemonsets --delete-emptydir-data",
                    "evicts the running pods (PodDisruptionBudgets respected)",
                )
            )
    for pool, nodes in selection.nodes.items():
        for node in nodes:
            if node.name in mig_nodes:
                found.append(
                    Step(
                        f"kubectl wait node/{node.name} --for=jsonpath={MIG_STATE}=success",
                        f"after the work: the MIG manager re-applied pool {pool}'s layout",
                    )
                )
        for node in nodes:
            found.append(Step(f"kubectl taint nodes {node.name} {KEY}-", "after the work"))
            found.append(Step(f"kubectl uncordon {node.name}", "after the work: back in service"))
    return tuple(found)
