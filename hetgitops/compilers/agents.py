"""Compile stage, shared: what the node agents (NFD worker, GPU Operator operands) tolerate.

A pool taint keeps every pod without a matching toleration off the pool, node agents included:
without NFD's worker there is no NodeFeature for the node, so no NodeFeatureRule matches it (no
pool, zone, rack or node-group label), and without the GPU Operator's DaemonSets (driver,
device plugin, GFD, mig-manager) no `nvidia.com/gpu` capacity. So the Helm values hetgitops
emits make every agent tolerate every pool taint it must run under.

Who taints the nodes: hetgitops, through NFD. Each pool's NodeFeatureRule carries the pool's
taints and nfd-master runs with `enableTaints: true` (both in the `nodes` target), so NFD puts
the taints on (and takes them off) the pool's nodes, like the labels.
"""

from __future__ import annotations

from typing import Any

from hetgitops.model.policy import Policy, Pool
from hetgitops.plan.flavors import toleration

# Chart defaults that a `tolerations:` value replaces (Helm replaces lists), kept explicitly.
# GPU Operator values.yaml `daemonsets.tolerations`:
GPU_OPERATOR_DEFAULT = ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
# GPU Operator values.yaml `node-feature-discovery.worker.tolerations`:
BUNDLED_NFD_DEFAULT = (
    {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    },
    *GPU_OPERATOR_DEFAULT,
)
NVIDIA = "nvidia"


def is_nvidia(policy: Policy, pool: Pool) -> bool:
    card = policy.card_type_of(pool)
    return card is not None and card.vendor == NVIDIA


def pool_tolerations(policy: Policy, *, nvidia_only: bool = False) -> list[dict[str, Any]]:
    """One toleration per distinct pool taint, in a stable order."""
    found: dict[str, dict[str, Any]] = {}
    for pool in policy.pools.values():
        if nvidia_only and not is_nvidia(policy, pool):
            continue
        for taint in pool.taints:
            item = toleration(taint)
            found.setdefault(repr(sorted(item.items())), item)
    return [found[k] for k in sorted(found)]


def with_defaults(
    defaults: tuple[dict[str, Any], ...], extra: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    return [*defaults, *(t for t in extra if t not in defaults)]
