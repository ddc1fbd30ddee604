"""Check stage, profiles family: can each WorkloadProfile run somewhere, for some team?"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from hetgitops.checks._common import PathPart, error_at, note, warning_at, written
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Cause, Diagnostic, Related, Severity, listing
from hetgitops.model import quantities
from hetgitops.model.policy import CardType, Policy, Team, WorkloadProfile
from hetgitops.plan import quota_plan, routing
from hetgitops.plan.clusters import manager_quota, managers
from hetgitops.plan.routing import (
    Route,
    RoutesByPool,
    Verdict,
    admissible,
    candidate_teams,
    eligible_cards,
    fits,
    gang_need,
    iter_cards,
    mismatch,
)

REQUIREMENTS = ("spec", "requirements")


def _requirement(profile: WorkloadProfile, field: str) -> tuple[PathPart, ...]:
    """The requirement field when written, else the requirements block."""
    path = (*REQUIREMENTS, field)
    return path if written(profile.origin, *path) else REQUIREMENTS


@rule("profile-card-mismatch", Severity.ERROR)
def profile_card_mismatch(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Card types a profile lists explicitly meet its own requirements.

    Fails: `cardTypes: [l40s-48gb]` with `requirements: {minMemoryGiB: 80}`.
    Passes: `cardTypes: [h100-80gb]`.
    Fix: remove the card type from the profile's `cardTypes`, or relax its `requirements` if the
    card is good enough for the workload.
    """
    for profile in policy.profiles.values():
        for index, name in enumerate(profile.card_types or ()):
            card = policy.card_types.get(name)
            why = mismatch(profile, card) if card else ""
            if why:
                yield error_at(
                    "profile-card-mismatch",
                    f"card type '{name}' does not meet the profile's requirements: {why}",
                    profile.origin,
                    "spec",
                    "cardTypes",
                    index,
                    hint="drop the card type, or relax spec.requirements",
                )


