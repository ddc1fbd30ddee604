"""Check stage, twins family: where a team's Volcano queue cannot mean its Kueue ClusterQueue.

The `volcano` compiler maps each Kueue concept to the nearest Volcano field (deserved = nominal,
capability = Kueue's ceiling, guarantee = what Kueue never lends). Two things cannot be mapped
exactly, and they are reported here rather than lost:
- `guaranteePercent` is a Volcano-only floor: above what Kueue keeps, Volcano reserves cards
  that Kueue would lend.
- A team queue (`volcano.layout: team`) whose deserved or capability is written
  (`volcano.deserved`, `volcano.capability`, as import keeps hand-written ones) rather than
  summed from Kueue's nominal quota and reach in its pools.
- Volcano's guarantee is per resource *name*, cluster-wide (the capacity plugin's
  realCapability = cluster total - the other queues' guarantees + its own), while Kueue's is per
  flavor: guarantees on other pools of the same name (`nvidia.com/gpu`) can cut a queue below
  its Kueue ceiling.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from decimal import Decimal

from hetgitops.checks._common import finding_at, note
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity
from hetgitops.model.policy import Policy
from hetgitops.plan import capacity
from hetgitops.plan.quota_plan import lendable, team_plan
from hetgitops.plan.volcano_quota import QueuePlan, pool_plans, queue_plans

RULE = "volcano-kueue-mismatch"
HOST = ("cpu", "memory")


def _both_targets(policy: Policy) -> bool:
    fleet = policy.fleet
    return fleet is not None and {"kueue", "volcano"} <= set(fleet.targets)


def _guarantee_floor(policy: Policy) -> Iterator[Diagnostic]:
    for team in policy.teams.values():
        percent = team.guarantee_percent or 0
        if not percent or team.cohort is None:
            continue
        for plan in team_plan(policy, team):
            for resource, nominal in plan.nominal.items():
                kept = nominal - lendable(plan, resource)
                floor = nominal * percent // 100
                if floor > kept:
                    yield finding_at(
                        Severity.WARNING,
                        RULE,
                        f"Volcano guarantees team '{team.name}' {floor} {resource} in pool "
                        f"'{plan.pool.name}' (guaranteePercent {percent}), but Kueue keeps only "
                        f"{kept} and lends the rest: the two schedulers disagree on "
                        f"{floor - kept}",
                        team.origin,
                        "spec",
                        "volcano",
                        "guaranteePercent",
                        hint="lower guaranteePercent, or set a lendingLimit that keeps as much",
                    )


def _cluster_totals(policy: Policy) -> Counter[str]:
    totals: Counter[str] = Counter()
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        if card is not None:
            totals.update(capacity.pool_resources(pool, card, policy.fleet))
    return totals


def guaranteed_total(leaves: list[QueuePlan]) -> Counter[str]:
    """Per accelerator resource name, what all the queues guarantee together."""
    guaranteed: Counter[str] = Counter()
    for leaf in leaves:
        guaranteed.update({r: int(v) for r, v in leaf.guarantee.items() if r not in HOST})
    return guaranteed


def real_capability(leaves: list[QueuePlan], totals: Counter[str]) -> dict[str, dict[str, int]]:
    """Per leaf and accelerator resource, what the capacity plugin lets it reach
    (capacity.go:1511-1520 for a child of root): min(capability, total - the other queues'
    guarantees + its own)."""
    guaranteed = guaranteed_total(leaves)
    reach: dict[str, dict[str, int]] = {}
    for leaf in leaves:
        own = {r: int(v) for r, v in leaf.guarantee.items() if r not in HOST}
        reach[leaf.name] = {
            r: min(int(v), totals[r] - guaranteed[r] + own.get(r, 0))
            for r, v in leaf.capability.items()
            if r not in HOST
        }
    return reach


def kueue_reach(policy: Policy, plan: QueuePlan, field: str = "capability") -> dict[str, Decimal]:
    """Per accelerator resource, what the queue's Kueue ClusterQueue reaches (`capability`) or
    holds (`deserved`): a leaf's computed amount, or for a team queue the sum over its pools
    (it may be written instead, `volcano.capability` / `volcano.deserved`)."""
    if plan.pool:
        return {r: v for r, v in getattr(plan, field).items() if r not in HOST}
    total: Counter[str] = Counter()
    for leaf in pool_plans(policy):
        if leaf.team is plan.team:
            total.update({r: int(v) for r, v in getattr(leaf, field).items() if r not in HOST})
    return {r: Decimal(n) for r, n in sorted(total.items())}


_KUEUE_TERMS = {"deserved": "nominal quota", "capability": "reach"}


def _team_amounts(policy: Policy) -> Iterator[Diagnostic]:
    """A team queue's written deserved or capability against what its ClusterQueue holds
    (nominal) or reaches in all its pools together."""
    for plan in queue_plans(policy):
        written = {"deserved": plan.team.volcano_deserved}
        written["capability"] = plan.team.volcano_capability
        for field, values in written.items():
            if plan.pool or values is None:
                continue
            said = {r: v for r, v in getattr(plan, field).items() if r not in HOST}
            yield from _differences(plan, field, said, kueue_reach(policy, plan, field))


def _differences(
    plan: QueuePlan, field: str, said: dict[str, Decimal], kueue: dict[str, Decimal]
) -> Iterator[Diagnostic]:
    for resource in sorted(set(kueue) | set(said)):
        value, reached = said.get(resource, Decimal(0)), kueue.get(resource, Decimal(0))
        if value == reached:
            continue
        yield finding_at(
            Severity.WARNING,
            RULE,
            f"Volcano queue '{plan.name}' of team '{plan.team.name}' has {field} {value} "
            f"{resource}, but its Kueue ClusterQueue's {_KUEUE_TERMS[field]} across its pools "
            f"is {reached}: the two schedulers disagree on {abs(value - reached)}",
            plan.team.origin,
            "spec",
            "volcano",
            field,
            hint=f"drop spec.volcano.{field} to render the sum Kueue has",
        )


def _shared_names(policy: Policy) -> Iterator[Diagnostic]:
    leaves = queue_plans(policy)
    totals = _cluster_totals(policy)
    real = real_capability(leaves, totals)
    for leaf in leaves:
        for resource, value in kueue_reach(policy, leaf).items():
            cut = real[leaf.name].get(resource, value)
            if cut >= value or cut == leaf.capability.get(resource):
                continue  # its own written capability cuts it: _team_amounts says so
            if guaranteed_total(leaves)[resource] > totals[resource]:
                continue  # more guaranteed than exists: quota-exceeds-capacity says so first
            yield finding_at(
                Severity.WARNING,
                RULE,
                f"Volcano queue '{leaf.name}' can reach only {real[leaf.name][resource]} "
                f"{resource}, not the {Decimal(value)} its Kueue ClusterQueue can: Volcano "
                f"guarantees other queues' {resource} cluster-wide, whatever their pool",
                leaf.team.origin,
                *_quota_path(policy, leaf),
                hint="lower the guarantees (lendingLimit, guaranteePercent) of other pools "
                "that share this resource name",
                related=_guarantors(policy, leaves, leaf, resource),
            )


def _guarantors(
    policy: Policy, leaves: list[QueuePlan], leaf: QueuePlan, resource: str
) -> list[Related]:
    """A note at every other queue's quota that guarantees some of `resource`: together they
    are what cuts this queue short."""
    return [
        note(
            f"Volcano queue '{other.name}' guarantees {Decimal(other.guarantee[resource])} "
            f"{resource}",
            other.team.origin,
            *_quota_path(policy, other),
        )
        for other in leaves
        if other is not leaf and int(other.guarantee.get(resource, 0)) > 0
    ]


def _quota_path(policy: Policy, leaf: QueuePlan) -> tuple[str | int, ...]:
    for index, quota in enumerate(leaf.team.quotas):
        if quota.pool == leaf.pool:
            return ("spec", "quotas", index)
    return ("metadata", "name")


@rule(RULE, Severity.WARNING)
def volcano_kueue_mismatch(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team's Volcano queue holds or reaches a different amount than its Kueue ClusterQueue.

    Fails: team `volcano: {guaranteePercent: 90}` with an unlimited lending quota in a cohort
    (Volcano reserves 90%, Kueue lends it all); or guarantees on other pools of the same
    resource name that leave a queue less than its Kueue ceiling.
    Passes: the bundled fleet (guarantees follow the lending limits, no shortfall).
    Fix: lower the team's `volcano.guaranteePercent` to what Kueue keeps (nominal minus
    lendingLimit), or set a `lendingLimit` that keeps as much; for a shortfall from other pools of
    the same resource name, lower those pools' guarantees (lendingLimit, guaranteePercent; the notes
    name them).
    """
    if not _both_targets(policy):
        return
    yield from _guarantee_floor(policy)
    yield from _team_amounts(policy)
    yield from _shared_names(policy)
