"""Rules of the monitoring family: the Fleet's `monitoring` section against the policy."""

from __future__ import annotations

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
