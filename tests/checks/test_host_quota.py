"""Rules of the host-quota family: pod cpu/memory against what the team's queue holds."""

from __future__ import annotations

# Team ml: 8 H100 of its own + 8 it may borrow from serving (cohort ml), at the default
# 8 cpu / 64Gi per card; profile `train` needs a gang of 2 x 8 cards.
TRAIN_IMAGE = "  image: pytorch\n"


def ask(policy, amounts: str) -> None:
    policy.replace("profiles.yaml", TRAIN_IMAGE, TRAIN_IMAGE + amounts)


def test_host_share_warns_at_the_profile_amount(policy):
    ask(policy, "  cpuPerCard: 16\n")  # 16 a card against the queue's 8
    found = policy.findings("profile-host-share")
    assert [str(d.span) for d in found] == [policy.pos("profiles.yaml", "cpuPerCard: ^16")]
    assert "about 50%" in found[0].message


def test_host_share_counts_a_time_sliced_replica_as_a_share_of_a_card(policy):
    policy.replace(
        "pools.yaml",
        "  cardType: h100-80gb\n",
        "  cardType: h100-80gb\n  timeSlicing: {replicas: 4}\n",
    )
    policy.replace("profiles.yaml", "    cardsPerNode: 8\n    gang: 2\n", "    cardsPerNode: 1\n")
    ask(policy, "  cpuPerCard: 4\n  memoryPerCard: 16Gi\n")  # a replica: 8 / 4 = 2 cpu, 16Gi
    assert policy.spans("profile-host-share") == [policy.pos("profiles.yaml", "cpuPerCard: ^4")]


def test_host_share_of_an_unwritten_amount_points_at_requirements(policy):
    # Pods that write no amounts ask the team's 8 cpu / 64Gi per card, for one replica of 1/4.
    policy.replace(
        "pools.yaml",
        "  cardType: h100-80gb\n",
        "  cardType: h100-80gb\n  timeSlicing: {replicas: 4}\n",
    )
    policy.replace("profiles.yaml", "    cardsPerNode: 8\n    gang: 2\n", "    cardsPerNode: 1\n")
    found = policy.findings("profile-host-share")
    assert sorted((d.message.split()[5], str(d.span)) for d in found) == [
        ("cpu", policy.pos("profiles.yaml", "  ^requirements:")),
        ("memory", policy.pos("profiles.yaml", "  ^requirements:")),
    ]


def test_host_share_passes_within_the_share(policy):
    ask(policy, "  cpuPerCard: 8\n  memoryPerCard: 64Gi\n")
    assert policy.spans("profile-host-share") == []


def test_host_quota_error_when_the_gang_can_never_get_its_memory(policy):
    ask(policy, "  memoryPerCard: 200Gi\n")  # 16 x 200Gi = 3200Gi; reach 16 x 64Gi = 1024Gi
    found = policy.findings("profile-host-quota")
    assert [str(d.span) for d in found] == [policy.pos("profiles.yaml", "memoryPerCard: ^200Gi")]
    assert "3200Gi" in found[0].message and "1Ti" in found[0].message


def test_host_quota_passes_when_borrowing_covers_the_gang(policy):
    ask(policy, "  memoryPerCard: 64Gi\n")
    assert policy.spans("profile-host-quota") == []


def test_host_quota_counts_borrowed_memory_at_the_lenders_rate(policy):
    # ml holds 8 H100 at 96Gi a card and must borrow serving's 8, which come with serving's
    # 64Gi a card: Kueue reaches 8 x 96Gi + 8 x 64Gi = 1280Gi, not 16 x 96Gi = 1536Gi, and pends
    # the gang's 16 x 96Gi ("insufficient quota for memory"; the simulated fleet confirms it).
    policy.replace(
        "teams.yaml", "  namespaces: [ml]\n", "  namespaces: [ml]\n  memoryPerCard: 96Gi\n"
    )
    found = policy.findings("profile-host-quota")
    assert [str(d.span) for d in found] == [policy.pos("profiles.yaml", "  ^requirements:")]
    assert "1536Gi" in found[0].message and "1280Gi" in found[0].message
    assert [str(s) for s in found[0].related] == [
        policy.pos("teams.yaml", "    - ^{pool: h100-train, cards: 8}\n    - {pool: l40s"),
        policy.pos("teams.yaml", "  memoryPerCard: ^96Gi"),
    ]


def test_host_quota_passes_when_the_lenders_rate_covers_the_gang(policy):
    ask(policy, "  memoryPerCard: 80Gi\n")  # 16 x 80Gi = 1280Gi: exactly what ml reaches
    policy.replace(
        "teams.yaml", "  namespaces: [ml]\n", "  namespaces: [ml]\n  memoryPerCard: 96Gi\n"
    )
    assert policy.spans("profile-host-quota") == []
