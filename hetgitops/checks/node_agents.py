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
from hetgitops.model.tolerations import tolerates

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

    The rule judges the agents' Helm values as the compilers write them (the same functions),
    which give every agent a toleration for each pool taint it must run under: it fails only
    when those values would leave a tainted pool without an agent.

    Fails: rendered GPU Operator values whose `daemonsets.tolerations` lack a pool's
    `hetgitops.io/pool` taint while the pool has NVIDIA cards.
    Passes: the values as rendered: the NFD worker (nodes target), the GPU Operator's operands
    and its bundled NFD worker (gpu-operator target, with or without nodes) tolerate every
    pool taint.
    Fix: install the agents from the rendered Helm values (upgrade the releases before the
    taint lands); if you install them from your own values, add a toleration with the taint's
    key and effect to them; or drop the taint from the pool.
    """
    for name, tolerations, runs_on in _agents(policy):
        for pool in policy.pools.values():
            if not runs_on(pool):
                continue
            for index, taint in enumerate(pool.taints):
                if tolerates(tolerations, taint.key, taint.value, taint.effect):
                    continue
                yield error_at(
                    "agent-untolerated-taint",
                    f"{name} does not tolerate taint '{taint.key}' of pool '{pool.name}', so "
                    "it never runs there (no labels / no GPU software on those nodes)",
                    pool.origin,
                    "spec",
                    "taints",
                    index,
                    hint="install the agent from the rendered Helm values, which tolerate "
                    "every pool taint, or add the toleration to your own values",
                )
