"""Rules of the budget family: quota x cost against the monthly budget."""

from __future__ import annotations

# Team ml: 8 H100 at 3.0 + 8 L40S at 1.0 per card-hour, 730 hours = 23,360 a month.


def test_budget_exceeded(policy):
    policy.replace("teams.yaml", "budget: {monthly: 100000}", "budget: {monthly: 20000}")
    found = policy.findings("budget-exceeded")
    assert [str(d.span) for d in found] == [policy.pos("teams.yaml", "budget: {monthly: ^20000}")]
    assert "23,360.00" in found[0].message


def test_budget_covers_quota(policy):
    policy.replace("teams.yaml", "budget: {monthly: 100000}", "budget: {monthly: 23360}")
    assert policy.spans("budget-exceeded") == []


def test_time_sliced_replicas_cost_a_fraction_of_a_card(policy):
    policy.replace(
        "pools.yaml",
        "  cardType: l40s-48gb\n",
        "  cardType: l40s-48gb\n  timeSlicing: {replicas: 4}\n",
    )
    policy.replace("teams.yaml", "budget: {monthly: 100000}", "budget: {monthly: 20000}")
    assert policy.spans("budget-exceeded") == []  # 8 replicas are 2 cards: 17,520 + 1,460


def test_cost_missing(policy):
    policy.replace("cards.yaml", "  cost: {perCardHour: 1.0}\n", "")
    found = policy.findings("cost-missing")
    assert [str(d.span) for d in found] == [
        policy.pos("teams.yaml", "- {pool: ^l40s-infer, cards: 8}\n  tiers: [training]")
    ]
    assert found[0].severity.label == "warning"


def test_cost_missing_without_budget_passes(policy):
    policy.replace("cards.yaml", "  cost: {perCardHour: 1.0}\n", "")
    policy.replace("teams.yaml", "  budget: {monthly: 100000}\n", "")
    assert policy.spans("cost-missing") == []


def test_cost_currency_mismatch(policy):
    policy.replace(
        "cards.yaml", "cost: {perCardHour: 1.0}", "cost: {perCardHour: 1.0, currency: EUR}"
    )
    assert policy.spans("cost-currency-mismatch") == [
        policy.pos("teams.yaml", "- {pool: ^l40s-infer, cards: 8}\n  tiers: [training]")
    ]


def test_same_currency_passes(policy):
    policy.replace(
        "cards.yaml", "cost: {perCardHour: 1.0}", "cost: {perCardHour: 1.0, currency: USD}"
    )
    policy.replace(
        "teams.yaml", "budget: {monthly: 100000}", "budget: {monthly: 100000, currency: USD}"
    )
    assert policy.spans("cost-currency-mismatch") == []


def test_mig_instances_cost_their_share_of_a_card(policy):
    # GPUs 0-1 of both H100 nodes carved 7 x 1g.10gb: 28 instances, 14 whole cards left.
    policy.replace(
        "pools.yaml",
        "  cardType: h100-80gb\n",
        "  cardType: h100-80gb\n  mig:\n    devices:\n"
        "      - gpus: [0, 1]\n        profiles: {1g.10gb: 7}\n",
    )
    policy.replace(
        "teams.yaml",
        "- {pool: h100-train, cards: 8}\n    - {pool: l40s-infer",
        "- {pool: h100-train, cards: 4, mig: {1g.10gb: 14}}\n    - {pool: l40s-infer",
    )
    # 4 cards + 14/7 cards of H100 = 6 x 3.0 x 730 = 13,140; 8 L40S = 5,840; total 18,980.
    policy.replace("teams.yaml", "budget: {monthly: 100000}", "budget: {monthly: 18979}")
    found = policy.findings("budget-exceeded")
    assert len(found) == 1 and "18,980.00" in found[0].message
    policy.replace("teams.yaml", "budget: {monthly: 18979}", "budget: {monthly: 18980}")
    assert policy.spans("budget-exceeded") == []
