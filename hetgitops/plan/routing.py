"""Routing: where a WorkloadProfile can run and how much a team can ever get there.

The capability table plus routing rules of the design: used by the profile and coefficient
checks and by the `jobs` compiler, so a job template exists exactly where the checks say a
profile can run. Mirrors what the generated queues allow: the flavor plan of
`quota_plan` (nominal, borrowing and lending per pool and resource).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from hetgitops.model import mig, quantities
from hetgitops.model.policy import CardType, Policy, Pool, Team, WorkloadProfile, derived
from hetgitops.plan import capacity
from hetgitops.plan.quota_plan import HOST_RESOURCES, Reach, kueue_amount, per_card

_MIG_MEMORY = re.compile(r"\.([0-9]+)gb")


@dataclass(frozen=True)
class Route:
    """One eligible pool for a profile: the resource a pod requests and how much of it."""

    pool: Pool
    card: CardType
    resource: str
    per_pod: int
    largest_node: int  # most units of `resource` one node offers
    slots: int  # pods of `per_pod` units the whole pool can hold at once
    # False when the pool's node ranges did not expand: its size is unknown, so a gang is given
    # the benefit of the doubt instead of a follow-on finding to the node-range error.
    complete: bool = True


def mismatch(profile: WorkloadProfile, card: CardType) -> str:
    """Why `card` does not meet the profile's requirements ("" when it does)."""
    if profile.vendors and card.vendor not in profile.vendors:
        return f"vendor {card.vendor} is not one of {', '.join(profile.vendors)}"
    if profile.interconnect and card.interconnect not in profile.interconnect:
        return f"interconnect {card.interconnect} is not one of {', '.join(profile.interconnect)}"
    missing = [p for p in profile.precisions if p not in card.precisions]
    if missing:
        return f"no {', '.join(missing)} support"
    if profile.mig_profile is not None:
        return _mig_mismatch(profile, profile.mig_profile, card)
    if profile.min_memory_gib is not None and card.memory_gib < profile.min_memory_gib:
        return f"{card.memory_gib:g} GiB is less than {profile.min_memory_gib:g} GiB"
    return ""


def _mig_mismatch(profile: WorkloadProfile, wanted: str, card: CardType) -> str:
    table = mig.TABLES.get(card.mig_table) if card.mig_table else None
    if table is None or wanted not in table.profiles:
        return f"no MIG profile {wanted}"
    size = _MIG_MEMORY.search(wanted)
    memory = float(size.group(1)) if size else card.memory_gib
    if profile.min_memory_gib is not None and memory < profile.min_memory_gib:
        return f"{wanted} has {memory:g} GiB, less than {profile.min_memory_gib:g} GiB"
    return ""


def candidate_cards(policy: Policy, profile: WorkloadProfile) -> list[CardType]:
    """The explicit cardTypes that resolve, or every card type; requirements not yet applied."""
    if profile.card_types is None:
        return list(policy.card_types.values())
    return [policy.card_types[n] for n in profile.card_types if n in policy.card_types]


def eligible_cards(policy: Policy, profile: WorkloadProfile) -> list[CardType]:
    return [c for c in candidate_cards(policy, profile) if not mismatch(profile, c)]


class Router:
    """Routes of profiles over one policy. Node sizes are counted once per pool, so routing
    every profile costs profiles x pools x distinct node sizes, not profiles x nodes."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.sizes = {
            name: Counter(node.cards for node in pool.nodes) for name, pool in policy.pools.items()
        }
        # Several rules and the jobs compiler route the same profiles: route each once.
        self._routes: dict[str, list[Route]] = {}

    def routes(self, profile: WorkloadProfile) -> list[Route]:
        """Pools of eligible cards with a matching purpose that offer what a pod requests."""
        if profile.name not in self._routes:
            self._routes[profile.name] = self._find_routes(profile)
        return list(self._routes[profile.name])

    def _find_routes(self, profile: WorkloadProfile) -> list[Route]:
        cards = {card.name: card for card in eligible_cards(self.policy, profile)}
        found: list[Route] = []
        for pool in self.policy.pools.values():
            card = cards.get(pool.card_type)
            if card is None or (profile.purposes and pool.purpose not in profile.purposes):
                continue
            route = self._route(pool, card, profile)
            if route is not None:
                found.append(route)
        return found

    def _route(self, pool: Pool, card: CardType, profile: WorkloadProfile) -> Route | None:
        strategy = capacity.mig_strategy(self.policy.fleet)
        sizes = self.sizes[pool.name]
        units = {cards: _units(pool, cards, profile, strategy) for cards in sizes}
        if profile.mig_profile is not None:
            if not any(units.values()):
                return None  # the pool does not carve this profile
            resource = capacity.mig_resource(pool, card, profile.mig_profile, self.policy.fleet)
            per_pod = 1
        else:
            resource, per_pod = capacity.main_resource(pool, card), profile.cards_per_node
            if pool.fail_requests_greater_than_one and pool.time_slicing_replicas and per_pod > 1:
                units = dict.fromkeys(units, 0)  # the plugin refuses requests above one replica
        slots = sum(count * (units[cards] // per_pod) for cards, count in sizes.items())
        largest = max(units.values(), default=0)
        complete = pool.name not in self.policy.unknown.pools
        return Route(pool, card, resource, per_pod, largest, slots, complete)


def _units(pool: Pool, cards: int, profile: WorkloadProfile, strategy: str) -> int:
    """What a node with `cards` GPUs offers a pod of the profile: whole (or shared) cards, or
    instances of the profile's MIG size."""
    layout = capacity.covered_gpus(pool, cards) if pool.mig and strategy != "none" else {}
    if profile.mig_profile is None:
        return (cards - len(layout)) * pool.shared_replicas
    wanted = profile.mig_profile
    return sum(
        n
        for gpu in layout.values()
        for p, n in gpu.items()
        if mig.gpu_instance_profile(p) == wanted
    )


