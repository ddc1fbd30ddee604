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

The numbers mean what the team's Kueue ClusterQueue means (`quota_plan`):
deserved = nominal quota; capability = the most Kueue can ever admit (nominal plus what it may
borrow from what its cohort tree lends, `Reach.most`, for the accelerators, cpu and memory
alike); guarantee = the part Kueue never lends
(nominal minus the lendable part), which Volcano keeps from other queues.
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
from hetgitops.model.policy import Fleet, Policy, Team, derived
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan.quota_plan import (
    HOST_RESOURCES,
    FlavorPlan,
    host_entries,
    host_quota,
    lendable,
    reach,
    team_plan,
)

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
    """One leaf Queue before rendering, in base units per resource: cpu and memory follow
    from the card-equivalents of its accelerator counts (as in the Kueue ClusterQueue)."""

    name: str
    team: Team
    pool: str
    reclaimable: bool
    deserved: Mapping[str, Decimal]
    capability: Mapping[str, Decimal]
    guarantee: Mapping[str, Decimal]
    origin: Span
    parent: str = ROOT
    depth: int = 0


def capability_counts(policy: Policy, team: Team, plan: FlavorPlan) -> dict[str, int]:
    """Kueue's real ceiling per resource: nominal plus what the queue may borrow from what
    the rest of its cohort tree lends (never below nominal, so `deserved <= capability`)."""
    ceilings = reach(policy)
    counts: dict[str, int] = {}
    for resource, nominal in plan.nominal.items():
        most = ceilings.most(team, plan.pool, resource)
        counts[resource] = max(nominal, most if most is not None else nominal)
    return counts


def guarantee_counts(plan: FlavorPlan, team: Team) -> dict[str, int]:
    """What Kueue never lends (nominal minus the lendable part: an isolated pool or a team
    without a cohort lends nothing); `guaranteePercent` of nominal is a floor on top, rounded
    down to whole units. Zero entries are left out."""
    counts: dict[str, int] = {}
    for resource, nominal in plan.nominal.items():
        kept = nominal - lendable(plan, resource) if team.cohort is not None else nominal
        # Integer arithmetic: a float share can land just under a whole card and lose it.
        floor = nominal * (team.guarantee_percent or 0) // 100
        counts[resource] = max(kept, floor)
    return {r: n for r, n in counts.items() if n > 0}


def leaf_queue_name(team: Team, pool: str) -> str:
    """The leaf queue of a team in a pool; jobs (`hetgitops jobs`) name it in `spec.queue`.
    `<team>-<pool>`, unless the team keeps an adopted queue's name (`spec.volcano.queueNames`)."""
    return team.volcano_queue_names.get(pool) or f"{team.name}-{pool}"


def _with_host(
    policy: Policy, team: Team, plan: FlavorPlan, counts: Mapping[str, int]
) -> dict[str, Decimal]:
    """Accelerator counts plus the cpu and memory their card-equivalents carry."""
    if not counts:
        return {}
    cpu, memory = host_quota(policy, team, plan.cards(counts) or Fraction(0))
    host = {"cpu": quantities.value_of(cpu), "memory": quantities.value_of(memory)}
    return {**host, **{r: Decimal(n) for r, n in sorted(counts.items())}}


def _deserved(policy: Policy, team: Team, plan: FlavorPlan) -> dict[str, Decimal]:
    """`_with_host` of the nominal quota: its cpu and memory are the ClusterQueue's nominal
    ones (`host_entries`, computed once per plan for Kueue and Reach)."""
    if not plan.nominal:
        return {}
    entries = host_entries(policy, team, plan)
    host = {name: quantities.value_of(entries[name].nominal) for name in ("cpu", "memory")}
    return {**host, **{r: Decimal(n) for r, n in sorted(plan.nominal.items())}}


def _capability(
    policy: Policy, team: Team, plan: FlavorPlan, nominal: dict[str, Decimal]
) -> dict[str, Decimal]:
    """Accelerators as `capability_counts`; cpu and memory are Kueue's own ceiling for them too
    (`Reach.most`: what the queue borrows comes at each lender's per-card amounts), not the
    team's per-card amounts times the accelerator ceiling, which would let Volcano admit
    memory Kueue never grants. Never below deserved."""
    found = _with_host(policy, team, plan, capability_counts(policy, team, plan))
    if not found:
        return found
    ceilings = reach(policy)
    for resource in HOST_RESOURCES:
        most = ceilings.most(team, plan.pool, resource)
        if most is not None:
            value = Decimal(most) / 1000 if resource == "cpu" else Decimal(most)  # Kueue's ints
            found[resource] = max(value, nominal.get(resource, Decimal(0)))
    return found


def _leaf(policy: Policy, team: Team, plan: FlavorPlan) -> QueuePlan:
    deserved = _deserved(policy, team, plan)
    return QueuePlan(
        name=leaf_queue_name(team, plan.pool.name),
        team=team,
        pool=plan.pool.name,
        reclaimable=(
            team.volcano_reclaimable
            if team.volcano_reclaimable is not None
            else not plan.pool.isolated
        ),
        deserved=deserved,
        capability=_capability(policy, team, plan, deserved),
        guarantee=_with_host(policy, team, plan, guarantee_counts(plan, team)),
        origin=plan.origin,
        parent=team.volcano_parent or ROOT,
    )


def queue_plans(policy: Policy) -> list[QueuePlan]:
    """One leaf per (team, pool), every one a child of root (see the module docstring).
    Computed once per policy: the volcano-kueue-mismatch check and the compiler both ask."""
    return list(derived(policy, "volcano_queue_plans", lambda: _queue_plans(policy)))


def _queue_plans(policy: Policy) -> tuple[QueuePlan, ...]:
    return tuple(
        _leaf(policy, team, p) for team in policy.teams.values() for p in team_plan(policy, team)
    )


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
    }
    if not plan.team.volcano_omit_capability:
        spec["capability"] = resources(plan.capability)
    if plan.guarantee:
        spec["guarantee"] = {"resource": resources(plan.guarantee)}
    pool = policy.pools.get(plan.pool)
    group = pool.node_group if pool is not None else plan.pool
    groups = {"requiredDuringSchedulingIgnoredDuringExecution": [group]}
    spec["affinity"] = {"nodeGroupAffinity": groups}
    spec["dequeueStrategy"] = "traverse"
    return spec


def _queue(policy: Policy, fleet: Fleet, plan: QueuePlan) -> Manifest:
    labels = {fleet.label("team"): plan.team.name, fleet.label("pool"): plan.pool}
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
