"""Check stage, capacity family: team quotas against what the pools physically offer."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator

from hetgitops.checks._common import (
    PathPart,
    QuotaUse,
    error_at,
    known_part,
    note,
    pools_with_cards,
    quota_uses,
    repeats,
    warning_at,
)
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity, listing
from hetgitops.model import mig
from hetgitops.model.policy import CardType, Fleet, Policy, Pool, Quota
from hetgitops.plan import capacity


def offered_profiles(pool: Pool, fleet: Fleet | None) -> set[str]:
    """MIG profiles some node of the pool exposes as devices (none under strategy `none`)."""
    if capacity.mig_strategy(fleet) == "none" or not pool.mig:
        return set()
    sizes = {node.cards for node in pool.nodes}
    return {
        profile
        for cards in sizes
        for layout in capacity.covered_gpus(pool, cards).values()
        for profile in map(mig.gpu_instance_profile, layout)
    }


def _field(quota: Quota, resource: str, fleet: Fleet | None) -> tuple[PathPart, ...]:
    """The quota field that claims `resource`, for pointing at the right line."""
    # Under `single`, MIG instances are plain `nvidia.com/gpu`: blame them only when the entry
    # claims no whole cards.
    whole = quota.cards is not None or quota.normalized is not None
    single = capacity.mig_strategy(fleet) == "single"
    for profile in quota.mig:
        if resource == mig.resource_name(profile) or (single and not whole):
            return ("mig", profile)
    return ("cards",) if quota.cards is not None else ("normalized",)


@rule("quota-exceeds-capacity", Severity.ERROR)
def quota_exceeds_capacity(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Team nominal quotas in a pool add up to no more than the pool offers, per resource.

    Counts MIG instances (mixed: `nvidia.com/mig-<profile>`; single: `nvidia.com/gpu`) and
    time-slicing/MPS replicas the way the device plugin advertises them. Kueue itself does not
    check this (kueue#2665). Claims of MIG profiles the card lacks (mig-profile-unknown) are
    left out, and a pool whose capacity is unknown (node-range-invalid, a layout with such a
    profile) is not judged: a total computed from them would be made up.

    The finding lists every contributor: a note at each team's quota and at the pool's
    capacity. It is reported at that capacity (`spec.nodes`; `spec.mig` for MIG instances),
    the one total every claim is measured against (no team's line is more at fault than
    another's, and the place does not move when teams are renamed or reordered); when the
    changed lines are known (`validate
    --changed-since`, the GitHub Action), at a changed contributor instead, so the annotation
    lands in the pull request's diff.
    Fails: 2 nodes x 8 cards and teams with `cards: 12` and `cards: 8` in that pool.
    Passes: the same pool with `cards: 8` and `cards: 8`.
    Fix: lower the teams' nominal quotas in the pool until they add up to its capacity (the notes
    list each contributor), or add nodes to the pool; to let teams use each other's idle cards, use
    a cohort with borrowing rather than nominal quota above capacity. In a pool whose every GPU
    is MIG-partitioned (no whole GPUs offered), claim slices with `mig:` quotas instead of
    `cards:` (the hint names the pool's profiles and how many it offers).
    """
    claims: dict[str, dict[str, list[tuple[QuotaUse, int]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for use in quota_uses(policy):
        resources = capacity.quota_resources(known_part(use), use.pool, use.card, policy.fleet)
        for resource, amount in resources.items():
            if amount:
                claims[use.pool.name][resource].append((use, amount))
    for pool, card in pools_with_cards(policy):
        if pool.name in policy.unknown.pools or unknown_layout(pool, card):
            continue  # its capacity is unknown: node-range-invalid / mig-profile-unknown say why
        offered = capacity.pool_resources(pool, card, policy.fleet)
        for resource, entries in claims.get(pool.name, {}).items():
            if resource in offered:  # an unoffered resource is quota-resource-unavailable
                hint = _all_mig_hint(pool, resource, offered)
                yield from _over(pool, resource, offered[resource], entries, policy.fleet, hint)


def _all_mig_hint(pool: Pool, resource: str, offered: dict[str, int]) -> str:
    """The fix: in a pool that offers only MIG instances, whole cards cannot be claimed."""
    slices = mig.resource_name("")
    if offered[resource] or not pool.mig or resource.startswith(slices):
        return "lower the quotas or add nodes; borrowing, not nominal quota, is how teams share"
    profiles = {name.removeprefix(slices): n for name, n in offered.items() if name != resource}
    spelled = ", ".join(f"{p}: {n}" for p, n in profiles.items())
    return (
        f"every GPU of pool '{pool.name}' is MIG-partitioned, so it offers no whole GPUs: "
        f"claim its slices with a `mig:` quota instead of `cards:` (it offers {{{spelled}}})"
    )


def unknown_layout(pool: Pool, card: CardType) -> bool:
    """Whether the pool's MIG layout names a profile its card lacks (mig-profile-unknown)."""
    table = mig.TABLES.get(card.mig_table) if card.mig_table else None
    return table is not None and any(
        mig.gpu_instance_profile(profile) not in table.profiles
        for device in pool.mig
        for profile in device.profiles
    )


def _over(
    pool: Pool,
    resource: str,
    offered: int,
    entries: list[tuple[QuotaUse, int]],
    fleet: Fleet | None,
    hint: str,
) -> Iterator[Diagnostic]:
    total = sum(amount for _, amount in entries)
    if total <= offered:
        return
    who = listing([f"{u.team.name} {a}" for u, a in entries])
    # MIG instances are offered by the layout (on every node); everything else by the nodes.
    defined = ("spec", "mig") if resource.startswith(mig.resource_name("")) else ("spec", "nodes")
    capacity_note = note(
        f"pool '{pool.name}' offers {offered} {resource} on {len(pool.nodes)} node(s)",
        pool.origin,
        *defined,
    )
    claims = [
        note(
            f"team '{u.team.name}' claims {a} {resource}",
            u.quota.origin,
            *_field(u.quota, resource, fleet),
        )
        for u, a in entries
    ]
    yield error_at(
        "quota-exceeds-capacity",
        f"teams claim {total} {resource} in pool '{pool.name}' ({who}) but its "
        f"{len(pool.nodes)} node(s) offer {offered}",
        pool.origin,
        *defined,
        hint=hint,
        related=[capacity_note, *claims],
    )


@rule("quota-resource-unavailable", Severity.ERROR)
def quota_resource_unavailable(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A MIG quota names a profile that some node of the pool actually carves.

    Fails: `mig: {2g.20gb: 4}` on a pool whose layout is `{1g.10gb: 7}`.
    Passes: `mig: {1g.10gb: 14}` on that pool.
    Fix: claim a profile the pool's layout carves (the hint lists them), or change the pool's
    `spec.mig` layout to carve the profile you want.
    """
    offered_by_pool: dict[str, set[str]] = {}
    for use in quota_uses(policy):
        if not use.quota.mig:
            continue
        if use.pool.name not in offered_by_pool:  # once per pool, not once per quota
            offered_by_pool[use.pool.name] = offered_profiles(use.pool, policy.fleet)
        offered = offered_by_pool[use.pool.name]
        table = mig.TABLES.get(use.card.mig_table) if use.card.mig_table else None
        for profile in use.quota.mig:
            if profile in offered or (table is not None and profile not in table.profiles):
                continue  # offered, or a profile the card lacks (mig-profile-unknown)
            # A layout with a profile the card lacks is not what the pool offers: the quota's
            # profile may be the one the layout meant (mig-profile-unknown says why).
            yield error_at(
                "quota-resource-unavailable",
                f"pool '{use.pool.name}' offers no {profile} MIG devices",
                use.quota.origin,
                "mig",
                profile,
                key=True,
                hint=_unavailable_hint(use.pool, _valid(offered, table), policy.fleet),
            ).because(policy.unknown.pools.get(use.pool.name))


def _valid(offered: set[str], table: mig.ProfileTable | None) -> set[str]:
    """The offered profiles the card has: a hint never offers a name that does not exist."""
    if table is None:
        return offered
    return {p for p in offered if mig.gpu_instance_profile(p) in table.profiles}


def _unavailable_hint(pool: Pool, offered: set[str], fleet: Fleet | None) -> str:
    if capacity.mig_strategy(fleet) == "none" and pool.mig:
        return "Fleet migStrategy 'none' exposes whole GPUs only; use 'mixed' or 'single'"
    if not offered:
        return f"pool '{pool.name}' has no MIG layout (spec.mig)"
    return "its layout offers: " + ", ".join(sorted(offered))


@rule("quota-unit-conflict", Severity.ERROR)
def quota_unit_conflict(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A quota entry is in whole cards or in normalized units, not both.

    Fails: `{pool: h100-train, cards: 8, normalized: 23.2}`.
    Passes: `{pool: h100-train, normalized: 23.2}`.
    Fix: keep either `cards` or `normalized` in the entry: `cards` for a fixed count of this pool's
    cards, `normalized` to hold capacity in reference-card units.
    """
    for team in policy.teams.values():
        for quota in team.quotas:
            if quota.cards is not None and quota.normalized is not None:
                yield error_at(
                    "quota-unit-conflict",
                    "quota sets both cards and normalized; cards wins, normalized is ignored",
                    quota.origin,
                    "normalized",
                    key=True,
                    hint="keep one of the two",
                )


@rule("normalized-not-integral", Severity.WARNING)
def normalized_not_integral(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Normalized quota divides into whole cards (it is rounded down otherwise).

    Fails: `normalized: 10` on a card with coefficient 2.9 (3.45 cards, rounded to 3).
    Passes: `normalized: 23.2` on that card (exactly 8 cards).
    Fix: use a multiple of the card's coefficient (the hint gives it: `23.2` is 8 cards at 2.9), or
    write the quota as whole `cards`.
    """
    for use in quota_uses(policy):
        quota, perf = use.quota, use.card.performance
        if quota.normalized is None or quota.cards is not None or perf is None:
            continue
        cards = quota.normalized / perf.coefficient
        if abs(cards - round(cards)) > 1e-6:
            yield warning_at(
                "normalized-not-integral",
                f"{quota.normalized:g} normalized units / coefficient {perf.coefficient:g} "
                f"({use.card.name}) = {cards:.2f} cards, rounded down to {math.floor(cards)}",
                quota.origin,
                "normalized",
                hint=f"use a multiple of {perf.coefficient:g}, or set cards instead",
            )


@rule("quota-pool-duplicate", Severity.ERROR)
def quota_pool_duplicate(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team lists each pool once (a ClusterQueue may name a flavor only once).

    Fails: `quotas: [{pool: a, cards: 8}, {pool: a, cards: 4}]`.
    Passes: `quotas: [{pool: a, cards: 12}]`.
    Fix: merge the two entries into one with the sum (`{pool: a, cards: 12}`), keeping one set of
    limits.
    """
    for team in policy.teams.values():
        for seen, quota in repeats(team.quotas, lambda q: q.pool):
            yield error_at(
                "quota-pool-duplicate",
                f"pool '{quota.pool}' is already in this team's quotas at {seen.origin.at('pool')}",
                quota.origin,
                "pool",
                hint="merge the two entries",
                related=[Related(seen.origin.at("pool"), "the first entry for this pool")],
            )
