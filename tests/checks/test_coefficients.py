"""Rule coefficient-missing: cards in use have a normalized performance coefficient."""

from __future__ import annotations

RULE = "coefficient-missing"
L40S_PERF = (
    '  performance: {coefficient: 0.75, reference: A100-SXM4-80GB, coefficientSet: "2026.2"}\n'
)
A10 = """\
kind: CardType
metadata:
  name: a10
spec:
  vendor: nvidia
  model: A10
  resourceName: nvidia.com/gpu
  memoryGiB: 24
  lifecycle: production
  images: {pytorch: nvcr.io/nvidia/pytorch:25.08-py3}
"""
A10_POOL = """\
kind: Pool
metadata:
  name: a10-dev
spec:
  cardType: a10
  purpose: dev
  cardsPerNode: 4
  nodes: [{names: a10-01, zone: zone-c, rack: rack-c1}]
"""
DEV_PROFILE = """\
kind: WorkloadProfile
metadata:
  name: notebook
spec:
  framework: job
  tier: training
  requirements: {cardsPerNode: 1, purposes: [dev]}
"""


def test_card_with_team_quota_needs_a_coefficient(policy):
    policy.replace("cards.yaml", L40S_PERF, "")
    assert policy.spans(RULE) == [policy.pos("cards.yaml", "l40s-48gb\nspec:\n  ^vendor")]


def test_normalized_quota_on_a_card_without_coefficient(policy):
    policy.replace("cards.yaml", L40S_PERF, "")
    policy.replace(
        "teams.yaml",
        "- {pool: l40s-infer, cards: 8}\n  tiers: [training]",
        "- {pool: l40s-infer, normalized: 6}\n  tiers: [training]",
    )
    assert policy.spans(RULE) == sorted(
        [
            policy.pos("cards.yaml", "l40s-48gb\nspec:\n  ^vendor"),
            policy.pos("teams.yaml", "normalized: ^6"),
        ]
    )


def test_card_a_profile_runs_on_needs_a_coefficient(policy):
    policy.add("cards.yaml", A10).add("pools.yaml", A10_POOL).add("profiles.yaml", DEV_PROFILE)
    assert policy.spans(RULE) == [policy.pos("cards.yaml", "a10\nspec:\n  ^vendor")]


def test_profile_override_counts_as_a_coefficient(policy):
    profile = DEV_PROFILE + "  performance: {a10: 0.3}\n"
    policy.add("cards.yaml", A10).add("pools.yaml", A10_POOL).add("profiles.yaml", profile)
    assert policy.spans(RULE) == []


def test_unused_card_needs_no_coefficient(policy):
    policy.add("cards.yaml", A10)
    assert policy.spans(RULE) == []
