"""Rules of the priorities family: tier values, global default, who may use a tier."""

from __future__ import annotations


def test_priority_value_collision(policy):
    policy.replace("tiers.yaml", "value: 10000", "value: 1000")
    found = policy.findings("priority-value-collision")
    # "First" is the order in the files: training is written first, serving repeats its value.
    assert [str(d.span) for d in found] == [
        policy.pos("tiers.yaml", "serving\nspec:\n  value: ^1000")
    ]
    assert [str(s) for s in found[0].related] == [
        policy.pos("tiers.yaml", "training\nspec:\n  value: ^1000")
    ]


def test_distinct_values_pass(policy):
    assert policy.spans("priority-value-collision") == []


def test_priority_global_default(policy):
    policy.replace("tiers.yaml", "value: 10000", "value: 10000\n  globalDefault: true")
    policy.replace("tiers.yaml", "value: 1000\n", "value: 1000\n  globalDefault: true\n")
    assert policy.spans("priority-global-default") == [
        policy.pos("tiers.yaml", "value: 10000\n  globalDefault: ^true")
    ]


def test_one_global_default_passes(policy):
    policy.replace("tiers.yaml", "value: 10000", "value: 10000\n  globalDefault: true")
    assert policy.spans("priority-global-default") == []


def test_tier_name_reserved(policy):
    policy.add(
        "tiers.yaml", "kind: PriorityTier\nmetadata:\n  name: system-batch\nspec:\n  value: 5\n"
    )
    assert policy.spans("tier-name-reserved") == [policy.pos("tiers.yaml", "name: ^system-batch")]


def test_ordinary_tier_names_pass(policy):
    assert policy.spans("tier-name-reserved") == []


def test_listed_team_may_not_use_the_tier(policy):
    policy.replace(
        "profiles.yaml", "  tier: training\n", "  tier: training\n  teams: [ml, serving]\n"
    )
    assert policy.spans("tier-not-allowed") == [
        policy.pos("profiles.yaml", "teams: [ml, ^serving]")
    ]


def test_no_team_may_use_the_tier(policy):
    policy.add("tiers.yaml", "kind: PriorityTier\nmetadata:\n  name: batch\nspec:\n  value: 5\n")
    policy.replace("profiles.yaml", "  tier: training\n", "  tier: batch\n")
    assert policy.spans("tier-not-allowed") == [policy.pos("profiles.yaml", "tier: ^batch")]


def test_tier_allowed(policy):
    policy.replace("profiles.yaml", "  tier: training\n", "  tier: training\n  teams: [ml]\n")
    assert policy.spans("tier-not-allowed") == []


def test_tier_preemptible_above(policy):
    policy.replace("tiers.yaml", "value: 10000", "value: 10000\n  preemptible: true")
    found = policy.findings("tier-preemptible-above")
    assert [str(d.span) for d in found] == [policy.pos("tiers.yaml", "value: ^10000")]
    assert [str(r.span) for r in found[0].related] == [policy.pos("tiers.yaml", "value: ^1000\n")]


def test_a_preemptible_tier_below_the_protected_ones_passes(policy):
    policy.replace("tiers.yaml", "value: 1000\n", "value: 1000\n  preemptible: true\n")
    assert policy.spans("tier-preemptible-above") == []
