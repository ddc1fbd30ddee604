"""Plan stage: which (profile, team, card type) get a job template, via routing; read by the
`jobs` compiler, the checks, and the DRA claims fact (plan/dra_claims.py).

A team gets a template for a card type only where it holds quota for the resource the profile
requests (the routed MIG profile, time-sliced or whole cards) in a pool the profile may run on,
and where its quota plus what it may borrow can hold the whole gang, cpu and memory included
(`routing.shortfall`): a template that could never be admitted would only pend forever.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from hetgitops.model.policy import CardType, Fleet, Policy, Pool, Team, WorkloadProfile
from hetgitops.plan import quota_plan, routing
from hetgitops.plan.quota_plan import FlavorPlan, team_plan
from hetgitops.plan.ray import DEFAULT_GROUP, is_ray
from hetgitops.plan.routing import Route, candidate_teams, fits, shortfall

KUEUE, VOLCANO, KOORDINATOR, DEFAULT = "kueue", "volcano", "koordinator", "default"
SCHEDULERS = (KUEUE, VOLCANO, KOORDINATOR)


@dataclass(frozen=True)
class GroupTarget:
    """One Ray worker group: its card type, the pools it may land on, its pod count."""

    name: str
    card: CardType
    routes: tuple[Route, ...]
    replicas: int


@dataclass(frozen=True)
class JobTarget:
    """One template to render. `routes` are the team's pools of `card` the job may land on,
    in the team's quota (= preference) order; never empty, one resource for all of them."""

    profile: WorkloadProfile
    team: Team
    card: CardType
    routes: tuple[Route, ...]
    scheduler: str
    # Ray only: the worker groups (one for a per-card template) and the head's pool.
    groups: tuple[GroupTarget, ...] = ()
    head_pool: Pool | None = None

    @property
    def filename(self) -> str:
        """`<profile>/<team>/<card>.yaml`: unique by construction, since names are DNS labels
        (no '/') and unique per kind; `<team>-<card>` was not (team a-b + card c = a + b-c).
        Heterogeneous Ray groups: the card types joined by `+`, which no name contains."""
        if len(self.groups) > 1:
            cards = "+".join(dict.fromkeys(g.card.name for g in self.groups))
            return f"{self.profile.name}/{self.team.name}/{cards}.yaml"
        return f"{self.profile.name}/{self.team.name}/{self.card.name}.yaml"

    @property
    def mixed(self) -> bool:
        """A Ray profile with its own worker groups: one template per team, not per card."""
        ray = self.profile.ray
        return ray is not None and bool(ray.groups)

    @property
    def route(self) -> Route:
        return self.routes[0]

    @property
    def pinned(self) -> bool:
        """Exactly one pool: the job selects it by label (and names its Volcano leaf queue)."""
        return len(self.routes) == 1


def scheduler(fleet: Fleet | None, profile: WorkloadProfile, prefer: str | None = None) -> str:
    """Who queues the job: a Volcano Job always goes to Volcano; anything else goes to the
    scheduler asked for (`jobs --scheduler`), else to Kueue when the fleet renders Kueue, else
    to Koordinator when it renders Koordinator, else to Volcano when it renders Volcano."""
    if profile.framework == "volcano-job":
        return VOLCANO
    if prefer is not None:
        return prefer
    targets = fleet.targets if fleet else ()
    if KUEUE in targets:
        return KUEUE
    if KOORDINATOR in targets:
        return KOORDINATOR
    return VOLCANO if VOLCANO in targets else DEFAULT


def _holds(
    policy: Policy, plan: FlavorPlan | None, team: Team, route: Route, profile: WorkloadProfile
) -> bool:
    """The team holds the resource and its queue can reach all the gang asks in the route's
    flavor: accelerators, cpu and memory alike, as Kueue's flavor assignment checks them."""
    if plan is None or plan.nominal.get(route.resource, 0) <= 0:
        return False
    return shortfall(policy, quota_plan.reach(policy), team, route, profile) is None


def _narrow(routes: list[Route], chosen: str, profile: WorkloadProfile) -> tuple[Route, ...]:
    """One pod spec must fit every pool left: same resource as the preferred pool. Volcano
    queues a job in one leaf queue, which is bound to one pool, and Koordinator counts a pod
    in the one quota its label names, in one pool's tree (no flavor fallback); with the
    `single` MIG strategy a slice is requested as a whole card, so only the pool tells them
    apart."""
    first = routes[0]
    single_mig = profile.mig_profile is not None and first.resource == first.card.resource_name
    if chosen in (VOLCANO, KOORDINATOR) or single_mig:
        return (first,)
    return tuple(r for r in routes if r.resource == first.resource)


