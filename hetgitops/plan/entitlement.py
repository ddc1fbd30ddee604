"""What each team really gets per pool and accelerator resource: nominal, what it may borrow,
what it lends, what stays guaranteed and its reach, in the resource's own units.

Whole GPUs, each MIG profile and time-sliced (or MPS) replicas are different resources to
Kueue and the device plugin, so they are never added up here; `weight` (card-equivalents of one
unit, `capacity.unit_weight`) is given beside each for a reader who wants the physical share.
Shared by `capacity` (explain stage) and `diff`'s quota rows, so both print the same numbers."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from hetgitops.model import mig
from hetgitops.model.policy import Policy, Pool, Team, derived
from hetgitops.plan import capacity, dra
from hetgitops.plan.quota_plan import FlavorPlan, lendable, reach, team_plan

WHOLE, MIG, REPLICA = "whole", "mig", "replica"


@dataclass(frozen=True)
class Entitlement:
    """One team's numbers for one resource in one pool (units of that resource)."""

    team: str
    pool: str
    card_type: str
    resource: str
    kind: str  # whole | mig | replica
    profile: str | None  # the MIG profile (kind mig)
    weight: Fraction  # card-equivalents of one unit
    coefficient: float | None  # the card's performance coefficient (normalized units)
    nominal: int
    borrowable: int  # reach - nominal: what the cohort can lend it at most
    lendable: int  # what the queue lends of its nominal at most
    guaranteed: int  # nominal - lendable: never lent
    reach: int  # the most its queue can ever hold

    @property
    def label(self) -> str:
        """The resource as a reader names it: `whole`, `mig 1g.10gb`, `replica 1/4`, and under
        migStrategy single `mig 1g.10gb as nvidia.com/gpu`."""
        if self.kind == MIG:
            if self.resource.startswith((mig.resource_name(""), dra.DOMAIN)):
                return f"mig {self.profile}"
            # migStrategy single: the slices are advertised as the card's own resource, which
            # a reader must tell apart from the same profile's mixed-strategy resource.
            return f"mig {self.profile} as {self.resource}"
        if self.kind == REPLICA:
            return f"replica 1/{self.weight.denominator}"
        return WHOLE

    def normalized(self, units: int) -> Fraction | None:
        """`units` in normalized performance units: card-equivalents x the card coefficient."""
        if self.coefficient is None:
            return None
        return units * self.weight * Fraction(str(self.coefficient))


def kind_of(pool: Pool, resource: str, policy: Policy) -> tuple[str, str | None]:
    if resource.startswith(mig.resource_name("")):
        return MIG, resource.removeprefix(mig.resource_name(""))
    card = policy.card_type_of(pool)
    profiles = capacity.mig_profiles(pool, card, resource, policy.fleet) if card else []
    if profiles:  # migStrategy single: slices advertised as the card resource
        return MIG, "/".join(sorted(set(profiles)))
    if pool.shared_replicas > 1:
        return REPLICA, None
    return WHOLE, None


def _rows(policy: Policy, team: Team, plan: FlavorPlan) -> list[Entitlement]:
    card = policy.card_type_of(plan.pool)
    coefficient = card.performance.coefficient if card and card.performance else None
    most = reach(policy)
    found = []
    for resource, nominal in sorted(plan.nominal.items()):
        kind, profile = kind_of(plan.pool, resource, policy)
        reached = most.most(team, plan.pool, resource) or 0
        lends = lendable(plan, resource) if team.cohort is not None else 0
        found.append(
            Entitlement(
                team=team.name,
                pool=plan.pool.name,
                card_type=plan.pool.card_type,
                resource=resource,
                kind=kind,
                profile=profile,
                weight=plan.weights.get(resource, Fraction(1)),
                coefficient=coefficient,
                nominal=nominal,
                borrowable=max(0, reached - nominal),
                lendable=lends,
                guaranteed=nominal - lends,
                reach=reached,
            )
        )
    return found


def plan_entitlements(policy: Policy, team: Team, plan: FlavorPlan) -> list[Entitlement]:
    """The rows of one flavor: every resource the pool offers or the team claims."""
    key = ("entitlements", team.name, plan.pool.name)
    return derived(policy, key, lambda: _rows(policy, team, plan))


def entitlements(policy: Policy) -> list[Entitlement]:
    """Every team x pool x resource, teams and pools in policy order."""
    return [
        row
        for team in policy.teams.values()
        for plan in team_plan(policy, team)
        for row in plan_entitlements(policy, team, plan)
    ]
