"""The team's ClusterQueue as Kueue's flavor assigner sees it: its flavors in order (as render
writes them) and, per flavor and resource, Kueue's Available and PotentialAvailable.

Why apart from the assignment (`kueue.py`): these are the quota facts the assigner asks about,
read by the live translation (`state.py`, `lines.py`) and explanation's hints too; the
arithmetic itself is plan/'s (`quota_plan.reach`), and so are the flavors' names and labels
(`plan.flavors`, which the kueue compiler spells), so both sides name a flavor alike."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hetgitops.model.policy import Policy, Team
from hetgitops.plan.capacity import retiring_held
from hetgitops.plan.flavors import flavor_name, flavor_spec, retiring_node_taints
from hetgitops.plan.quota_plan import (
    HOST_RESOURCES,
    FlavorPlan,
    Limits,
    Reach,
    cohort_root,
    covered_accelerators,
    kueue_amount,
    reach,
    team_plan,
)

# (team, pool, resource) -> what the team's admitted workloads hold, Kueue's integers.
Usage = Mapping[tuple[str, str, str], int]


@dataclass(frozen=True)
class Flavor:
    """One flavor of the team's ClusterQueue, in its order."""

    name: str
    plan: FlavorPlan
    node_labels: Mapping[str, str]
    tolerations: tuple[Mapping[str, Any], ...]
    topology: str | None
    # The flavor's `nodeTaints` (plan.flavors: the pool's own with `flavorNodeTaints`; a
    # retiring flavor's start with the retiring taint, which no workload tolerates).
    node_taints: tuple[Mapping[str, Any], ...] = ()


def flavors(policy: Policy, team: Team) -> list[Flavor]:
    """The ClusterQueue's flavors in its order: per pool the pool's flavor, then its retiring
    flavor when it has one (kueue_queues.transition_quotas)."""
    fleet = policy.fleet
    found = []
    for plan in team_plan(policy, team):
        if fleet is None:
            continue
        spec = flavor_spec(policy, fleet, plan.pool)
        found.append(
            Flavor(
                flavor_name(policy, fleet, plan.pool),
                plan,
                spec.get("nodeLabels") or {},
                tuple(spec.get("tolerations") or ()),
                spec.get("topologyName"),
                tuple(spec.get("nodeTaints") or ()),
            )
        )
        retiring = plan.pool.retiring_flavor
        if retiring is not None:
            found.append(
                Flavor(
                    retiring.name,
                    plan,
                    retiring.spec.get("nodeLabels") or {},
                    tuple(retiring.spec.get("tolerations") or ()),
                    retiring.spec.get("topologyName"),
                    tuple(retiring_node_taints(policy, plan.pool)),
                )
            )
    return found


def transition_reach(policy: Policy) -> Reach:
    """`reach(policy)` with each pool in a flavor transition cut as the ClusterQueues are:
    the new flavor's nominal less what the retiring flavor holds per team and resource (all
    of it unless `holds` says less), lendingLimit clamped to it (kueue_queues._reduced), and
    what the cohort lends recomputed from that."""
    base = reach(policy)
    pools = {p.name: p for p in policy.pools.values() if p.retiring_flavor is not None}
    if not pools:
        return base
    cut: dict[tuple[str, str], dict[str, Limits]] = {}
    for (team_name, pool_name), limits in base.limits.items():
        pool = pools.get(pool_name)
        if pool is None or pool.retiring_flavor is None:
            continue
        reduced = {}
        for resource, (nominal, borrowing, lending) in limits.items():
            held = retiring_held(policy, pool, team_name, resource)
            left = 0 if held is None else max(0, nominal - kueue_amount(resource, held))
            reduced[resource] = (left, borrowing, None if lending is None else min(lending, left))
        cut[team_name, pool_name] = reduced
    return base.with_limits(cut)


def _lends(limits: tuple[int, int | None, int | None]) -> int:
    """What a queue lends of a resource: its lendingLimit, else all its nominal."""
    nominal, _, lending = limits
    return nominal if lending is None else min(lending, nominal)


def covered(policy: Policy, team: Team) -> list[str]:
    return [*HOST_RESOURCES, *covered_accelerators(team, team_plan(policy, team))]


