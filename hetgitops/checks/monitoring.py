"""Check stage, monitoring family: the Fleet's `monitoring` section (thresholds, objectives)
against the rest of the policy."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, note, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy

TARGET = "monitoring"


@rule("monitoring-unknown-tier", Severity.ERROR)
def monitoring_unknown_tier(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every tier named in `monitoring.admissionWait.tiers` is a PriorityTier of the policy.

    The admission-wait alert matches Kueue's `priority_class` label, which is the tier's
    WorkloadPriorityClass name: an objective for a tier that does not exist never applies.
    Fails: `admissionWait: {tiers: {batch: 2h}}` with no PriorityTier `batch`.
    Passes: the same with a PriorityTier named `batch`.
    Fix: rename the entry in `monitoring.admissionWait.tiers` to an existing PriorityTier's name
    (the hint lists them), or delete it; add the tier first if the objective is for a tier still to
    come.
    """
    fleet = policy.fleet
    if fleet is None or fleet.monitoring.origin is None:
        return
    for tier in fleet.monitoring.wait_tiers:
        if tier in policy.tiers:
            continue
        cause = policy.unknown.object("PriorityTier", tier) or policy.unknown.kind("PriorityTier")
        known = ", ".join(sorted(policy.tiers)) or "none"
        yield error_at(
            "monitoring-unknown-tier",
            f"monitoring.admissionWait.tiers names {tier!r}, which is no PriorityTier",
            fleet.monitoring.origin,
            "admissionWait",
            "tiers",
            tier,
            key=True,
            hint=f"use one of the tiers ({known}) or remove the entry",
        ).because(cause)


@rule("monitoring-unused", Severity.WARNING)
def monitoring_unused(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A `monitoring` section only takes effect when `spec.targets` lists `monitoring`.

    Fails: `monitoring: {idle: {utilisationPercent: 5}}` with `targets: [core, kueue]`.
    Passes: the same with `targets: [core, kueue, monitoring]`, or `render --target monitoring`.
    Fix: add `monitoring` to Fleet spec.targets (or render with `--target monitoring`), or delete
    the `monitoring` section if nothing is meant to consume it.
    """
    fleet = policy.fleet
    if fleet is None or fleet.monitoring.origin is None or TARGET in fleet.targets:
        return
    yield warning_at(
        "monitoring-unused",
        "the Fleet sets monitoring thresholds but its targets do not include monitoring: "
        "render emits no PrometheusRules",
        fleet.monitoring.origin,
        key=True,
        hint="add monitoring to spec.targets (or render with --target monitoring)",
        related=[note("the targets rendered", fleet.origin, "spec", "targets")],
    )


@rule("monitoring-budget-unpriced", Severity.WARNING)
def monitoring_budget_unpriced(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """With the monitoring target, a team's budget-burn alert can only count cards that have a
    cost: a quota in a pool whose card type has no `cost.perCardHour` is left out of it.

    Fails: a team with `budget: {monthly: 50000}` and a quota on a card type without `cost`.
    Passes: every card type of the team's quotas has `cost.perCardHour`.
    Fix: add `spec.cost.perCardHour` to the card type the note names, or accept that the budget-burn
    alert leaves that pool's cards out of the team's spend.
    """
    fleet = policy.fleet
    if fleet is None or TARGET not in fleet.targets:
        return
    for team in policy.teams.values():
        if team.budget_monthly is None:
            continue
        for index, quota in enumerate(team.quotas):
            pool = policy.pools.get(quota.pool)
            card = policy.card_type_of(pool) if pool else None
            if card is None or card.cost_per_hour is not None:
                continue
            yield warning_at(
                "monitoring-budget-unpriced",
                f"team {team.name} has a budget, but card type {card.name} (pool "
                f"{quota.pool}) has no cost: its use is left out of the budget-burn alert",
                team.origin,
                "spec",
                "quotas",
                index,
                "pool",
                hint=f"add cost.perCardHour to CardType {card.name}",
                related=[note("the card type without a cost", card.origin, key=True)],
            )
