"""Rule sharing-conflict: one sharing mode per pool, and only where the plugin supports it."""

from __future__ import annotations

import pytest

RULE = "sharing-conflict"
L40S = "  cardType: l40s-48gb\n"


def share(policy, fields: str, pool: str = L40S) -> None:
    policy.replace("pools.yaml", pool, pool + fields)


@pytest.mark.parametrize(
    "fields, marked",
    [
        ("  timeSlicing: {replicas: 4}\n  mps: {replicas: 2}\n", "  ^mps: {replicas: 2}"),
        (
            "  mig: {devices: [{gpus: [0], profiles: {1g.10gb: 7}}]}\n"
            "  timeSlicing: {replicas: 4}\n",
            "  ^timeSlicing: {replicas: 4}",
        ),
    ],
)
def test_two_sharing_modes_on_one_pool(policy, fields, marked):
    share(policy, fields, pool="  cardType: h100-80gb\n")
    assert policy.spans(RULE) == [policy.pos("pools.yaml", marked)]


def test_time_slicing_needs_an_nvidia_card(policy):
    policy.replace("cards.yaml", "  vendor: nvidia\n  model: L40S", "  vendor: amd\n  model: L40S")
    share(policy, "  timeSlicing: {replicas: 4}\n")
    assert policy.spans(RULE) == [policy.pos("pools.yaml", "  ^timeSlicing: {replicas: 4}")]


def test_mps_is_rejected_under_mixed_strategy(policy):
    share(policy, "  mps: {replicas: 2}\n")
    assert policy.spans(RULE) == [policy.pos("pools.yaml", "  ^mps: {replicas: 2}")]


def test_mps_under_none_strategy_passes(policy):
    policy.replace("fleet.yaml", "  cohorts:", "  gpuOperator: {migStrategy: none}\n  cohorts:")
    share(policy, "  mps: {replicas: 2}\n")
    assert policy.spans(RULE) == []


def test_time_slicing_on_nvidia_passes(policy):
    share(policy, "  timeSlicing: {replicas: 4}\n")
    assert policy.spans(RULE) == []
