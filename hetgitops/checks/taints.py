"""Check stage, taints family: taints whose arrival evicts running work, and a flavor told to
list taints the pool does not declare, and taints a Node cannot carry together.

nfd-master applies a pool's taints to its nodes (`enableTaints`, compilers/agents.py) in the same
sync that renders them. A `NoExecute` taint makes the kubelet's taint manager evict, at once,
every pod on those nodes that does not tolerate it: serving replicas, training gangs (one evicted
member fails the gang), and any agent whose Helm values were not upgraded first. Kueue does not
stop it: a ResourceFlavor's tolerations reach only the pods it admits from then on.
"""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, warning_at
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


@rule("flavor-node-taints-without-taints", Severity.WARNING)
def flavor_node_taints_without_taints(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """`spec.kueue.flavorNodeTaints: true` on a pool without taints: the ResourceFlavor lists the
    pool's taints as its `nodeTaints`, and there are none, so the render writes no `nodeTaints`
    and the setting says nothing. A hand-written flavor whose nodes carry taints the pool does
    not declare keeps those taints only in the cluster: Kueue never hears of them, and jobs
    from `hetgitops jobs` do not tolerate them, so kube-scheduler leaves their pods pending.

    Fails: `kueue: {flavorNodeTaints: true}` with no `taints`.
    Passes: `taints: [{key: dedicated, value: training, effect: NoSchedule}]` beside it.
    Fix: declare the taints the pool's nodes carry in `spec.taints` (the flavor then lists and
    tolerates them, and admitted pods tolerate them), or remove `flavorNodeTaints`.
    """
    for pool in policy.pools.values():
        if pool.flavor_node_taints and not pool.taints:
            yield warning_at(
                "flavor-node-taints-without-taints",
                f"pool '{pool.name}' sets flavorNodeTaints but declares no taints: its "
                "ResourceFlavor gets no nodeTaints",
                pool.origin,
                "spec",
                "kueue",
                "flavorNodeTaints",
                hint="declare the taints the pool's nodes carry in spec.taints, or remove "
                "spec.kueue.flavorNodeTaints",
            )


@rule("pool-taint-duplicate", Severity.ERROR)
def pool_taint_duplicate(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Two taints of a pool with the same key and effect: the API server refuses them on a
    Node (taints must be unique by key and effect), so nfd-master cannot taint the pool's nodes,
    and Kueue's ResourceFlavor webhook refuses them as the flavor's `nodeTaints`
    (`spec.kueue.flavorNodeTaints`) the same way.

    Fails: `taints: [{key: dedicated, value: a, effect: NoSchedule}, {key: dedicated, value: b,
    effect: NoSchedule}]`.
    Passes: one of them, or the same key with another effect.
    Fix: keep one taint per key and effect (one value; a toleration with `operator: Exists`
    tolerates any value).
    """
    for pool in policy.pools.values():
        seen: set[tuple[str, str]] = set()
        for index, taint in enumerate(pool.taints):
            if (taint.key, taint.effect) in seen:
                yield error_at(
                    "pool-taint-duplicate",
                    f"pool '{pool.name}' has two taints '{taint.key}' with effect {taint.effect}: "
                    "a Node (and a ResourceFlavor's nodeTaints) takes one per key and effect",
                    pool.origin,
                    "spec",
                    "taints",
                    index,
                    hint="keep one taint per key and effect",
                )
            seen.add((taint.key, taint.effect))
