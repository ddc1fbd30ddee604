"""Rules of the capacity family: quotas against what pools offer."""

from __future__ import annotations

ML_H100 = (
    "    - {pool: h100-train, cards: 8}\n    - {pool: l40s-infer, cards: 8}\n  tiers: [training]"
)
MIG_LAYOUT = "  mig:\n    devices:\n      - gpus: [0, 1]\n        profiles: {1g.10gb: 7}\n"


def ml_quota(policy, h100: str) -> None:
    """Replace team ml's h100-train quota entry (the body inside the braces)."""
    policy.replace("teams.yaml", ML_H100, ML_H100.replace("pool: h100-train, cards: 8", h100))


def with_mig(policy, layout: str = MIG_LAYOUT) -> None:
    policy.replace("pools.yaml", "  cardType: h100-80gb\n", "  cardType: h100-80gb\n" + layout)


H100_NODES = '^- {names: "gpu-h100'
SERVING_H100 = "- {pool: l40s-infer, cards: 8}\n    - {pool: h100-train, cards: ^8}"


def claims(policy) -> list[list[str]]:
    """Per quota-exceeds-capacity finding, the team quota fields its notes point at."""
    pool_nodes = policy.pos("pools.yaml", H100_NODES)
    return [
        [str(r.span) for r in d.related if str(r.span) != pool_nodes and "pools.yaml" not in str(r)]
        for d in policy.findings("quota-exceeds-capacity")
    ]


def test_quota_exceeds_capacity_lists_every_contributor_at_the_pool(policy):
    ml_quota(policy, "pool: h100-train, cards: 12")
    (found,) = policy.findings("quota-exceeds-capacity")
    # No change is known: reported at the pool's nodes, the capacity every claim is measured
    # against, with a note at the pool and at each team's quota.
    assert str(found.span) == policy.pos("pools.yaml", H100_NODES)
    assert [(str(r.span), r.message) for r in found.related] == [
        (
            policy.pos("pools.yaml", H100_NODES),
            "pool 'h100-train' offers 16 nvidia.com/gpu on 2 node(s)",
        ),
        (
            policy.pos("teams.yaml", "- {pool: h100-train, cards: ^12}"),
            "team 'ml' claims 12 nvidia.com/gpu",
        ),
        (policy.pos("teams.yaml", SERVING_H100), "team 'serving' claims 8 nvidia.com/gpu"),
    ]


def test_quota_at_capacity_passes(policy):
    assert policy.spans("quota-exceeds-capacity") == []


def test_mig_gpus_leave_fewer_whole_cards(policy):
    with_mig(policy)  # 2 of 8 GPUs per node carved: 12 whole cards left for 16 of quota
    assert claims(policy) == [
        [
            policy.pos("teams.yaml", "- {pool: h100-train, cards: ^8}\n    - {pool: l40s"),
            policy.pos("teams.yaml", SERVING_H100),
        ]
    ]


def test_mig_instances_are_counted(policy):
    with_mig(policy)  # 2 nodes x 2 GPUs x 7 = 28 x 1g.10gb
    ml_quota(policy, "pool: h100-train, cards: 4, mig: {1g.10gb: 29}")
    assert claims(policy) == [[policy.pos("teams.yaml", "mig: {1g.10gb: ^29}")]]


def test_mig_instances_within_capacity_pass(policy):
    with_mig(policy)
    ml_quota(policy, "pool: h100-train, cards: 4, mig: {1g.10gb: 28}")
    assert policy.spans("quota-exceeds-capacity") == []


def test_an_all_mig_pool_says_to_claim_its_profiles_with_mig_quotas(policy):
    # Every GPU carved: no whole GPU is offered, so `cards:` there can never be met. "Lower the
    # quotas or add nodes" sent newcomers the wrong way; the fix is a `mig:` quota.
    with_mig(policy, "  mig:\n    devices:\n      - gpus: all\n        profiles: {3g.40gb: 2}\n")
    found = policy.findings("quota-exceeds-capacity")
    assert [str(d.span) for d in found] == [policy.pos("pools.yaml", H100_NODES)]
    assert "`mig:`" in found[0].hint and "3g.40gb: 32" in found[0].hint


def test_a_partly_carved_pool_keeps_the_lower_or_add_nodes_fix(policy):
    with_mig(policy)  # 12 whole cards still offered
    (found,) = policy.findings("quota-exceeds-capacity")
    assert "`mig:`" not in found.hint


