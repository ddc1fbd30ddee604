"""Compile stage, `volcano` target: the Queue hierarchy and the scheduler ConfigMap.

Every NVIDIA card is `nvidia.com/gpu` to Volcano, so a per-card-type quota needs one queue per
(team, pool), bound to the pool's nodes by nodegroup affinity: team queue -> `<team>-<pool>`
leaves. Quotas come from `quota_plan`, the same plan the Kueue ClusterQueues use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hetgitops.compilers import COMPILERS
from hetgitops.compilers.argocd import sync_wave
from hetgitops.compilers.volcano_scheduler import (
    VolcanoConfigError,
    check_invariants,
    scheduler_config_map,
    scheduler_conflicts,
)
from hetgitops.diagnostics import Span
from hetgitops.model import quantities
from hetgitops.model.policy import Fleet, Policy, Team
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan import capacity
from hetgitops.plan.quota_plan import FlavorPlan, host_quota, team_plan

TARGET = "volcano"
API_VERSION = "scheduling.volcano.sh/v1beta1"
ROOT = "root"
DEFAULT_WEIGHT = 1
HOST = ("cpu", "memory")

__all__ = [
    "VolcanoConfigError",
    "compile_volcano",
    "leaf_queue_name",
    "queue_plans",
    "scheduler_conflicts",
]


@dataclass(frozen=True)
class QueuePlan:
    """One Queue before rendering, in base units per resource: a leaf's cpu and memory follow
    from the card-equivalents of its accelerator counts (as in the Kueue ClusterQueue), rounded
    up per leaf; a team queue sums its leaves exactly, which keeps every invariant monotone."""

    name: str
    team: Team
    parent: str
    depth: int
    pool: str | None
    reclaimable: bool
    deserved: Mapping[str, Decimal]
    capability: Mapping[str, Decimal]
    guarantee: Mapping[str, Decimal]
    origin: Span


def _capability(plan: FlavorPlan, offered: Mapping[str, int], team: Team) -> dict[str, int]:
    """Nominal plus the borrowing limit; unbounded borrowing stops at the pool's capacity.
    Never below nominal, so `deserved <= capability` holds even for an over-quota policy
    (which the capacity checks report)."""
    capability: dict[str, int] = {}
    for resource, nominal in plan.nominal.items():
        limit = plan.borrowing.get(resource, 0) if team.cohort is not None else 0
        ceiling = offered.get(resource, nominal)
        wanted = ceiling if limit is None else nominal + limit
        capability[resource] = max(nominal, min(wanted, ceiling))
    return capability


def _guarantee(plan: FlavorPlan, team: Team) -> dict[str, int]:
    """guaranteePercent of deserved, rounded down to whole cards; zero entries left out."""
    if not team.guarantee_percent:
        return {}
    # Integer arithmetic: a float share can land just under a whole card and lose it.
    counts = {r: n * team.guarantee_percent // 100 for r, n in plan.nominal.items()}
    return {r: n for r, n in counts.items() if n > 0}


def _offered(policy: Policy, plan: FlavorPlan) -> dict[str, int]:
    card = policy.card_type_of(plan.pool)
    return capacity.pool_resources(plan.pool, card, policy.fleet) if card else {}


def leaf_queue_name(team: str, pool: str) -> str:
    """The leaf queue of a team in a pool; jobs (`hetgitops jobs`) name it in `spec.queue`."""
    return f"{team}-{pool}"


def _with_host(
    policy: Policy, team: Team, plan: FlavorPlan, counts: Mapping[str, int]
) -> dict[str, Decimal]:
    """Accelerator counts plus the cpu and memory their card-equivalents carry."""
    if not counts:
        return {}
    cpu, memory = host_quota(policy, team, plan.cards(counts) or Fraction(0))
    host = {"cpu": quantities.value_of(cpu), "memory": quantities.value_of(memory)}
    return {**host, **{r: Decimal(n) for r, n in sorted(counts.items())}}


def _leaf(policy: Policy, team: Team, plan: FlavorPlan, *, parent: str, depth: int) -> QueuePlan:
    return QueuePlan(
        name=leaf_queue_name(team.name, plan.pool.name),
        team=team,
        parent=parent,
        depth=depth,
        pool=plan.pool.name,
        reclaimable=not plan.pool.isolated,
        deserved=_with_host(policy, team, plan, plan.nominal),
        capability=_with_host(policy, team, plan, _capability(plan, _offered(policy, plan), team)),
        guarantee=_with_host(policy, team, plan, _guarantee(plan, team)),
        origin=plan.origin,
    )


def _total(maps: list[Mapping[str, Decimal]]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for values in maps:
        for name, value in values.items():
            total[name] = total.get(name, Decimal(0)) + value
    return total


def _team_queue(team: Team, leaves: list[QueuePlan]) -> QueuePlan:
    """Sums of its leaves: Volcano counts a value the parent leaves unset as 0, and rejects
    children whose deserved or guarantee add up to more than the parent's."""
    return QueuePlan(
        name=team.name,
        team=team,
        parent=ROOT,
        depth=0,
        pool=None,
        reclaimable=True,
        deserved=_total([leaf.deserved for leaf in leaves]),
        capability=_total([leaf.capability for leaf in leaves]),
        guarantee=_total([leaf.guarantee for leaf in leaves]),
        origin=team.origin.span,
    )


def queue_plans(policy: Policy) -> list[QueuePlan]:
    """Team queues (depth 0) and their per-pool leaves (depth 1); without the hierarchy the
    leaves hang directly under root."""
    hierarchy = policy.fleet.volcano_hierarchy if policy.fleet else True
    plans: list[QueuePlan] = []
    for team in policy.teams.values():
        parent, depth = (team.name, 1) if hierarchy else (ROOT, 0)
        leaves = [
            _leaf(policy, team, p, parent=parent, depth=depth) for p in team_plan(policy, team)
        ]
        if leaves and hierarchy:
            plans.append(_team_queue(team, leaves))
        plans.extend(leaves)
    return plans


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
        "deserved": resources(plan.deserved),
        "capability": resources(plan.capability),
    }
    if plan.guarantee:
        spec["guarantee"] = {"resource": resources(plan.guarantee)}
    if plan.pool is not None:
        groups = {"requiredDuringSchedulingIgnoredDuringExecution": [plan.pool]}
        spec["affinity"] = {"nodeGroupAffinity": groups}
    spec["dequeueStrategy"] = "traverse"
    return spec


def _queue(policy: Policy, fleet: Fleet, plan: QueuePlan) -> Manifest:
    labels = {fleet.label("team"): plan.team.name}
    if plan.pool is not None:
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
    check_invariants([q.obj for q in queues])
    return [scheduler_config_map(policy, fleet), *queues]


COMPILERS[TARGET] = compile_volcano
