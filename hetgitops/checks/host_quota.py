"""Check stage, host-quota family: the cpu/memory a profile's pods request against the cpu/memory
that goes with the team's accelerator quota (a ClusterQueue admits a pod only when every
resource it requests fits, so cpu can block a job that the GPUs would admit)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction

from hetgitops.checks._common import error_at, warning_at
from hetgitops.checks._common import written as written_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model import quantities
from hetgitops.model.policy import Policy, Team, WorkloadProfile, derived
from hetgitops.plan import capacity, quota_plan, routing
from hetgitops.plan.routing import (
    Route,
    RoutesByPool,
    Shortfall,
    admissible,
    candidate_teams,
    fits,
)

HOST_RESOURCES = (("cpu", "cpuPerCard"), ("memory", "memoryPerCard"))


def _pod_request(
    policy: Policy, team: Team, profile: WorkloadProfile, route: Route
) -> dict[str, Decimal]:
    """Per accelerator unit, what one pod asks for: the profile's own amounts, else the team's
    in the route's pool (`routing.pod_request`)."""
    cpu, memory = quota_plan.per_card(policy, team, route.pool.name)
    return {
        "cpu": quantities.value_of(profile.cpu_per_card or cpu),
        "memory": quantities.value_of(profile.memory_per_card or memory),
    }


def _share(policy: Policy, team: Team, route: Route) -> dict[str, Decimal]:
    """Per accelerator unit, what the team's queue holds: the pool's per-card amount (the quota
    entry's, else the team's) x the unit's weight."""
    cpu, memory = quota_plan.per_card(policy, team, route.pool.name)
    weight = capacity.unit_weight(route.pool, route.card, route.resource, policy.fleet)
    scale = Decimal(weight.numerator) / Decimal(weight.denominator)
    return {"cpu": quantities.value_of(cpu) * scale, "memory": quantities.value_of(memory) * scale}


def _pairs(policy: Policy) -> list[tuple[WorkloadProfile, Team, Route]]:
    """(profile, team, route) for every route on which the team's accelerators admit the gang;
    both rules of this family walk them, so they are found once per policy."""
    return derived(policy, "host_quota_pairs", lambda: list(_admitted(policy)))


def _admitted(policy: Policy) -> Iterator[tuple[WorkloadProfile, Team, Route]]:
    router, reach = routing.router(policy), quota_plan.reach(policy)
    for profile in policy.profiles.values():
        routes = RoutesByPool([r for r in router.routes(profile) if fits(r, profile)])
        for _, team in candidate_teams(policy, profile):
            for route in routes.of(reach, team):
                if admissible(reach, team, [route], profile).ok:
                    yield profile, team, route