def test_single_strategy_counts_instances_as_gpus(policy):
    policy.replace("fleet.yaml", "  cohorts:", "  gpuOperator: {migStrategy: single}\n  cohorts:")
    with_mig(policy, "  mig:\n    devices:\n      - gpus: all\n        profiles: {3g.40gb: 2}\n")
    # 2 nodes x 8 GPUs x 2 instances = 32 nvidia.com/gpu; 16 whole + 17 instances is one too many.
    ml_quota(policy, "pool: h100-train, mig: {3g.40gb: 17}")
    policy.replace(
        "teams.yaml",
        "    - {pool: h100-train, cards: 8}\n  tiers: [serving]",
        "    - {pool: h100-train, cards: 16}\n  tiers: [serving]",
    )
    assert claims(policy) == [
        [
            policy.pos("teams.yaml", "mig: {3g.40gb: ^17}"),
            policy.pos("teams.yaml", "- {pool: h100-train, cards: ^16}"),
        ]
    ]


def test_time_slicing_replicas_are_capacity(policy):
    policy.replace(
        "pools.yaml",
        "  cardType: l40s-48gb\n",
        "  cardType: l40s-48gb\n  timeSlicing: {replicas: 2}\n",
    )
    policy.replace(
        "teams.yaml",
        "    - {pool: l40s-infer, cards: 8}\n  tiers: [training]",
        "    - {pool: l40s-infer, cards: 24}\n  tiers: [training]",
    )
    assert policy.spans("quota-exceeds-capacity") == []  # 16 cards x 2 replicas = 32
    policy.replace("teams.yaml", "l40s-infer, cards: 24}", "l40s-infer, cards: 25}")
    assert policy.spans("quota-exceeds-capacity") == [
        policy.pos("pools.yaml", '^- {names: "gpu-l40s')
    ]
    assert claims(policy) == [
        [
            policy.pos("teams.yaml", "l40s-infer, cards: ^25}"),
            policy.pos("teams.yaml", "    - {pool: l40s-infer, cards: ^8}\n    - {pool: h100"),
        ]
    ]


def test_no_capacity_finding_for_a_pool_whose_card_type_is_missing(policy):
    policy.replace("pools.yaml", "cardType: h100-80gb", "cardType: h100")
    ml_quota(policy, "pool: h100-train, cards: 99")
    assert policy.spans("unresolved-reference")
    assert policy.spans("quota-exceeds-capacity") == []


def test_quota_resource_unavailable(policy):
    with_mig(policy)
    ml_quota(policy, "pool: h100-train, cards: 4, mig: {2g.20gb: 2}")
    policy.replace(
        "teams.yaml",
        "    - {pool: l40s-infer, cards: 8}\n  tiers: [training]",
        "    - {pool: l40s-infer, mig: {1g.10gb: 1}}\n  tiers: [training]",
    )
    assert policy.spans("quota-resource-unavailable") == sorted(
        [
            policy.pos("teams.yaml", "mig: {^2g.20gb: 2}"),
            policy.pos("teams.yaml", "mig: {^1g.10gb: 1}"),
        ]
    )


def test_quota_resource_available(policy):
    with_mig(policy)
    ml_quota(policy, "pool: h100-train, cards: 4, mig: {1g.10gb: 2}")
    assert policy.spans("quota-resource-unavailable") == []


def test_quota_unit_conflict(policy):
    ml_quota(policy, "pool: h100-train, cards: 8, normalized: 23.2")
    assert policy.spans("quota-unit-conflict") == [
        policy.pos("teams.yaml", "cards: 8, ^normalized")
    ]


def test_quota_in_one_unit_passes(policy):
    ml_quota(policy, "pool: h100-train, normalized: 23.2")
    assert policy.spans("quota-unit-conflict") == []
    assert policy.spans("normalized-not-integral") == []


def test_normalized_not_integral(policy):
    ml_quota(policy, "pool: h100-train, normalized: 10")
    found = policy.findings("normalized-not-integral")
    assert [str(d.span) for d in found] == [policy.pos("teams.yaml", "normalized: ^10")]
    assert found[0].severity.label == "warning"


def test_quota_pool_duplicate(policy):
    ml_quota(policy, "pool: h100-train, cards: 4}\n    - {pool: h100-train, cards: 4")
    found = policy.findings("quota-pool-duplicate")
    assert [str(d.span) for d in found] == [
        policy.pos("teams.yaml", "cards: 4}\n    - {pool: ^h100-train")
    ]
    assert [str(s) for s in found[0].related] == [
        policy.pos("teams.yaml", "- {pool: ^h100-train, cards: 4}\n    - {pool: h100")
    ]


def test_each_pool_once_passes(policy):
    assert policy.spans("quota-pool-duplicate") == []
