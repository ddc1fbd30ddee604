"""Check stage, node-agents family: every node agent in the Fleet's targets runs on every pool.

The agents' tolerations come from the same functions that write their Helm values
(`compilers/agents.py`), so this rule judges exactly what is rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hetgitops.checks._common import error_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.compilers import agents, gpu_operator, nodes
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy, Pool

Agent = tuple[str, list[dict[str, Any]], Callable[[Pool], bool]]


def _agents(policy: Policy) -> list[Agent]:
    fleet = policy.fleet
    if fleet is None:
        return []
    found: list[Agent] = []
    if "nodes" in fleet.targets:
        worker = nodes.nfd_helm_values(policy).get("worker", {})
        found.append(("the NFD worker", worker.get("tolerations", []), lambda p: True))
    if "gpu-operator" in fleet.targets:
        values = gpu_operator.helm_values(policy, fleet)
        operands = values.get("daemonsets", {}).get("tolerations", agents.GPU_OPERATOR_DEFAULT)
        found.append(
            ("the GPU Operator's DaemonSets", list(operands), lambda p: agents.is_nvidia(policy, p))
        )
        bundled = values.get("node-feature-discovery", {}).get("worker", {})
        default = list(agents.BUNDLED_NFD_DEFAULT)
        found.append(
            (
                "the GPU Operator's bundled NFD worker",
                bundled.get("tolerations", default),
                lambda p: True,
            )
        )
    return found


@rule("agent-untolerated-taint", Severity.ERROR)
def agent_untolerated_taint(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every node agent the Fleet's targets configure tolerates every pool taint it must run
    under: without NFD's worker a node gets none of its labels, without the GPU Operator's
    DaemonSets no `nvidia.com/gpu`.

    Fails: `targets: [kueue, gpu-operator]` (no `nodes`) and a tainted pool: the GPU
    Operator's bundled NFD worker keeps its chart tolerations.
    Passes: the same with the `nodes` target, whose values make both NFD workers tolerate it.
    Fix: add `nodes` to Fleet spec.targets: its rendered NFD and GPU Operator Helm values tolerate
    every pool taint. If you install those agents from your own values, add a toleration with the
    taint's key and effect to them and upgrade the releases before the taint lands; or drop the
    taint from the pool.
    """
    for name, tolerations, runs_on in _agents(policy):
        for pool in policy.pools.values():
            if not runs_on(pool):
                continue
            for index, taint in enumerate(pool.taints):
                if agents.tolerates(tolerations, taint.key, taint.value, taint.effect):
                    continue
                yield error_at(
                    "agent-untolerated-taint",
                    f"{name} does not tolerate taint '{taint.key}' of pool '{pool.name}', so "
                    "it never runs there (no labels / no GPU software on those nodes)",
                    pool.origin,
                    "spec",
                    "taints",
                    index,
                    hint="add the `nodes` target (its Helm values carry the tolerations), or "
                    "add the toleration to the agent's Helm values yourself",
                )
