"""`hetgitops.plan.quota_plan` and `capacity.unit_weight`: limits in a quota's own units, and the
card-equivalents cpu/memory quotas and budgets are counted in."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from small_policy import build, delta, queue_resources

from hetgitops.checks._common import quota_uses
from hetgitops.checks.budget import monthly_cost
from hetgitops.model.policy import Policy
from hetgitops.plan import capacity
from hetgitops.plan.quota_plan import team_plan

Load = Callable[[str], Policy]

MIG_ONLY = delta(
    "    - {pool: h100-pool, mig: {1g.10gb: 28}, borrowingLimit: 2, lendingLimit: 3}\n"
)


def test_mig_only_quota_limits_bound_its_mig_resources() -> None:
    policy = build(extra=MIG_ONLY)
    (plan,) = team_plan(policy, policy.teams["delta"])
    assert plan.nominal["nvidia.com/mig-1g.10gb"] == 28
    assert plan.borrowing["nvidia.com/mig-1g.10gb"] == 2
    assert plan.lending["nvidia.com/mig-1g.10gb"] == 3
    # the card resource it holds no quota of stays as before: unbounded borrowing, lending by
    # the pool's maxPercent (50% of 0)
    assert plan.nominal["nvidia.com/gpu"] == 0
    assert plan.borrowing["nvidia.com/gpu"] is None
    assert plan.lending["nvidia.com/gpu"] == 0


def test_mig_only_limits_reach_the_cluster_queue() -> None:
    by_name = queue_resources(build(extra=MIG_ONLY), "delta")
    mig = by_name["nvidia.com/mig-1g.10gb"]
    assert (mig["nominalQuota"], mig["borrowingLimit"], mig["lendingLimit"]) == ("28", "2", "3")
    assert "borrowingLimit" not in by_name["nvidia.com/gpu"]
    # 28 x 1/7 = 4 cards x 12 cpu = 48; lending 3/7 card x 12 = 5.14 -> 6 (rounded up);
    # borrowing unbounded, as the card resource is
    cpu = by_name["cpu"]
    assert (cpu["nominalQuota"], cpu["lendingLimit"]) == ("48", "6")
    assert "borrowingLimit" not in cpu
    assert by_name["memory"]["nominalQuota"] == "384Gi"  # 4 x 96Gi


def test_card_quota_limits_bound_the_card_resource_only() -> None:
    policy = build()
    plans = {p.pool.name: p for p in team_plan(policy, policy.teams["alpha"])}
    l40s = plans["l40s-pool"]
    assert (l40s.borrowing["nvidia.com/gpu"], l40s.lending["nvidia.com/gpu"]) == (4, 2)


def test_unit_weight_whole_card_mig_instance_and_replica() -> None:
    policy = build()
    pool = policy.pools["h100-pool"]
    card = policy.card_type_of(pool)
    assert card is not None
    weight = capacity.unit_weight
    assert weight(pool, card, "nvidia.com/gpu", policy.fleet) == 1
    assert weight(pool, card, "nvidia.com/mig-1g.10gb", policy.fleet) == Fraction(1, 7)
    assert weight(pool, card, "nvidia.com/mig-3g.40gb", policy.fleet) == Fraction(3, 7)
    assert weight(pool, card, "nvidia.com/mig-7g.80gb", policy.fleet) == 1


def test_unit_weight_of_time_sliced_replicas(scenario_policy: Load) -> None:
    policy = scenario_policy("time-slicing")
    for name, replicas in (("notebooks", 4), ("l40s-plain", 2), ("l40s-mps", 2)):
        pool = policy.pools[name]
        card = policy.card_type_of(pool)
        assert card is not None
        main = capacity.main_resource(pool, card)
        assert capacity.unit_weight(pool, card, main, policy.fleet) == Fraction(1, replicas)


def test_budget_and_quota_count_the_same_cards(scenario_policy: Load) -> None:
    policy = scenario_policy("bundled")
    for use in quota_uses(policy):
        plan = next(p for p in team_plan(policy, use.team) if p.pool.name == use.pool.name)
        cards = plan.cards(plan.nominal)
        assert cards is not None
        hourly = use.card.cost_per_hour or 0.0
        expected = float(cards) * hourly * capacity.HOURS_PER_MONTH
        assert abs(monthly_cost(use, policy.fleet) - expected) < 1e-6, use.team.name