class Quotas:
    """Kueue's Available and PotentialAvailable for a team's flavor and resource, from the
    plan's limits (`Reach.limits`) and what every queue already uses. Cohorts below the root
    carry no quota of their own, so the tree folds to its root (resource_node.go:74-122)."""

    def __init__(self, policy: Policy, usage: Usage | None = None) -> None:
        self.policy = policy
        self.reach: Reach = transition_reach(policy)
        self.usage: Usage = usage or {}
        self.borrowed: Counter[tuple[str, str, str]] = Counter()
        for (team_name, pool, resource), used in self.usage.items():
            team = policy.teams.get(team_name)
            if team is None or team.cohort is None:
                continue
            guaranteed = self._guaranteed(team_name, pool, resource)
            root = cohort_root(policy, team.cohort)
            self.borrowed[root, pool, resource] += max(0, used - guaranteed)

    def _limits(self, team: str, pool: str, resource: str) -> tuple[int, int | None, int | None]:
        return self.reach.limits.get((team, pool), {}).get(resource, (0, None, None))

    def _guaranteed(self, team: str, pool: str, resource: str) -> int:
        nominal, _, lending = self._limits(team, pool, resource)
        return 0 if lending is None else max(0, nominal - lending)

    def nominal(self, team: Team, pool: str, resource: str) -> int:
        return self._limits(team.name, pool, resource)[0]

    def potential(self, team: Team, plan: FlavorPlan, resource: str) -> int:
        return self.reach.most(team, plan.pool, resource) or 0

    def used(self, team: Team, pool: str, resource: str) -> int:
        return self.usage.get((team.name, pool, resource), 0)

    def _subtree(self, cohort: str) -> tuple[list[str], int]:
        """The teams under `cohort` (at any depth) and its height (getNodeHeight: 1 above
        queues, one more per level of child cohorts)."""
        fleet = self.policy.fleet
        children = [c.name for c in fleet.cohorts if c.parent == cohort] if fleet else []
        teams = [t.name for t in self.policy.teams.values() if t.cohort == cohort]
        height = 1 if teams or children else 0
        for child in children:
            below, child_height = self._subtree(child)
            teams += below
            height = max(height, child_height + 1)
        return teams, height

    def borrow_level(self, team: Team, plan: FlavorPlan, resource: str, value: int) -> int:
        """How far the quota for `value` more comes from: 0 within the team's own nominal,
        else the height of the lowest cohort on the way to the root whose subtree lends
        enough (FindHeightOfLowestSubtreeThatFits); Kueue prefers the smaller
        (borrowingLevel.betterThan)."""
        pool = plan.pool.name
        used = self.used(team, pool, resource)
        if team.cohort is None or used + value <= self.nominal(team, pool, resource):
            return 0
        remaining = value - max(0, self._guaranteed(team.name, pool, resource) - used)
        parents = {c.name: c.parent for c in self.policy.fleet.cohorts} if self.policy.fleet else {}
        cohort: str | None = team.cohort
        height = 0
        seen = set()
        while cohort is not None and cohort not in seen:
            seen.add(cohort)
            members, height = self._subtree(cohort)
            lends = sum(_lends(self._limits(m, pool, resource)) for m in members)
            held = sum(
                max(0, self.usage.get((m, pool, resource), 0) - self._guaranteed(m, pool, resource))
                for m in members
            )
            if held + remaining <= lends:
                return height
            cohort = parents.get(cohort)
        return height

    def available(self, team: Team, plan: FlavorPlan, resource: str) -> int:
        pool = plan.pool.name
        nominal, borrowing, _ = self._limits(team.name, pool, resource)
        used = self.used(team, pool, resource)
        if team.cohort is None:
            return nominal - used
        guaranteed = self._guaranteed(team.name, pool, resource)
        local = max(0, guaranteed - used)
        root = cohort_root(self.policy, team.cohort)
        subtree = self.reach.lent[root, pool, resource]
        parent = subtree - self.borrowed[root, pool, resource]
        if borrowing is not None:
            stored = nominal - guaranteed
            parent = min(stored - max(0, used - guaranteed) + borrowing, parent)
        return local + parent
