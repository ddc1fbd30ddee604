"""Rules of the lifecycle family: pool expiry and card lifecycle stages."""

from __future__ import annotations

import datetime as dt

H100 = "  cardType: h100-80gb\n"


def expires(policy, date: str) -> None:
    policy.replace("pools.yaml", H100, H100 + f"  expires: {date}\n")


def test_pool_expired(policy):
    expires(policy, "2026-11-30")
    assert policy.spans("pool-expired") == [policy.pos("pools.yaml", "expires: ^2026-11-30")]
    assert policy.spans("pool-expiring") == []


def test_now_decides(policy):
    expires(policy, "2026-11-30")
    assert policy.spans("pool-expired", now=dt.date(2026, 11, 30)) == []


def test_pool_expiring(policy):
    expires(policy, "2026-12-15")
    found = policy.findings("pool-expiring")
    assert [str(d.span) for d in found] == [policy.pos("pools.yaml", "expires: ^2026-12-15")]
    assert found[0].severity.label == "warning"
    assert policy.spans("pool-expired") == []


def test_pool_expiring_today_is_not_expired(policy):
    expires(policy, "2026-12-01")
    assert policy.spans("pool-expiring") == [policy.pos("pools.yaml", "expires: ^2026-12-01")]
    assert policy.spans("pool-expired") == []


def test_warning_window_comes_from_the_fleet(policy):
    expires(policy, "2026-12-15")
    policy.replace("fleet.yaml", "  cohorts:", "  expiryWarningDays: 10\n  cohorts:")
    assert policy.spans("pool-expiring") == []


def test_far_expiry_passes(policy):
    expires(policy, "2027-03-31")
    assert policy.spans("pool-expiring") == []
    assert policy.spans("pool-expired") == []


def test_lifecycle_not_allowed(policy):
    policy.replace(
        "cards.yaml",
        "  lifecycle: production\n  images: {pytorch: nvcr.io/nvidia/pytorch:25.08-py3}\n",
        "  lifecycle: pilot\n  images: {pytorch: nvcr.io/nvidia/pytorch:25.08-py3}\n",
    )
    policy.replace(
        "teams.yaml",
        "  tiers: [training]\n",
        "  tiers: [training]\n  lifecycleStages: [production, pilot]\n",
    )
    # ml volunteered for pilot cards; serving keeps the Fleet default (production, deprecated).
    assert policy.spans("lifecycle-not-allowed") == [
        policy.pos("teams.yaml", "- {pool: ^l40s-infer, cards: 8}\n    - {pool: h100-train")
    ]


def test_fleet_default_stages_allow_deprecated(policy):
    policy.replace(
        "cards.yaml",
        "  lifecycle: production\n  images: {pytorch: nvcr.io/nvidia/pytorch:25.08-py3}\n",
        "  lifecycle: deprecated\n  images: {pytorch: nvcr.io/nvidia/pytorch:25.08-py3}\n",
    )
    assert policy.spans("lifecycle-not-allowed") == []


def test_card_retired_in_use(policy):
    policy.replace(
        "cards.yaml",
        "  lifecycle: production\n  images: {pytorch: nvcr.io/nvidia/pytorch:25.08-py3}\n",
        "  lifecycle: retired\n  images: {pytorch: nvcr.io/nvidia/pytorch:25.08-py3}\n",
    )
    assert policy.spans("card-retired-in-use") == [policy.pos("pools.yaml", "cardType: ^l40s-48gb")]
    assert policy.spans("lifecycle-not-allowed") == []


def test_retired_card_without_pool_passes(policy):
    policy.add(
        "cards.yaml",
        "kind: CardType\nmetadata:\n  name: v100\nspec:\n  vendor: nvidia\n"
        "  model: V100\n  resourceName: nvidia.com/gpu\n  memoryGiB: 32\n  lifecycle: retired\n",
    )
    assert policy.spans("card-retired-in-use") == []
