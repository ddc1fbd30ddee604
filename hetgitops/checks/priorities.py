"""Check stage, priorities family: PriorityTier values and which teams may use which tier."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, in_file_order, repeats, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity
from hetgitops.model.policy import Policy, WorkloadProfile

# Kubernetes reserves PriorityClass names with this prefix for its own classes.
RESERVED_TIER_PREFIX = "system-"


@rule("priority-value-collision", Severity.ERROR)
def priority_value_collision(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Each PriorityTier has its own value (equal values make the tiers the same priority).

    Fails: tiers `training` and `batch` both with `value: 1000`.
    Passes: `training: 1000`, `batch: 500`.
    Fix: give each tier its own `value`; their order is the preemption order, so place each tier
    between the tiers it may and may not preempt.
    """
    for seen, tier in repeats(in_file_order(policy.tiers.values()), lambda t: t.value):
        yield error_at(
            "priority-value-collision",
            f"tier '{tier.name}' has value {tier.value}, like tier '{seen.name}'",
            tier.origin,
            "spec",
            "value",
            hint="give each tier a distinct value; the order of values is the preemption order",
            related=[Related(seen.origin.at("spec", "value"), f"tier '{seen.name}' has it first")],
        )


@rule("priority-global-default", Severity.ERROR)
def priority_global_default(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """At most one PriorityTier is the global default (the API server allows one).

    Fails: `globalDefault: true` on both `dev` and `batch`.
    Passes: `globalDefault: true` on `dev` only.
    Fix: keep `globalDefault: true` on one tier (usually the lowest non-system one) and remove it
    from the others.
    """
    defaults = [tier for tier in in_file_order(policy.tiers.values()) if tier.global_default]
    for tier in defaults[1:]:
        yield error_at(
            "priority-global-default",
            f"tier '{tier.name}' is a global default, and so is tier '{defaults[0].name}'",
            tier.origin,
            "spec",
            "globalDefault",
            hint="keep globalDefault: true on one tier",
            related=[
                Related(
                    defaults[0].origin.at("spec", "globalDefault"),
                    f"tier '{defaults[0].name}' is the first global default",
                )
            ],
        )


@rule("tier-preemptible-above", Severity.WARNING)
def tier_preemptible_above(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Warn about a preemptible tier whose value is above every non-preemptible tier.

    A higher value is a higher priority: Kueue and the scheduler let such a tier's workloads
    preempt the tiers meant to be protected, the reverse of what `preemptible: true` says.
    Fails (warns): `dev: {value: 5000, preemptible: true}` beside `training: {value: 1000}`.
    Passes: `dev: {value: 100, preemptible: true}` beside `training: {value: 1000}`.
    Fix: give the preemptible tier a value below the protected tiers.
    """
    protected = [t for t in in_file_order(policy.tiers.values()) if not t.preemptible]
    if not protected:
        return
    top = max(protected, key=lambda t: t.value)
    for tier in in_file_order(policy.tiers.values()):
        if tier.preemptible and tier.value > top.value:
            yield warning_at(
                "tier-preemptible-above",
                f"preemptible tier '{tier.name}' (value {tier.value}) outranks every "
                f"non-preemptible tier (the highest: '{top.name}', {top.value}): its workloads "
                "preempt the ones meant to be protected",
                tier.origin,
                "spec",
                "value",
                hint=f"give '{tier.name}' a value below {top.value}, or make it non-preemptible",
                related=[Related(top.origin.at("spec", "value"), f"tier '{top.name}'")],
            )


@rule("tier-name-reserved", Severity.ERROR)
def tier_name_reserved(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Tier names do not start with `system-` (reserved for Kubernetes' own PriorityClasses).

    Fails: a PriorityTier named `system-batch`.
    Passes: `batch`.
    Fix: rename the tier (e.g. `batch` for `system-batch`) and every team `tiers` and profile `tier`
    that names it.
    """
    for tier in policy.tiers.values():
        if tier.name.startswith(RESERVED_TIER_PREFIX):
            yield error_at(
                "tier-name-reserved",
                f"PriorityClass names starting with '{RESERVED_TIER_PREFIX}' are reserved",
                tier.origin,
                "metadata",
                "name",
                hint="rename the tier",
            )


@rule("tier-not-allowed", Severity.ERROR)
def tier_not_allowed(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A WorkloadProfile's teams may use its tier; some team may use it at all.

    Fails: profile `tier: training, teams: [serving]` where team serving has
    `tiers: [online-inference]`; or a profile whose tier no team lists.
    Passes: team serving lists `tiers: [online-inference, training]`.
    Fix: add the profile's tier to the team's `spec.tiers`, remove the team from the profile's
    `teams`, or give the profile a tier its teams may use.
    """
    for profile in policy.profiles.values():
        if profile.tier not in policy.tiers:
            continue  # unresolved-reference
        if profile.teams is None:
            yield from _no_team(policy, profile)
            continue
        for index, name in enumerate(profile.teams):
            team = policy.teams.get(name)
            if team is not None and profile.tier not in team.tiers:
                yield error_at(
                    "tier-not-allowed",
                    f"team '{name}' may not use tier '{profile.tier}' of profile '{profile.name}'",
                    profile.origin,
                    "spec",
                    "teams",
                    index,
                    hint=f"add '{profile.tier}' to team '{name}' spec.tiers, or drop the team",
                )


def _no_team(policy: Policy, profile: WorkloadProfile) -> Iterator[Diagnostic]:
    if any(profile.tier in team.tiers for team in policy.teams.values()):
        return
    # The team that allows it may be one that did not load.
    yield error_at(
        "tier-not-allowed",
        f"no team may use tier '{profile.tier}', so nobody can run profile '{profile.name}'",
        profile.origin,
        "spec",
        "tier",
        hint=f"add '{profile.tier}' to some team's spec.tiers",
    ).because(policy.unknown.allowed_tiers())