@rule("profile-host-share", Severity.WARNING)
def profile_host_share(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A profile's pods ask no more cpu/memory per accelerator unit than the team's queue holds.

    The queue holds cpuPerCard x the unit's weight (a 1g slice of a 7-slice GPU: 1/7) per unit;
    pods asking more run out of cpu or memory quota before the accelerators are used up.
    Fails: team `cpuPerCard: 12` and a 1g.10gb profile with `cpuPerCard: 4` (12/7 ~ 1.7 a slice).
    Passes: the profile asks `cpuPerCard: 1500m`.
    Fix: lower the profile's `cpuPerCard` / `memoryPerCard` to at most the team's rate times the
    unit's share (1/7 of it for a 1g slice of a 7-slice GPU), or raise the team's `spec.cpuPerCard`
    / `spec.memoryPerCard`.
    """
    seen: set[tuple[str, str, str]] = set()
    for profile, team, route in _pairs(policy):
        asked, held = _pod_request(policy, team, profile, route), _share(policy, team, route)
        for resource, field in HOST_RESOURCES:
            key = (profile.name, team.name, resource)
            if asked[resource] <= held[resource] or key in seen:
                continue
            seen.add(key)
            usable = int(Fraction(held[resource]) / Fraction(asked[resource]) * 100)
            yield warning_at(
                "profile-host-share",
                f"profile '{profile.name}' pods ask {_fmt(asked[resource], resource)} {resource} "
                f"per {route.resource} but team '{team.name}' holds "
                f"{_fmt(held[resource], resource)} per unit in pool '{route.pool.name}': only "
                f"about {usable}% of its accelerators there can run this profile at once",
                profile.origin,
                "spec",
                field if _written(profile, resource) else "requirements",
                key=not _written(profile, resource),
                hint=f"lower the profile's {field} or raise the team's {field}",
            )


@rule("profile-host-quota", Severity.ERROR)
def profile_host_quota(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team whose accelerators admit a profile's gang also holds its cpu and memory.

    What the queue can reach is Kueue's: its own cpu/memory plus what the rest of the cohort
    lends, each queue at its own per-card rates (`quota_plan.Reach`); Kueue checks every
    resource a pod set requests in one flavor (`routing.shortfall`). The finding sits at the
    profile's request; the related locations are the team's quota in the pool and its
    per-card amount when written.
    Fails: gang 4 x 8 cards at `memoryPerCard: 400Gi` (12800Gi) for a team whose queue can
    reach 112 cards x 96Gi = 10752Gi in the pool; or a team at `memoryPerCard: 128Gi` that
    must borrow 8 cards from a team at 96Gi (it reaches 8 x 128Gi + 8 x 96Gi, not 16 x 128Gi).
    Passes: the profile asks `memoryPerCard: 96Gi` (3072Gi).
    Fix: lower the profile's `cpuPerCard` / `memoryPerCard`, raise the team's (`spec.cpuPerCard`,
    `spec.memoryPerCard`), or give the team more cards there; borrowing from the cohort brings only
    what the lenders' own per-card rates hold.
    """
    best: dict[tuple[str, str], tuple[Shortfall | None, Route]] = {}
    reach = quota_plan.reach(policy)
    for profile, team, route in _pairs(policy):
        key = (profile.name, team.name)
        if key not in best or best[key][0] is not None:
            best[key] = (routing.shortfall(policy, reach, team, route, profile), route)
    for (profile_name, team_name), (short, route) in sorted(best.items()):
        if short is not None:
            yield _host_refused(policy, policy.profiles[profile_name], team_name, short, route)


def _host_refused(
    policy: Policy, profile: WorkloadProfile, team_name: str, short: Shortfall, route: Route
) -> Diagnostic:
    resource = short.resource
    field = dict(HOST_RESOURCES)[resource]
    written = _written(profile, resource)
    team = policy.teams[team_name]
    related = [p.origin for p in quota_plan.team_plan(policy, team) if p.pool is route.pool]
    if written_at(team.origin, "spec", field):
        related.append(team.origin.at("spec", field))
    return error_at(
        "profile-host-quota",
        f"team '{team_name}' can hold profile '{profile.name}'s accelerators in pool "
        f"'{route.pool.name}' but never its {resource}: the gang needs "
        f"{_fmt(_base(short.need, resource), resource)}, reach {_reach(short.most, resource)}",
        profile.origin,
        "spec",
        field if written else "requirements",
        key=not written,
        hint=f"lower the profile's {field} or raise the team's (a queue borrows cpu and memory "
        "at the lending teams' per-card amounts)",
        related=related,
    )


def _base(amount: int, resource: str) -> Decimal:
    """Kueue's integer back in base units (cpu counts in milli-units)."""
    return Decimal(amount) / 1000 if resource == "cpu" else Decimal(amount)


def _reach(amount: int, resource: str) -> str:
    return quantities.canonical(_base(amount, resource), binary=resource == "memory")


def _written(profile: WorkloadProfile, resource: str) -> bool:
    return (profile.cpu_per_card if resource == "cpu" else profile.memory_per_card) is not None


def _fmt(value: Decimal, resource: str) -> str:
    amount = float(value) / 1024**3 if resource == "memory" else float(value)
    text = f"{amount:.2f}".rstrip("0").rstrip(".")
    return f"{text}Gi" if resource == "memory" else text