@rule("profile-no-eligible-card", Severity.ERROR)
def profile_no_eligible_card(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Some card type meets a profile's requirements and some pool of it suits the profile.

    Fails: `requirements: {minMemoryGiB: 200}` in a fleet of 80 GB cards; or
    `purposes: [inference]` when no pool of the eligible cards is for inference.
    Passes: `minMemoryGiB: 80`, and an inference pool of H100s.
    Fix: relax `requirements` (memory, interconnect, purposes) to what the fleet's cards and pools
    offer, or add a card type and a pool that meet them.
    """
    router = routing.router(policy)
    for profile in policy.profiles.values():
        cards = eligible_cards(policy, profile)
        if not cards:
            # Explicit lists were judged entry by entry (profile-card-mismatch,
            # unresolved-reference); an invalid CardType might have been the match.
            if profile.card_types is None:
                yield error_at(
                    "profile-no-eligible-card",
                    f"no card type meets the requirements of profile '{profile.name}'",
                    profile.origin,
                    *REQUIREMENTS,
                    key=True,
                    hint="relax spec.requirements or add the card type",
                ).because(policy.unknown.kind("CardType"))
        elif not router.routes(profile):
            cause = policy.unknown.pool_offers() or _layout_unknown(policy, profile, cards)
            yield _no_pool(profile, [c.name for c in cards]).because(cause)


def _layout_unknown(
    policy: Policy, profile: WorkloadProfile, cards: Iterable[CardType]
) -> Cause | None:
    """Why a pool of the eligible cards may offer what the profile needs after all: its
    capacity is unknown (a MIG layout with a profile its card lacks, node ranges that did not
    expand)."""
    names = {c.name for c in cards}
    unknown = policy.unknown.pools
    causes = [
        unknown[p.name] for p in policy.pools.values() if p.card_type in names and p.name in unknown
    ]
    return min(causes, default=None)


def _no_pool(profile: WorkloadProfile, cards: list[str]) -> Diagnostic:
    if profile.mig_profile is not None:
        what, field = f"carves MIG profile {profile.mig_profile}", "migProfile"
    elif profile.purposes:
        what, field = f"has purpose {' or '.join(profile.purposes)}", "purposes"
    else:
        what, field = "offers whole cards", "cardsPerNode"
    return error_at(
        "profile-no-eligible-card",
        f"no pool of the eligible card types ({listing(cards)}) {what}",
        profile.origin,
        *_requirement(profile, field),
        hint="add such a pool, or relax spec.requirements",
    )


@rule("profile-exceeds-node", Severity.ERROR)
def profile_exceeds_node(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A profile's pod fits on some eligible node, and its gang in some eligible pool.

    Fails: `cardsPerNode: 8` when every eligible node has 4 cards; `gang: 4` of 8-card pods
    in a pool of two 8-card nodes.
    Passes: `cardsPerNode: 4`; `gang: 2`.
    Fix: lower `cardsPerNode` to what one eligible node has (and raise `gang` to keep the job's
    total), lower `gang` to what the pool's nodes hold, or add bigger nodes / more nodes to an
    eligible pool.
    """
    router = routing.router(policy)
    for profile in policy.profiles.values():
        found = router.routes(profile)
        if not found or any(fits(route, profile) for route in found):
            continue
        biggest = max(found, key=lambda r: (r.largest_node, r.slots))
        if biggest.largest_node < biggest.per_pod:
            yield error_at(
                "profile-exceeds-node",
                f"a pod needs {biggest.per_pod} {biggest.resource} on one node, but the largest "
                f"eligible node offers {biggest.largest_node} (pool '{biggest.pool.name}')",
                profile.origin,
                *_requirement(profile, "cardsPerNode"),
                hint="lower cardsPerNode (and raise gang), or add bigger nodes",
            )
            continue
        roomiest = max(found, key=lambda r: r.slots)
        yield error_at(
            "profile-exceeds-node",
            f"a gang of {profile.gang} pods needs {profile.gang} node slots of "
            f"{roomiest.per_pod} {roomiest.resource}, but the largest eligible pool "
            f"'{roomiest.pool.name}' has {roomiest.slots}",
            profile.origin,
            *_requirement(profile, "gang"),
            hint="lower gang, or add nodes to the pool",
        )


@rule("profile-mig-cards-per-node", Severity.WARNING)
def profile_mig_cards_per_node(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A MIG profile's pod gets one MIG instance: `cardsPerNode` above 1 beside `migProfile` is
    not what its pods receive.

    Fails (warns): `migProfile: 1g.10gb` with `cardsPerNode: 2` (each pod is rendered with one
    1g.10gb instance, on the device-plugin and the DRA path alike).
    Passes: `migProfile: 1g.10gb` with `cardsPerNode: 1`, and `gang: 2` for two pods.
    Fix: set `cardsPerNode: 1`; for more instances per job, raise `gang` (one instance per pod),
    or use a larger profile (e.g. `2g.20gb` for two 1g.10gb's worth of compute).
    """
    for profile in policy.profiles.values():
        if profile.mig_profile is None or profile.cards_per_node <= 1:
            continue
        yield warning_at(
            "profile-mig-cards-per-node",
            f"profile '{profile.name}' asks cardsPerNode {profile.cards_per_node} with migProfile "
            f"{profile.mig_profile}: each pod gets one {profile.mig_profile} instance, not "
            f"{profile.cards_per_node}",
            profile.origin,
            *_requirement(profile, "cardsPerNode"),
            hint=(
                f"set cardsPerNode: 1 and gang: {profile.gang * profile.cards_per_node} for "
                f"{profile.cards_per_node} instances per pod's worth, or a larger MIG profile"
            ),
        )


@rule("profile-never-admissible", Severity.ERROR)
def profile_never_admissible(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Some team's quota plus borrowing can hold a profile's whole gang in one eligible pool.

    A team can hold its nominal quota plus what it may borrow: its borrowingLimit, bounded by
    what the rest of its cohort tree lends. The gang needs gang x cardsPerNode cards (or gang
    MIG instances) at once, in one pool, because Kueue gives a job one flavor.

    Borrowing is per pool (flavor), so under MultiKueue this asks whether some worker can
    ever admit the gang; the manager's quota (the workers' sum) may admit a gang no single
    worker can, and the finding then says the job would wait on the workers forever.

    Teams listed in `teams` are checked one by one; without `teams`, the finding means no
    team allowed the tier can ever run it.
    That finding lists every candidate team's best case as a note at its quota entry.
    Fails: `gang: 4, cardsPerNode: 8` for a team with `cards: 16` and no cohort.
    Passes: the team has `cards: 32`, or `cards: 16` and a cohort that lends 16 more.
    Fix: raise an eligible team's `cards` (or `borrowingLimit` with a cohort that lends enough) in
    one eligible pool to at least gang x cardsPerNode, shrink the gang, or let more teams run the
    profile; the notes give every team's best case.
    """
    router = routing.router(policy)
    reach = quota_plan.reach(policy)
    for profile in policy.profiles.values():
        placeable = [r for r in router.routes(profile) if fits(r, profile)]
        teams = candidate_teams(policy, profile)
        if not placeable or not teams:
            continue  # other profile / tier rules explain why
        index_ = RoutesByPool(placeable)
        verdicts = [
            (index, team, admissible(reach, team, index_.of(reach, team), profile))
            for index, team in teams
        ]
        if profile.teams is not None:
            for index, team, verdict in verdicts:
                if not verdict.ok and index is not None:
                    found = _refused(policy, profile, placeable, index, team, verdict)
                    yield found.because(_reach_unknown(policy, team))
        elif not any(verdict.ok for _, _, verdict in verdicts):
            _, team, verdict = max(verdicts, key=lambda v: v[2].most)
            # Any team or pool that did not load might have been the one that admits it.
            unknown = policy.unknown
            found = _nobody(policy, profile, placeable, team, verdict)
            found = replace(found, related=_best_cases(profile, verdicts))
            yield found.because(unknown.team_reach())


def _best_cases(
    profile: WorkloadProfile, verdicts: list[tuple[int | None, Team, Verdict]]
) -> tuple[Related, ...]:
    """The profile's gang, then a note per team that may run it: what it can hold at best, at
    its quota in that pool (raising one of them is the fix)."""
    notes = [note(f"profile '{profile.name}' gang", profile.origin, *_requirement(profile, "gang"))]
    for _, team, verdict in verdicts:
        route = verdict.route
        entry = next((q for q in team.quotas if route and q.pool == route.pool.name), None)
        if entry is not None:
            notes.append(note(_got(team, verdict), entry.origin, "pool"))
    return tuple(notes)


def _reach_unknown(policy: Policy, team: Team) -> Cause | None:
    """Why what `team` can hold is not fully known: a quota in a pool that did not load, or
    (when it borrows) a cohort member that did not load."""
    for quota in team.quotas:
        if quota.pool not in policy.pools:
            cause = policy.unknown.object("Pool", quota.pool)
            if cause is not None:
                return cause
    own = policy.unknown.team_pools.get(team.name)
    if own is not None:
        return own
    return policy.unknown.kind("Team") if team.cohort is not None else None


def _need(profile: WorkloadProfile, route: Route) -> str:
    return (
        f"{gang_need(route, profile)} {route.resource} at once ({profile.gang} x {route.per_pod})"
    )


def _got(team: Team, verdict: Verdict) -> str:
    if verdict.route is None:
        return f"team '{team.name}' has no quota in any eligible pool"
    pool = verdict.route.pool
    where = f"pool '{pool.name}'" + (f" (cluster '{pool.cluster}')" if pool.cluster else "")
    return f"team '{team.name}' can hold at most {verdict.most} in {where}"


def _stranded(policy: Policy, team: Team, profile: WorkloadProfile, route: Route) -> str:
    """Under MultiKueue, what happens when the manager's quota (the workers' sum) admits a
    gang no single worker can: it is dispatched and waits on the workers forever."""
    if not managers(policy):
        return ""
    held = manager_quota(policy, team).get(route.resource)
    need = gang_need(route, profile)
    if held is None or quantities.value_of(held) < need:
        return ""
    return (
        f"; the manager's queue holds {held} (all workers together), so it admits the job, "
        "dispatches it and it waits on the workers forever"
    )


def _nobody(
    policy: Policy, profile: WorkloadProfile, placeable: list[Route], team: Team, verdict: Verdict
) -> Diagnostic:
    return error_at(
        "profile-never-admissible",
        f"no team can ever be admitted for profile '{profile.name}': it needs "
        f"{_need(profile, verdict.route or placeable[0])}; the best case: {_got(team, verdict)}"
        + _stranded(policy, team, profile, verdict.route or placeable[0]),
        profile.origin,
        *_requirement(profile, "gang"),
        hint="raise a team's quota or borrowingLimit in an eligible pool "
        f"({listing([r.pool.name for r in placeable])}), or shrink the gang",
    )


def _refused(
    policy: Policy,
    profile: WorkloadProfile,
    placeable: list[Route],
    index: int,
    team: Team,
    verdict: Verdict,
) -> Diagnostic:
    route = verdict.route or placeable[0]
    return error_at(
        "profile-never-admissible",
        f"profile '{profile.name}' needs {_need(profile, route)}, but {_got(team, verdict)}"
        + _stranded(policy, team, profile, route),
        profile.origin,
        "spec",
        "teams",
        index,
        hint="raise the team's quota or borrowingLimit in "
        f"{listing([r.pool.name for r in placeable])}, or drop the team",
    )


@rule("image-missing", Severity.ERROR)
def image_missing(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every card type a profile can run on has a base image for the profile's `image` key.

    Fails: `image: vllm` on a profile eligible for `rtx4090-24gb`, whose `images` has only
    `pytorch`.
    Passes: the card type lists `images: {pytorch: ..., vllm: ...}`.
    Fix: add `spec.images.KEY: IMAGE` to the card type the finding names, an image built for that
    card's driver and runtime stack; or narrow the profile's `cardTypes` / `requirements` so it no
    longer routes to that card; or switch the profile's `image` to a key every eligible card lists.
    """
    router = routing.router(policy)
    for profile in policy.profiles.values():
        if profile.image is None:
            continue
        for card in iter_cards(router.routes(profile)):
            if profile.image not in card.images:
                yield error_at(
                    "image-missing",
                    f"card type '{card.name}' has no '{profile.image}' image for profile "
                    f"'{profile.name}'",
                    profile.origin,
                    "spec",
                    "image",
                    hint=f"add spec.images.{profile.image} to CardType '{card.name}' (built for "
                    "its driver stack)",
                )
