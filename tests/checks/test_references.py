"""Rule unresolved-reference: every name a document mentions resolves."""

from __future__ import annotations

RULE = "unresolved-reference"


def test_references_resolve_in_the_base_policy(policy):
    assert policy.spans(RULE) == []


def test_pool_card_type(policy):
    policy.replace("pools.yaml", "cardType: l40s-48gb", "cardType: l40s-48g")
    assert policy.spans(RULE) == [policy.pos("pools.yaml", "cardType: ^l40s-48g")]
    assert "did you mean 'l40s-48gb'" in policy.findings(RULE)[0].hint


def test_reference_to_a_schema_invalid_document_is_a_consequence(policy):
    # The L40S card type fails the schema; the pool naming it is not a second mistake.
    policy.replace("cards.yaml", "  model: L40S\n", "")
    assert policy.spans("schema")
    assert policy.spans(RULE)
    assert policy.independent(RULE) == []
    assert set(policy.causes(RULE)) == {"schema"}


def test_team_quota_pool_cohort_and_tier(policy):
    policy.replace(
        "teams.yaml",
        "- {pool: l40s-infer, cards: 8}\n  tiers: [training]",
        "- {pool: l40s, cards: 8}\n  tiers: [train]",
    )
    policy.replace(
        "teams.yaml",
        "cohort: ml\n  quotas:\n    - {pool: h100",
        "cohort: mll\n  quotas:\n    - {pool: h100",
    )
    assert policy.spans(RULE) == sorted(
        [
            policy.pos("teams.yaml", "- {pool: ^l40s, cards: 8}"),
            policy.pos("teams.yaml", "tiers: [^train]"),
            policy.pos("teams.yaml", "cohort: ^mll"),
        ]
    )


def test_fleet_cohort_parent(policy):
    policy.replace("fleet.yaml", "parent: org", "parent: root")
    assert policy.spans(RULE) == [policy.pos("fleet.yaml", "parent: ^root")]


def test_profile_tier_teams_card_types_and_performance_keys(policy):
    policy.replace(
        "profiles.yaml",
        "  tier: training\n",
        "  tier: trainin\n  teams: [ml, mll]\n"
        "  cardTypes: [h100-80gb, b200]\n  performance: {h100-80gb: 3.1, a100: 1}\n",
    )
    assert policy.spans(RULE) == sorted(
        [
            policy.pos("profiles.yaml", "tier: ^trainin"),
            policy.pos("profiles.yaml", "teams: [ml, ^mll]"),
            policy.pos("profiles.yaml", "cardTypes: [h100-80gb, ^b200]"),
            policy.pos("profiles.yaml", "3.1, ^a100: 1"),
        ]
    )
