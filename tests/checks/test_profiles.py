"""Rules of the profiles family: can each WorkloadProfile run somewhere, for some team?"""

from __future__ import annotations

REQ = "  requirements:\n    cardsPerNode: 8\n    gang: 2\n    purposes: [training]\n"
ML_H100 = (
    "    - {pool: h100-train, cards: 8}\n    - {pool: l40s-infer, cards: 8}\n  tiers: [training]"
)


def requirements(policy, body: str) -> None:
    policy.replace("profiles.yaml", REQ, "  requirements:\n" + body)


def ml_quota(policy, h100: str) -> None:
    policy.replace("teams.yaml", ML_H100, ML_H100.replace("pool: h100-train, cards: 8", h100))


def test_profile_card_mismatch(policy):
    policy.replace(
        "profiles.yaml",
        "  image: pytorch\n",
        "  cardTypes: [h100-80gb, l40s-48gb]\n  image: pytorch\n",
    )
    requirements(policy, "    cardsPerNode: 8\n    gang: 2\n    minMemoryGiB: 80\n")
    assert policy.spans("profile-card-mismatch") == [
        policy.pos("profiles.yaml", "[h100-80gb, ^l40s-48gb]")
    ]


def test_explicit_cards_meeting_requirements_pass(policy):
    policy.replace(
        "profiles.yaml", "  image: pytorch\n", "  cardTypes: [h100-80gb]\n  image: pytorch\n"
    )
    requirements(
        policy,
        "    cardsPerNode: 8\n    minMemoryGiB: 80\n    interconnect: [nvlink]\n"
        "    precisions: [bf16]\n    vendors: [nvidia]\n",
    )
    assert policy.spans("profile-card-mismatch") == []


def test_no_card_meets_the_requirements(policy):
    requirements(policy, "    cardsPerNode: 8\n    minMemoryGiB: 200\n")
    assert policy.spans("profile-no-eligible-card") == [
        policy.pos("profiles.yaml", "  ^requirements:")
    ]


def test_no_pool_has_the_purpose(policy):
    requirements(policy, "    cardsPerNode: 8\n    purposes: [dev]\n")
    assert policy.spans("profile-no-eligible-card") == [
        policy.pos("profiles.yaml", "purposes: ^[dev]")
    ]


def test_no_pool_carves_the_mig_profile(policy):
    requirements(policy, "    cardsPerNode: 1\n    migProfile: 1g.10gb\n")
    assert policy.spans("profile-no-eligible-card") == [
        policy.pos("profiles.yaml", "migProfile: ^1g.10gb")
    ]


def test_eligible_card_and_pool_pass(policy):
    assert policy.spans("profile-no-eligible-card") == []


def test_profile_exceeds_every_node(policy):
    requirements(policy, "    cardsPerNode: 16\n    purposes: [training]\n")
    assert policy.spans("profile-exceeds-node") == [
        policy.pos("profiles.yaml", "cardsPerNode: ^16")
    ]


def test_gang_larger_than_the_pool(policy):
    requirements(policy, "    cardsPerNode: 8\n    gang: 3\n    purposes: [training]\n")
    assert policy.spans("profile-exceeds-node") == [policy.pos("profiles.yaml", "gang: ^3")]


def test_small_pods_share_nodes(policy):
    requirements(policy, "    cardsPerNode: 2\n    gang: 8\n    purposes: [training]\n")
    assert policy.spans("profile-exceeds-node") == []


def test_never_admissible_when_borrowing_is_limited(policy):
    ml_quota(policy, "pool: h100-train, cards: 8, borrowingLimit: 4")  # 8 + 4 < 2 x 8
    assert policy.spans("profile-never-admissible") == [policy.pos("profiles.yaml", "gang: ^2")]


def test_never_admissible_for_a_listed_team(policy):
    ml_quota(policy, "pool: h100-train, cards: 8, borrowingLimit: 4")
    policy.replace("profiles.yaml", "  tier: training\n", "  tier: training\n  teams: [ml]\n")
    assert policy.spans("profile-never-admissible") == [policy.pos("profiles.yaml", "teams: [^ml]")]


def test_borrowing_is_bounded_by_what_the_cohort_lends(policy):
    policy.replace(
        "teams.yaml",
        "    - {pool: h100-train, cards: 8}\n  tiers: [serving]",
        "    - {pool: h100-train, cards: 8, lendingLimit: 7}\n  tiers: [serving]",
    )
    assert policy.spans("profile-never-admissible") == [policy.pos("profiles.yaml", "gang: ^2")]


def test_without_cohort_only_nominal_counts(policy):
    policy.replace(
        "teams.yaml",
        "  cohort: ml\n  quotas:\n    - {pool: h100-train",
        "  quotas:\n    - {pool: h100-train",
    )
    assert policy.spans("profile-never-admissible") == [policy.pos("profiles.yaml", "gang: ^2")]


def test_isolated_pool_lends_nothing(policy):
    policy.replace("pools.yaml", "  purpose: training\n", "  purpose: training\n  isolated: true\n")
    assert policy.spans("profile-never-admissible") == [policy.pos("profiles.yaml", "gang: ^2")]


def test_admissible_with_borrowing(policy):
    assert policy.spans("profile-never-admissible") == []  # 8 own + 8 lent by serving


def test_mig_profile_needs_instances(policy):
    policy.replace(
        "pools.yaml",
        "  cardType: h100-80gb\n",
        "  cardType: h100-80gb\n  mig: {devices: [{gpus: [0], profiles: {1g.10gb: 7}}]}\n",
    )
    requirements(policy, "    cardsPerNode: 1\n    gang: 3\n    migProfile: 1g.10gb\n")
    ml_quota(policy, "pool: h100-train, cards: 4, mig: {1g.10gb: 2}")
    assert policy.spans("profile-never-admissible") == [policy.pos("profiles.yaml", "gang: ^3")]
    policy.replace("teams.yaml", "mig: {1g.10gb: 2}", "mig: {1g.10gb: 3}")
    assert policy.spans("profile-never-admissible") == []


def test_image_missing(policy):
    requirements(policy, "    cardsPerNode: 8\n")
    policy.replace("profiles.yaml", "image: pytorch", "image: vllm")
    assert policy.spans("image-missing") == [policy.pos("profiles.yaml", "image: ^vllm")]


def test_image_present_on_every_eligible_card(policy):
    policy.replace("profiles.yaml", "image: pytorch", "image: vllm")  # training pools are H100 only
    assert policy.spans("image-missing") == []


def test_mig_profile_with_several_cards_per_node_warns_at_cards_per_node(policy):
    """Each pod of a MIG profile is rendered with one instance (seen in the simulated fleet on
    the device-plugin and the DRA path): cardsPerNode 2 beside migProfile is not what runs."""
    requirements(policy, "    cardsPerNode: 2\n    migProfile: 1g.10gb\n")
    assert policy.spans("profile-mig-cards-per-node") == [
        policy.pos("profiles.yaml", "cardsPerNode: ^2")
    ]
    policy.replace("profiles.yaml", "cardsPerNode: 2\n", "cardsPerNode: 1\n")
    assert policy.spans("profile-mig-cards-per-node") == []
