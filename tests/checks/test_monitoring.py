"""Rules of the monitoring family: the Fleet's `monitoring` section against the policy."""

from __future__ import annotations

import pytest

from tests.checks.test_dra import on_dra

TARGETS = "targets: [core, kueue, volcano, nodes, gpu-operator]"


def _monitoring(policy, section, *, listed=True):
    targets = TARGETS.replace("]", ", monitoring]") if listed else TARGETS
    policy.replace("fleet.yaml", TARGETS, f"{targets}\n  monitoring:\n{section}")
    return policy


def test_monitoring_unknown_tier(policy):
    _monitoring(policy, "    admissionWait:\n      tiers: {training: 2h, batch: 4h}\n")
    assert policy.spans("monitoring-unknown-tier") == [
        policy.pos("fleet.yaml", "training: 2h, ^batch")
    ]


def test_known_tiers_pass(policy):
    _monitoring(policy, "    admissionWait:\n      tiers: {training: 2h, serving: 5m}\n")
    assert policy.spans("monitoring-unknown-tier") == []


def test_monitoring_unused(policy):
    _monitoring(policy, "    idle: {utilisationPercent: 5}\n", listed=False)
    assert policy.spans("monitoring-unused") == [policy.pos("fleet.yaml", "  ^monitoring:")]


def test_monitoring_listed_is_used(policy):
    _monitoring(policy, "    idle: {utilisationPercent: 5}\n")
    assert policy.spans("monitoring-unused") == []


def test_monitoring_budget_unpriced(policy):
    _monitoring(policy, "    idle: {utilisationPercent: 5}\n")
    policy.replace("cards.yaml", "  cost: {perCardHour: 1.0}\n", "")
    assert policy.spans("monitoring-budget-unpriced") == [
        policy.pos("teams.yaml", "- {pool: ^l40s-infer, cards: 8}\n  tiers: [training]")
    ]


def test_priced_budgets_pass(policy):
    _monitoring(policy, "    idle: {utilisationPercent: 5}\n")
    assert policy.spans("monitoring-budget-unpriced") == []


def test_bad_duration_is_a_schema_error(policy):
    _monitoring(policy, "    idle: {for: 1 hour}\n")
    assert policy.spans("schema")


# Prometheus' limit: int64 nanoseconds, 9223372036854 ms (model.ParseDuration).
LONGEST = "106751d23h47m16s854ms"


def test_monitoring_duration_prometheus_cannot_load(policy):
    _monitoring(
        policy,
        "    idle: {for: 300y}\n"
        "    capacity: {for: 106751d23h47m16s855ms}\n"
        "    budget: {window: 0s}\n"
        "    admissionWait:\n"
        "      window: 1ms\n"
        "      tiers: {training: 293y, serving: 5m}\n",
    )
    assert policy.spans("monitoring-duration") == sorted(
        [
            policy.pos("fleet.yaml", "idle: {for: ^300y}"),
            policy.pos("fleet.yaml", "capacity: {for: ^106751d"),
            policy.pos("fleet.yaml", "budget: {window: ^0s}"),
            policy.pos("fleet.yaml", "window: ^1ms"),
            policy.pos("fleet.yaml", "training: ^293y"),
        ]
    )


@pytest.mark.parametrize("window", ["0s", "0m", "0h0m0s", "1ms", "9m59s999ms"])
def test_a_window_shorter_than_two_samples_is_refused(policy, window):
    _monitoring(policy, f"    admissionWait: {{window: {window}}}\n")
    assert policy.spans("monitoring-duration") == [
        policy.pos("fleet.yaml", f"admissionWait: {{window: ^{window}}}")
    ]


def test_durations_prometheus_loads_pass(policy):
    _monitoring(
        policy,
        f"    idle: {{for: 0s}}\n    capacity: {{for: {LONGEST}}}\n"
        f"    budget: {{window: 10m}}\n    queueState: {{for: 1ms}}\n"
        f"    admissionWait: {{window: {LONGEST}, default: 0s, tiers: {{training: 292y}}}}\n",
    )
    assert policy.spans("monitoring-duration") == []


@pytest.mark.parametrize("allocation", ["draClaims", "draExtendedResource"])
def test_monitoring_dra_idle_unseen(policy, allocation):
    """A DRA pool's GPUs are held by no team the idle alert can see: said at the pool."""
    _monitoring(on_dra(policy, allocation), "    idle: {utilisationPercent: 5}\n")
    assert policy.spans("monitoring-dra-idle-unseen") == [
        policy.pos("pools.yaml", f"devices: {{allocation: ^{allocation}}}")
    ]


def _messages(policy):
    return [d.message for d in policy.diagnostics() if d.rule == "monitoring-dra-idle-unseen"]


def test_monitoring_dra_idle_unseen_says_what_makes_whole_gpus_seen(policy):
    """Whole GPUs: seen through dcgm-exporter's DRA pod mapping, whose two cluster-side needs
    the message and hint name (issue 36); MIG instances: never seen, said apart."""
    _monitoring(on_dra(policy), "    idle: {utilisationPercent: 5}\n")
    (found,) = [d for d in policy.diagnostics() if d.rule == "monitoring-dra-idle-unseen"]
    assert "sees a team holding them only through dcgm-exporter's DRA pod mapping" in found.message
    assert "resourceslices" in found.message and "v1beta1" in found.message
    assert "--runtime-config=resource.k8s.io/v1beta1=true" in (found.hint or "")
    assert "MIG" not in found.message
    policy.replace(
        "pools.yaml",
        "devices: {allocation: draClaims}\n",
        "devices: {allocation: draClaims}\n"
        "  mig:\n    devices:\n      - {gpus: [0], profiles: {1g.10gb: 7}}\n",
    )
    (mig,) = _messages(policy)
    assert "never sees a team holding one" in mig and "parent GPU's UUID" in mig


def test_device_plugin_pools_and_unmonitored_dra_pools_pass(policy):
    _monitoring(policy, "    idle: {utilisationPercent: 5}\n")
    assert policy.spans("monitoring-dra-idle-unseen") == []
    policy.replace("fleet.yaml", ", monitoring]", "]")
    assert on_dra(policy).spans("monitoring-dra-idle-unseen") == []
