"""A quota entry's `hostLimits` and `cpuPerCard` / `memoryPerCard` (issue 32 item 5): the
ClusterQueue, the Volcano and Koordinator twins, Reach and the pods' requests read them through
`plan.quota_plan`."""

from __future__ import annotations

from typing import Any

from small_policy import FLEET, TEAMS, build, delta, queue_resources

from hetgitops.compilers.volcano import compile_volcano
from hetgitops.model import quantities
from hetgitops.model.policy import Policy
from hetgitops.plan import quota_plan

ALPHA_L40S = "    - {pool: l40s-pool, cards: 8, borrowingLimit: 4, lendingLimit: 2}\n"
GPU_ONLY = (
    "    - {pool: l40s-pool, cards: 8, borrowingLimit: 4, lendingLimit: 2, hostLimits: false}\n"
)
RICH = (
    "    - {pool: l40s-pool, cards: 8, borrowingLimit: 4, cpuPerCard: 20, memoryPerCard: 200Gi}\n"
)


def _policy(entry: str, *, volcano: bool = False) -> Policy:
    assert TEAMS.count(ALPHA_L40S) == 1
    fleet = FLEET
    if volcano:
        fleet = FLEET.replace("targets: [core, kueue]", "targets: [core, kueue, volcano]")
        fleet = fleet.replace('kueue: "KUEUE"', 'kueue: "KUEUE", volcano: "1.15.1"')
    return build(fleet=fleet, teams=TEAMS.replace(ALPHA_L40S, entry))


def _l40s(policy: Policy, team: str = "alpha") -> dict[str, dict[str, Any]]:
    return queue_resources(policy, team, "l40s")


def test_by_default_the_limits_bind_cpu_and_memory_too() -> None:
    entries = _l40s(_policy(ALPHA_L40S))
    assert entries["nvidia.com/gpu"]["borrowingLimit"] == "4"
    assert entries["cpu"]["borrowingLimit"] == "48"  # 4 cards x the Fleet's 12 cpu
    assert entries["memory"]["lendingLimit"] == "192Gi"


def test_host_limits_false_limits_the_gpus_only() -> None:
    entries = _l40s(_policy(GPU_ONLY))
    assert entries["nvidia.com/gpu"]["borrowingLimit"] == "4"
    assert entries["nvidia.com/gpu"]["lendingLimit"] == "2"
    for host in ("cpu", "memory"):
        assert "borrowingLimit" not in entries[host] and "lendingLimit" not in entries[host]
    assert entries["cpu"]["nominalQuota"] == "96"


def test_host_limits_false_reaches_what_the_cohort_lends() -> None:
    """Reach (checks, routing, explain, Volcano capability) counts cpu without the limit:
    gamma lends nothing of l40s, so alpha reaches its own cpu either way; but the ceiling is
    the cohort's lending, not 4 cards' cpu."""
    limited, free = _policy(ALPHA_L40S), _policy(GPU_ONLY)
    pool = limited.pools["l40s-pool"]
    alpha = limited.teams["alpha"]
    assert quota_plan.reach(limited).limits["alpha", "l40s-pool"]["cpu"][1] == 48_000
    assert quota_plan.reach(free).limits["alpha", "l40s-pool"]["cpu"][1] is None
    assert quota_plan.reach(limited).most(alpha, pool, "nvidia.com/gpu") == 8


def test_volcano_keeps_no_cpu_back_under_gpu_only_limits() -> None:
    """Kueue lends all of an unlimited resource: Volcano's guarantee (what Kueue never lends)
    holds the 6 unlent cards and no cpu or memory."""
    queues = {
        m.name: m.obj for m in compile_volcano(_policy(GPU_ONLY, volcano=True)) if m.kind == "Queue"
    }
    guarantee = queues["alpha-l40s-pool"]["spec"]["guarantee"]["resource"]
    assert guarantee == {"nvidia.com/gpu": "6"}
    limited = {
        m.name: m.obj
        for m in compile_volcano(_policy(ALPHA_L40S, volcano=True))
        if m.kind == "Queue"
    }
    assert set(limited["alpha-l40s-pool"]["spec"]["guarantee"]["resource"]) == {
        "cpu",
        "memory",
        "nvidia.com/gpu",
    }


def test_a_pool_rate_overrides_the_team_rate_there_only() -> None:
    policy = _policy(RICH)
    entries = _l40s(policy)
    assert entries["cpu"]["nominalQuota"] == "160"
    assert entries["cpu"]["borrowingLimit"] == "80"  # the limit at the pool's rate
    assert entries["memory"]["nominalQuota"] == "1600Gi"
    by_name = queue_resources(policy, "alpha", "ascend")
    assert by_name["cpu"]["nominalQuota"] == "96"  # the Fleet's 12 per card elsewhere
    alpha = policy.teams["alpha"]
    assert quota_plan.per_card(policy, alpha, "l40s-pool") == ("20", "200Gi")
    assert quota_plan.per_card(policy, alpha, "ascend-pool") == ("12", "96Gi")
    assert quota_plan.per_card(policy, alpha) == ("12", "96Gi")


def test_a_pool_rate_reaches_the_volcano_twin() -> None:
    queues = {m.name: m.obj for m in compile_volcano(_policy(RICH, volcano=True))}
    deserved = queues["alpha-l40s-pool"]["spec"]["deserved"]
    assert quantities.value_of(deserved["cpu"]) == 160
    assert quantities.value_of(deserved["memory"]) == quantities.value_of("1600Gi")


DELTA = delta("    - {pool: l40s-pool, cards: 8}\n")


def test_explains_quota_model_borrows_cpu_as_the_limits_say() -> None:
    """explain's Kueue model (Available, from the plan's limits): delta lends its 96 cpu; under
    the card limit alpha gets 48 of them (4 cards' worth), under hostLimits: false all 96."""
    from hetgitops.explain.quotas import Quotas

    def available(entry: str) -> int:
        policy = build(extra=DELTA, teams=TEAMS.replace(ALPHA_L40S, entry))
        alpha = policy.teams["alpha"]
        plan = next(p for p in quota_plan.team_plan(policy, alpha) if p.pool.name == "l40s-pool")
        return Quotas(policy).available(alpha, plan, "cpu")

    assert available(ALPHA_L40S) == (96 + 48) * 1000
    assert available(GPU_ONLY) == (96 + 96) * 1000


MIG_PROFILES = delta(
    "    - pool: h100-pool\n      mig: {1g.10gb: 14}\n      borrowingLimit: 2\n"
    "      migBorrowingLimits: {1g.10gb: 5}\n      migLendingLimits: {1g.10gb: 3}\n"
)


def test_per_profile_limits_reach_the_cluster_queue() -> None:
    policy = build(extra=MIG_PROFILES)
    (plan,) = quota_plan.team_plan(policy, policy.teams["delta"])
    assert plan.borrowing["nvidia.com/mig-1g.10gb"] == 5  # not the entry's 2
    assert plan.lending["nvidia.com/mig-1g.10gb"] == 3  # not the pool's 50%
    entry = queue_resources(policy, "delta")["nvidia.com/mig-1g.10gb"]
    assert (entry["borrowingLimit"], entry["lendingLimit"]) == ("5", "3")
