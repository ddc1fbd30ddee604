"""Rules of the quota-entry family: `hostLimits` and a pool's `cpuPerCard` / `memoryPerCard`
where they change nothing; and the host-quota rules reading a pool's own rate."""

from __future__ import annotations

ML_H100 = "    - {pool: h100-train, cards: 8}\n    - {pool: l40s-infer, cards: 8}\n"


def _ml(policy, entry: str) -> None:
    policy.replace("teams.yaml", ML_H100, f"    - {entry}\n    - {{pool: l40s-infer, cards: 8}}\n")


def test_gpu_only_limits_on_a_limited_entry_are_quiet(policy):
    _ml(policy, "{pool: h100-train, cards: 8, borrowingLimit: 4, hostLimits: false}")
    assert policy.spans("quota-host-limits-unused") == []


def test_gpu_only_limits_without_a_limit_warn_at_the_field(policy):
    _ml(policy, "{pool: h100-train, cards: 8, hostLimits: false}")
    at = policy.pos("teams.yaml", "cards: 8, ^hostLimits")
    assert policy.spans("quota-host-limits-unused") == [at]


def test_gpu_only_limits_without_a_cohort_warn(policy):
    _ml(policy, "{pool: h100-train, cards: 8, borrowingLimit: 4, hostLimits: false}")
    policy.replace("teams.yaml", "  namespaces: [ml]\n  cohort: ml\n", "  namespaces: [ml]\n")
    at = policy.pos("teams.yaml", "borrowingLimit: 4, ^hostLimits")
    assert at in policy.spans("quota-host-limits-unused")


def test_a_pool_rate_equal_to_the_teams_warns(policy):
    """The Fleet's default is 8 cpu a card (the team says none)."""
    _ml(policy, '{pool: h100-train, cards: 8, cpuPerCard: "8", memoryPerCard: 200Gi}')
    at = policy.pos("teams.yaml", 'cards: 8, ^cpuPerCard: "8"')
    assert policy.spans("quota-host-rate-unused") == [at]


def test_a_pool_rate_on_a_second_entry_of_the_pool_warns(policy):
    policy.replace(
        "teams.yaml",
        ML_H100,
        "    - {pool: h100-train, cards: 8}\n    - {pool: l40s-infer, cards: 8}\n"
        "    - {pool: h100-train, cards: 0, cpuPerCard: 20}\n",
    )
    at = policy.pos("teams.yaml", "cards: 0, ^cpuPerCard")
    assert at in policy.spans("quota-host-rate-unused")


def test_a_pool_rate_too_low_for_the_profile_is_the_host_share_warning(policy):
    """profile-host-share compares the pods' ask with the pool's own rate: 1 cpu a card in
    h100-train holds less than the 4 the profile's pods ask (the team's 8 hold them)."""
    policy.replace("profiles.yaml", "  image: pytorch\n", "  image: pytorch\n  cpuPerCard: 4\n")
    assert policy.spans("profile-host-share") == []
    _ml(policy, "{pool: h100-train, cards: 8, cpuPerCard: 1}")
    assert policy.spans("profile-host-share") != []
    found = policy.findings("profile-host-share")
    assert all("pool 'h100-train'" in d.message for d in found), found


def test_a_profile_limit_on_a_profile_the_entry_does_not_claim_is_an_error(policy):
    _ml(policy, "{pool: h100-train, mig: {1g.10gb: 7}, migBorrowingLimits: {3g.40gb: 2}}")
    at = policy.pos("teams.yaml", "migBorrowingLimits: {^3g.40gb")
    assert policy.spans("quota-mig-limit-unclaimed") == [at]


def test_a_profile_limit_on_a_claimed_profile_is_quiet(policy):
    _ml(policy, "{pool: h100-train, mig: {1g.10gb: 7}, migBorrowingLimits: {1g.10gb: 2}}")
    assert policy.spans("quota-mig-limit-unclaimed") == []
    assert policy.spans("lending-exceeds-nominal") == []


def test_a_profile_lending_more_than_its_count_is_refused(policy):
    _ml(policy, "{pool: h100-train, mig: {1g.10gb: 7}, migLendingLimits: {1g.10gb: 9}}")
    at = policy.pos("teams.yaml", "migLendingLimits: {1g.10gb: ^9}")
    assert policy.spans("lending-exceeds-nominal") == [at]
