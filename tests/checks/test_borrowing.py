"""Rules of the borrowing family: cohorts, limits, isolation, preemption."""

from __future__ import annotations

ML = "  cohort: ml\n  quotas:\n    - {pool: h100-train, cards: 8}\n"


def ml(policy, *, cohort: bool = True, quota: str = "cards: 8", extra: str = "") -> None:
    """Rewrite team ml's cohort line, its h100-train quota and add spec fields."""
    new = ("  cohort: ml\n" if cohort else "") + f"  quotas:\n    - {{pool: h100-train, {quota}}}\n"
    policy.replace("teams.yaml", ML, extra + new)


def test_borrowing_without_cohort(policy):
    ml(policy, cohort=False, quota="cards: 8, borrowingLimit: 4, lendingLimit: 2")
    assert policy.spans("borrowing-without-cohort") == sorted(
        [
            policy.pos("teams.yaml", "cards: 8, ^borrowingLimit"),
            policy.pos("teams.yaml", "borrowingLimit: 4, ^lendingLimit"),
        ]
    )


def test_borrowing_with_cohort_passes(policy):
    ml(policy, quota="cards: 8, borrowingLimit: 4, lendingLimit: 2")
    assert policy.spans("borrowing-without-cohort") == []


def test_lending_exceeds_nominal(policy):
    ml(policy, quota="cards: 8, lendingLimit: 9")
    assert policy.spans("lending-exceeds-nominal") == [policy.pos("teams.yaml", "lendingLimit: ^9")]


def test_lending_exceeds_normalized_nominal(policy):
    ml(policy, quota="normalized: 11.6, lendingLimit: 5")  # 11.6 / 2.9 = 4 cards
    assert policy.spans("lending-exceeds-nominal") == [policy.pos("teams.yaml", "lendingLimit: ^5")]


def test_lending_within_nominal_passes(policy):
    ml(policy, quota="cards: 8, lendingLimit: 8")
    assert policy.spans("lending-exceeds-nominal") == []


def test_borrowing_into_an_isolated_pool(policy):
    policy.replace(
        "pools.yaml",
        "  purpose: training\n",
        "  purpose: training\n  isolated: true\n  lending: {maxPercent: 50}\n",
    )
    ml(policy, quota="cards: 8, borrowingLimit: 4, lendingLimit: 2")
    assert policy.spans("borrowing-isolated-pool") == sorted(
        [
            policy.pos("pools.yaml", "lending: {maxPercent: ^50}"),
            policy.pos("teams.yaml", "borrowingLimit: ^4"),
            policy.pos("teams.yaml", "lendingLimit: ^2"),
        ]
    )


def test_isolated_pool_with_zero_limits_passes(policy):
    policy.replace("pools.yaml", "  purpose: training\n", "  purpose: training\n  isolated: true\n")
    ml(policy, quota="cards: 8, borrowingLimit: 0, lendingLimit: 0")
    assert policy.spans("borrowing-isolated-pool") == []


def test_borrow_within_cohort_needs_reclaim(policy):
    ml(policy, extra="  preemption:\n    borrowWithinCohort: {policy: LowerPriority}\n")
    assert policy.spans("preemption-invalid") == [
        policy.pos("teams.yaml", "{policy: ^LowerPriority}")
    ]


def test_borrow_within_cohort_needs_a_cohort(policy):
    ml(
        policy,
        cohort=False,
        extra="  preemption:\n    reclaimWithinCohort: Any\n"
        "    borrowWithinCohort: {policy: LowerPriority}\n",
    )
    assert policy.spans("preemption-invalid") == [
        policy.pos("teams.yaml", "{policy: ^LowerPriority}")
    ]


def test_borrow_within_cohort_with_reclaim_passes(policy):
    ml(
        policy,
        extra="  preemption:\n    reclaimWithinCohort: Any\n"
        "    borrowWithinCohort: {policy: LowerPriority}\n",
    )
    assert policy.spans("preemption-invalid") == []


def test_mig_only_lending_exceeds_its_smallest_mig_count(policy):
    # a MIG-only quota's limits apply to each MIG resource it claims
    ml(policy, quota="mig: {1g.10gb: 14, 2g.20gb: 6}, lendingLimit: 7")
    assert policy.spans("lending-exceeds-nominal") == [policy.pos("teams.yaml", "lendingLimit: ^7")]


def test_mig_only_lending_within_each_mig_count_passes(policy):
    ml(policy, quota="mig: {1g.10gb: 14, 2g.20gb: 6}, lendingLimit: 6")
    assert policy.spans("lending-exceeds-nominal") == []
