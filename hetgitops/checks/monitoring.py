"""Check stage, monitoring family: the Fleet's `monitoring` section (thresholds, objectives)
against the rest of the policy."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, note, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Monitoring, Policy
from hetgitops.plan import dra

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


@rule("monitoring-dra-idle-unseen", Severity.WARNING)
def monitoring_dra_idle_unseen(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """With the monitoring target, the idle-GPU alert sees who holds a DRA pool's GPUs only
    through dcgm-exporter's DRA pod mapping, and never sees a team holding MIG instances.

    No container requests a claimed GPU, so on a DRA pool the alert counts the GPUs
    dcgm-exporter labels with a pod of the team's namespaces. dcgm-exporter (4.5.3-4.8.2) does
    so only with `KUBERNETES_ENABLE_DRA=true` (the GPU Operator values the monitoring target
    writes set it), reading ResourceSlices through `resource.k8s.io/v1beta1`: its
    ServiceAccount needs list and watch on `resourceslices` (the GPU Operator's Role for it
    grants pods and configmaps only) and Kubernetes 1.35 serves v1beta1 only when enabled.
    A MIG instance is never labelled: its pods are looked up as `<gpu>-<instance>`, DRA
    devices are kept under the parent GPU's UUID. Without the mapping the alert stays silent
    for the pool; its capacity alert counts the GPUs dcgm-exporter sees there either way.
    Fails: a pool with `devices: {allocation: draClaims}` in a Fleet whose targets list
    `monitoring` (the message says which of the two limits applies).
    Passes: the same pool on the device plugin, or a Fleet without the monitoring target.
    Fix: grant dcgm-exporter's ServiceAccount `get`, `list`, `watch` on
    `resourceslices.resource.k8s.io`, run the API server with
    `--runtime-config=resource.k8s.io/v1beta1=true`, and check a GPU's series carries
    `dra_claim_name`; watch a MIG pool's instances on the pool dashboard.
    """
    fleet = policy.fleet
    if fleet is None or TARGET not in fleet.targets:
        return
    for pool in policy.pools.values():
        if not dra.on_dra(pool):
            continue
        needs = (
            "dcgm-exporter's DRA pod mapping, which needs list/watch on resourceslices and "
            "the API server serving resource.k8s.io/v1beta1"
        )
        if pool.mig and fleet.mig_strategy != "none":
            text = (
                f"pool {pool.name} gives MIG instances by DRA: the idle-GPU alert never sees a "
                "team holding one (dcgm-exporter looks up an instance's pods as <gpu>-<instance> "
                "and keeps DRA devices under the parent GPU's UUID), and sees its whole GPUs "
                f"only through {needs}"
            )
        else:
            text = (
                f"pool {pool.name} gives its GPUs by DRA: the idle-GPU alert sees a team holding "
                f"them only through {needs}; without it the alert stays silent for the pool"
            )
        yield warning_at(
            "monitoring-dra-idle-unseen",
            text,
            pool.origin,
            "spec",
            "devices",
            "allocation",
            hint=(
                "grant dcgm-exporter's ServiceAccount get/list/watch on "
                "resourceslices.resource.k8s.io and run kube-apiserver with "
                "--runtime-config=resource.k8s.io/v1beta1=true"
            ),
        )


# Prometheus keeps a duration in int64 nanoseconds (model.ParseDuration: "duration out of
# range" past it, about 292 years); the schema's pattern already has its unit syntax.
_UNIT_MS = {"y": 31_536_000_000, "w": 604_800_000, "d": 86_400_000, "h": 3_600_000}
_UNIT_MS |= {"m": 60_000, "s": 1_000, "ms": 1}
MAX_MS = (2**63 - 1) // 1_000_000
# A window is a PromQL range (`rate(x[1h])`): empty (0s) Prometheus refuses to parse, and one
# shorter than two samples never yields a rate; 10m holds two of the generated promtool tests'
# 5-minute samples and ten scrapes at Prometheus' default 1-minute interval.
MIN_WINDOW_MS = 600_000
_WINDOWS = (("admissionWait", "window"), ("budget", "window"))


def _durations(m: Monitoring) -> Iterator[tuple[tuple[str, ...], str]]:
    """(path under `monitoring`, duration) of every duration field, objectives per tier too."""
    yield ("admissionWait", "window"), m.wait_window
    yield ("budget", "window"), m.budget_window
    yield ("idle", "for"), m.idle_for
    yield ("capacity", "for"), m.capacity_for
    yield ("pendingWhileIdle", "for"), m.pending_for
    yield ("admissionWait", "default"), m.wait_default
    for tier, objective in m.wait_tiers.items():
        yield ("admissionWait", "tiers", tier), objective
    yield ("migLayout", "for"), m.mig_for
    yield ("queueState", "for"), m.queue_for


def duration_ms(text: str) -> int:
    """A schema-valid Prometheus duration in whole milliseconds (`1h30m` -> 5400000)."""
    total, number, i = 0, "", 0
    while i < len(text):
        if text[i].isdigit():
            number, i = number + text[i], i + 1
            continue
        unit = "ms" if text.startswith("ms", i) else text[i]
        total, number, i = total + int(number) * _UNIT_MS[unit], "", i + len(unit)
    return total


def _duration_problem(path: tuple[str, ...], value: str) -> str | None:
    length = duration_ms(value)
    if length > MAX_MS:
        return "is beyond Prometheus' longest duration (about 292y): it refuses the rule file"
    if path in _WINDOWS and length < MIN_WINDOW_MS:
        what = "an empty range, which Prometheus refuses" if length == 0 else "too short"
        return f"is {what}: a window must be at least 10m to hold samples to average"
    return None


@rule("monitoring-duration", Severity.ERROR)
def monitoring_duration(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every duration of the `monitoring` section is one Prometheus loads and can evaluate.

    Prometheus refuses a rule file with a duration past about 292 years (it counts
    nanoseconds in 64 bits) or an empty range (`rate(x[0s])`); a window shorter than two
    samples never gives a rate, so its alert could never fire.
    Fails: `budget: {window: 0s}`, `admissionWait: {window: 1ms}`, `idle: {for: 300y}`.
    Passes: `budget: {window: 6h}`, `idle: {for: 0s}` (fire at once), `for: 292y`.
    Fix: give windows at least 10m and every duration less than 292y.
    """
    fleet = policy.fleet
    if fleet is None or fleet.monitoring.origin is None:
        return
    for path, value in _durations(fleet.monitoring):
        problem = _duration_problem(path, value)
        if problem is not None:
            yield error_at(
                "monitoring-duration",
                f"monitoring.{'.'.join(path)} {value} {problem}",
                fleet.monitoring.origin,
                *path,
                hint="use a duration such as 10m, 1h or 7d",
            )
