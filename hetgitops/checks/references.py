"""Check stage, references family: every name a document mentions resolves to an object."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from hetgitops.checks._common import PathPart, did_you_mean, error_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Cause, Diagnostic, Severity, listing
from hetgitops.model.policy import Origin, Policy

RULE = "unresolved-reference"


class _Resolver:
    """Checks names against one kind. A name that may be defined in a file or document that
    did not load is reported as a consequence of that loss, not as a mistake of its own."""

    def __init__(self, policy: Policy, kind: str, known: Iterable[str]) -> None:
        self.policy, self.kind, self.known = policy, kind, set(known)

    def check(
        self, name: str, origin: Origin, *path: PathPart, key: bool = False
    ) -> Iterator[Diagnostic]:
        if name in self.known:
            return
        unknown = self.policy.unknown
        cause = unknown.object(self.kind, name)
        if cause is None:
            # A near miss may be defined where nothing loaded: suggest it, and say so.
            lost = unknown.names(self.kind) - self.known
            hint = did_you_mean(name, self.known | lost)
            if lost:
                hint += f" ({listing(sorted(lost))}: in input that did not load)"
        else:
            hint = lost_hint(cause)
        yield error_at(
            RULE, f"{self.kind} '{name}' is not defined", origin, *path, key=key, hint=hint
        ).because(cause)


def lost_hint(cause: Cause) -> str:
    """Where the missing definition probably is."""
    if cause.rule == "schema":
        return f"its document at {cause.span} failed the schema; fix that first"
    return f"it may be in {cause.span.file}, which did not load; fix that first"


@rule(RULE, Severity.ERROR)
def unresolved_reference(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every referenced CardType, Pool, Team, PriorityTier and cohort exists.

    Checked: Pool.cardType, Team quotas[].pool / cohort / tiers /
    kueue.admissionChecks[].onPools, Fleet cohort parents, WorkloadProfile tier / teams /
    cardTypes / performance keys.
    Fails: `cardType: h100-80g` when the CardType is named `h100-80gb`.
    Passes: `cardType: h100-80gb`.
    Fix: correct the name to the defined one (the hint suggests the nearest), or add the missing
    document (CardType, Pool, Team, PriorityTier) or Fleet.spec.cohorts entry.
    """
    cards = _Resolver(policy, "CardType", policy.card_types)
    tiers = _Resolver(policy, "PriorityTier", policy.tiers)
    for pool in policy.pools.values():
        yield from cards.check(pool.card_type, pool.origin, "spec", "cardType")
    yield from _teams(policy, tiers)
    yield from _cohort_parents(policy)
    yield from _profiles(policy, cards, tiers)


def _cohorts(policy: Policy) -> set[str] | None:
    """Declared cohort names, or None when there is no usable Fleet to check against."""
    return None if policy.fleet is None else {c.name for c in policy.fleet.cohorts}


def _teams(policy: Policy, tiers: _Resolver) -> Iterator[Diagnostic]:
    pools = _Resolver(policy, "Pool", policy.pools)
    cohorts = _cohorts(policy)
    for team in policy.teams.values():
        for quota in team.quotas:
            yield from pools.check(quota.pool, quota.origin, "pool")
        for index, tier in enumerate(team.tiers):
            yield from tiers.check(tier, team.origin, "spec", "tiers", index)
        for index, check in enumerate(team.admission_checks):
            for at, pool in enumerate(check.on_pools):
                where = ("spec", "kueue", "admissionChecks", index, "onPools", at)
                yield from pools.check(pool, team.origin, *where)
        if team.cohort is not None and cohorts is not None and team.cohort not in cohorts:
            yield error_at(
                RULE,
                f"cohort '{team.cohort}' is not declared in the Fleet",
                team.origin,
                "spec",
                "cohort",
                hint=did_you_mean(team.cohort, cohorts) + " (cohorts live in Fleet.spec.cohorts)",
            )


def _cohort_parents(policy: Policy) -> Iterator[Diagnostic]:
    names = _cohorts(policy) or set()
    for cohort in policy.fleet.cohorts if policy.fleet else ():
        if cohort.parent is not None and cohort.parent not in names:
            yield error_at(
                RULE,
                f"parent cohort '{cohort.parent}' is not declared",
                cohort.origin,
                "parent",
                hint=did_you_mean(cohort.parent, names),
            )


def _profiles(policy: Policy, cards: _Resolver, tiers: _Resolver) -> Iterator[Diagnostic]:
    teams = _Resolver(policy, "Team", policy.teams)
    for profile in policy.profiles.values():
        where = profile.origin
        yield from tiers.check(profile.tier, where, "spec", "tier")
        for index, team in enumerate(profile.teams or ()):
            yield from teams.check(team, where, "spec", "teams", index)
        for index, card in enumerate(profile.card_types or ()):
            yield from cards.check(card, where, "spec", "cardTypes", index)
        yield from _performance_keys(cards, profile.performance, where)


def _performance_keys(
    cards: _Resolver, performance: Mapping[str, float], where: Origin
) -> Iterator[Diagnostic]:
    for card in performance:
        yield from cards.check(card, where, "spec", "performance", card, key=True)