def router(policy: Policy) -> Router:
    """The policy's Router, shared by every rule and compiler that routes profiles."""
    return derived(policy, "router", lambda: Router(policy))


def fits(route: Route, profile: WorkloadProfile) -> bool:
    """The gang can be placed in this pool at all (Kueue gives a job one flavor)."""
    if not route.complete:
        return True
    return route.largest_node >= route.per_pod and route.slots >= profile.gang


def candidate_teams(policy: Policy, profile: WorkloadProfile) -> list[tuple[int | None, Team]]:
    """(index in spec.teams or None, team) for teams that may use the profile's tier."""
    if profile.teams is None:
        return [(None, t) for t in policy.teams.values() if profile.tier in t.tiers]
    return [
        (i, policy.teams[name])
        for i, name in enumerate(profile.teams)
        if name in policy.teams and profile.tier in policy.teams[name].tiers
    ]


def gang_need(route: Route, profile: WorkloadProfile) -> int:
    return route.per_pod * profile.gang


class Verdict(NamedTuple):
    """Whether a team can ever be admitted for a profile; else its best case."""

    ok: bool
    most: int  # the most the team can hold in `route`'s pool
    route: Route | None  # None: the team has quota in no eligible pool


class RoutesByPool:
    """A profile's routes indexed by pool. A team's queue can use only the routes into pools it
    holds quota in (`Reach.most` is None elsewhere), so `of` looks those up from the team's own
    plans instead of trying every route for every team (teams x pools, which grows with the
    square of the fleet)."""

    def __init__(self, routes_: list[Route]) -> None:
        self.routes = routes_
        self._by_pool: dict[str, list[int]] = {}
        for index, route in enumerate(routes_):
            self._by_pool.setdefault(route.pool.name, []).append(index)

    def of(self, reach: Reach, team: Team) -> list[Route]:
        """The routes into the team's pools, in route order."""
        mine = {i for plan in reach.plans[team.name] for i in self._by_pool.get(plan.pool.name, ())}
        return [self.routes[i] for i in sorted(mine)]


def admissible(reach: Reach, team: Team, routes_: list[Route], profile: WorkloadProfile) -> Verdict:
    """Whether some route admits the whole gang for `team` at once."""
    best = Verdict(False, 0, None)
    for route in routes_:
        most = reach.most(team, route.pool, route.resource)
        if most is None or not fits(route, profile):
            continue
        if most >= gang_need(route, profile):
            return Verdict(True, most, route)
        if best.route is None or most > best.most:
            best = Verdict(False, most, route)
    return best


def pod_request(
    policy: Policy, team: Team, profile: WorkloadProfile, route: Route
) -> dict[str, str]:
    """What one pod of the profile requests in `route` (requests == limits): cpu and memory
    per accelerator unit (the profile's own amounts, else the team's in the route's pool) and
    the accelerator."""
    cpu, memory = per_card(policy, team, route.pool.name)
    return {
        "cpu": quantities.times(profile.cpu_per_card or cpu, route.per_pod),
        "memory": quantities.times(profile.memory_per_card or memory, route.per_pod),
        route.resource: quantities.normalize(route.per_pod),
    }


class Shortfall(NamedTuple):
    """A resource the whole gang needs more of than the team's queue can ever hold in a
    flavor; amounts in Kueue's integers (`quota_plan.kueue_amount`)."""

    resource: str
    need: int
    most: int


def shortfall(
    policy: Policy, reach: Reach, team: Team, route: Route, profile: WorkloadProfile
) -> Shortfall | None:
    """The first resource (accelerator, then cpu, then memory) the gang cannot get in the
    route's flavor even with the cohort idle; None when every one fits.

    As Kueue's flavor assignment: a pod set's request is per pod x count
    (pkg/scheduler/flavorassigner/flavorassigner.go:707-719); every resource of the
    ClusterQueue's resource group that the pod set requests is checked in the same flavor
    (:1071, :1120-1170), pod sets of one workload add up in it (`assignmentUsage`, :1145-1147,
    :1013-1034), and a flavor whose request exceeds `PotentialAvailable` is NoFit, "insufficient
    quota for <resource> in flavor ..." (:1343-1362). The whole gang goes to one flavor: the
    templates select one card type, and `fits` already assumes one pool."""
    requested = pod_request(policy, team, profile, route)
    for resource in (route.resource, *HOST_RESOURCES):
        need = kueue_amount(resource, requested[resource]) * profile.gang
        most = reach.most(team, route.pool, resource)
        if most is None or need > most:
            return Shortfall(resource, need, most or 0)
    return None


def iter_cards(routes_: list[Route]) -> Iterator[CardType]:
    """Distinct card types of the routes, in route order."""
    seen: set[str] = set()
    for route in routes_:
        if route.card.name not in seen:
            seen.add(route.card.name)
            yield route.card
