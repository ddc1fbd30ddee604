"""Check stage, taints family: taints whose arrival evicts running work.

nfd-master applies a pool's taints to its nodes (`enableTaints`, compilers/agents.py) in the same
sync that renders them. A `NoExecute` taint makes the kubelet's taint manager evict, at once,
every pod on those nodes that does not tolerate it: serving replicas, training gangs (one evicted
member fails the gang), and any agent whose Helm values were not upgraded first. Kueue does not
stop it: a ResourceFlavor's tolerations reach only the pods it admits from then on.
"""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy

SAFE_ORDER = (
    "roll it out in three syncs: first the taint with effect NoSchedule (no new pods land), "
    "then drain or finish the work on those nodes (kubectl drain, or wait for the jobs), then "
    "effect NoExecute; upgrade the GPU Operator and NFD Helm releases with the rendered agent "
    "values before the taint lands so their operands tolerate it; set evictsRunningPods: true "
    "on the taint to say the eviction is intended"
)


@rule("taint-evicts-running-pods", Severity.ERROR)
def taint_evicts_running_pods(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A pool taint with effect `NoExecute` says `evictsRunningPods: true`: the sync that
    adds it evicts every pod on the pool's nodes that does not tolerate it.

    Fails: `taints: [{key: maintenance, effect: NoExecute}]`.
    Passes: `taints: [{key: maintenance, effect: NoExecute, evictsRunningPods: true}]`, or
    `effect: NoSchedule` (new pods stay away, running ones keep running).
    Fix: roll the taint out in three syncs: `effect: NoSchedule` first, then drain or let the work
    on those nodes finish (with the agents upgraded to the rendered tolerations), then `NoExecute`;
    or add `evictsRunningPods: true` to say the eviction is intended.
    """
    for pool in policy.pools.values():
        for index, taint in enumerate(pool.taints):
            if taint.effect != "NoExecute" or taint.evicts_running_pods:
                continue
            nodes = len(pool.nodes)
            yield error_at(
                "taint-evicts-running-pods",
                f"taint '{taint.key}' of pool '{pool.name}' has effect NoExecute: when nfd-master "
                f"applies it, every pod on the pool's {nodes} node(s) that does not tolerate it "
                "is evicted (serving replicas, training gangs, node agents not yet upgraded)",
                pool.origin,
                "spec",
                "taints",
                index,
                "effect",
                hint=SAFE_ORDER,
            )