class Selector:
    """Routes every profile once per policy; `targets` then filters them per team."""

    def __init__(self, policy: Policy, prefer: str | None = None) -> None:
        self.policy = policy
        self.prefer = prefer
        self.router = routing.router(policy)

    def targets(
        self, profile: WorkloadProfile, teams: frozenset[str] | None
    ) -> Iterator[JobTarget]:
        """Templates of one profile, by team name, then card type name."""
        placeable = [r for r in self.router.routes(profile) if fits(r, profile)]
        chosen = scheduler(self.policy.fleet, profile, self.prefer)
        candidates = sorted(candidate_teams(self.policy, profile), key=lambda t: t[1].name)
        for _, team in candidates:
            if teams is not None and team.name not in teams:
                continue
            if profile.ray is not None and profile.ray.groups:
                yield from self._mixed_target(profile, team, chosen)
                continue
            for target in self._team_targets(profile, team, placeable, chosen):
                yield self._with_group(target) if is_ray(profile) else target

    def _with_group(self, target: JobTarget) -> JobTarget:
        """A per-card Ray template: one worker group of `gang` pods; the head in the stated
        pool (when the team holds quota there) or the group's first pool. Volcano queues the
        cluster in one pool's leaf queue, so there the head always joins the workers."""
        group = GroupTarget(DEFAULT_GROUP, target.card, target.routes, target.profile.gang)
        head = self._head(target.profile, target.team, group)
        if target.scheduler == VOLCANO:
            head = target.route.pool
        return dataclasses.replace(target, groups=(group,), head_pool=head)

    def _usable(self, profile: WorkloadProfile, team: Team, routes: list[Route]) -> list[Route]:
        """The routes whose pool the team holds enough quota in, in the team's order."""
        plans = team_plan(self.policy, team)
        rank = {plan.pool.name: index for index, plan in enumerate(plans)}
        by_pool = {plan.pool.name: plan for plan in plans}
        usable = [
            r for r in routes if _holds(self.policy, by_pool.get(r.pool.name), team, r, profile)
        ]
        return sorted(usable, key=lambda r: rank[r.pool.name])

    def _mixed_target(
        self, profile: WorkloadProfile, team: Team, chosen: str
    ) -> Iterator[JobTarget]:
        """One template for a team that can hold every worker group, each on its card type
        (each group a Kueue pod set with its own flavor); none when one group cannot."""
        assert profile.ray is not None
        groups: list[GroupTarget] = []
        for group in profile.ray.groups:
            sized = dataclasses.replace(profile, gang=group.replicas)
            routes = [
                r
                for r in self.router.routes(profile)
                if r.card.name == group.card_type and fits(r, sized)
            ]
            usable = self._usable(sized, team, routes)
            if not usable:
                return
            narrowed = _narrow(usable, chosen, sized)
            groups.append(GroupTarget(group.name, usable[0].card, narrowed, group.replicas))
        first = groups[0]
        head = self._head(profile, team, first)
        if chosen == VOLCANO and len({g.routes[0].pool.name for g in groups} | {head.name}) > 1:
            return  # one Volcano leaf queue is one pool's (rule ray-volcano-mixed)
        yield JobTarget(
            profile,
            team,
            first.card,
            first.routes,
            chosen,
            tuple(groups),
            self._head(profile, team, first),
        )

    def _head(self, profile: WorkloadProfile, team: Team, first: GroupTarget) -> Pool:
        """The stated head pool when the team holds quota there, else the first group's pool."""
        stated = profile.ray.head_pool if profile.ray else None
        held = {plan.pool.name for plan in team_plan(self.policy, team)}
        if stated is not None and stated in held:
            return self.policy.pools[stated]
        return first.routes[0].pool

    def _team_targets(
        self, profile: WorkloadProfile, team: Team, placeable: list[Route], chosen: str
    ) -> Iterator[JobTarget]:
        by_card: dict[str, list[Route]] = {}
        for route in self._usable(profile, team, placeable):
            by_card.setdefault(route.card.name, []).append(route)
        for name in sorted(by_card):
            routes = by_card[name]
            yield JobTarget(profile, team, routes[0].card, _narrow(routes, chosen, profile), chosen)
