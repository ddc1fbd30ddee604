"""Compile stage, `volcano` target: one flat level of Queues and the scheduler ConfigMap.

Every NVIDIA card is `nvidia.com/gpu` to Volcano, so a per-card-type quota needs one queue per
(team, pool), bound to the pool's nodes by nodegroup affinity: the `<team>-<pool>` leaves, all
children of `root`. There is deliberately no team (or pool) parent queue: Volcano's webhook
requires a parent's deserved and guarantee to cover the sum of its children's at every step,
so growing needs the parent first and shrinking needs the children first; no static order
(Argo CD waves, Flux stages, `kubectl apply -k`) can sync both, and Flux's dry-run of a whole
stage cannot even create a child before its parent. Children of `root` are checked against
nothing (validate_queue.go, `validateHierarchicalQueueResources`), so every single policy
change applies in one pass in any order (`tests/compilers/test_volcano_day2.py` replays it).

The numbers (deserved, capability, guarantee: what the team's Kueue ClusterQueue means) are
plan/volcano_quota.py's `QueuePlan`s; this module only spells them as Queues. A team with
`volcano.layout: team` gets one Queue across its pools instead, without nodegroup affinity (its
jobs keep to a pool by their own nodeSelector, as `hetgitops jobs` writes them).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from hetgitops.compilers import COMPILERS
from hetgitops.compilers.argocd import sync_wave
from hetgitops.compilers.volcano_scheduler import (
    VolcanoConfigError,
    check_invariants,
    scheduler_config_map,
    scheduler_conflicts,
)
from hetgitops.model import quantities
from hetgitops.model.policy import Fleet, Policy
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan.volcano_quota import QueuePlan, queue_plans

TARGET = "volcano"
API_VERSION = "scheduling.volcano.sh/v1beta1"
DEFAULT_WEIGHT = 1
HOST = ("cpu", "memory")

__all__ = [
    "VolcanoConfigError",
    "compile_volcano",
    "scheduler_conflicts",
]


def queue_spec(policy: Policy, plan: QueuePlan) -> dict[str, Any]:
    """Every field Volcano would fill in (weight, reclaimable, parent) is written out, so a
    GitOps diff of the live Queue stays clean."""

    def resources(values: Mapping[str, Decimal]) -> dict[str, str]:
        """cpu, memory, then the accelerators by name; quantities as canonical strings."""
        order = [*(r for r in HOST if r in values), *sorted(r for r in values if r not in HOST)]
        return {r: quantities.canonical(values[r], binary=r == "memory") for r in order}

    spec: dict[str, Any] = {
        "parent": plan.parent,
        "weight": plan.team.volcano_weight or DEFAULT_WEIGHT,
        "reclaimable": plan.reclaimable,
    }
    if not plan.team.volcano_omit_deserved:
        spec["deserved"] = resources(plan.deserved)
    if not plan.team.volcano_omit_capability:
        spec["capability"] = resources(plan.capability)
    if plan.guarantee:
        spec["guarantee"] = {"resource": resources(plan.guarantee)}
    if plan.pool:  # a team queue (`layout: team`) spans its pools: no nodegroup affinity
        pool = policy.pools.get(plan.pool)
        group = pool.node_group if pool is not None else plan.pool
        groups = {"requiredDuringSchedulingIgnoredDuringExecution": [group]}
        spec["affinity"] = {"nodeGroupAffinity": groups}
    spec["dequeueStrategy"] = "traverse"
    return spec


def _queue(policy: Policy, fleet: Fleet, plan: QueuePlan) -> Manifest:
    labels = {fleet.label("team"): plan.team.name}
    if plan.pool:
        labels[fleet.label("pool")] = plan.pool
    obj = {
        "apiVersion": API_VERSION,
        "kind": "Queue",
        "metadata": metadata(fleet, plan.name, labels=labels, annotations=sync_wave(plan.depth)),
        "spec": queue_spec(policy, plan),
    }
    return Manifest(TARGET, obj, plan.origin, depth=plan.depth)


def compile_volcano(policy: Policy) -> list[Manifest]:
    """Refuses (VolcanoConfigError) a plugin set Volcano would reject or silently ignore; the
    `volcano-plugin-conflict` check reports the same before compilation is reached."""
    fleet = policy.fleet
    if fleet is None:
        return []
    conflicts = scheduler_conflicts(policy)
    if conflicts:
        raise VolcanoConfigError("; ".join(conflicts))
    queues = [_queue(policy, fleet, plan) for plan in queue_plans(policy)]
    external = {t.volcano_parent for t in policy.teams.values() if t.volcano_parent}
    check_invariants(
        [q.obj for q in queues], external - {q.obj["metadata"]["name"] for q in queues}
    )
    return [scheduler_config_map(policy, fleet), *queues]


COMPILERS[TARGET] = compile_volcano
