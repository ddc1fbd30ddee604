"""Rules of the grants family: time-boxed quota ending, ended, with bad dates or units."""

from __future__ import annotations

import datetime as dt

ML_H100 = "    - {pool: h100-train, cards: 8}\n    - {pool: l40s-infer, cards: 8}\n"
SERVING_H100 = "    - {pool: h100-train, cards: 8}\n  tiers: [serving]"


def grant(policy, fields: str = "cards: 8, from: 2026-11-01, until: 2026-12-31") -> None:
    """ml gets `fields` on h100-train; serving gives its h100 quota up so the grant fits."""
    policy.replace(
        "teams.yaml",
        ML_H100,
        "    - pool: h100-train\n      cards: 8\n      grants:\n"
        f"        - {{{fields}}}\n    - {{pool: l40s-infer, cards: 8}}\n",
    )
    policy.replace("teams.yaml", SERVING_H100, "  tiers: [serving]")


def test_grant_in_force_is_quiet(policy):
    grant(policy)
    found = [d for d in policy.diagnostics() if d.severity.label in ("error", "warning")]
    assert [d.rule for d in found if d.rule.startswith("quota-grant")] == []
    assert not [d for d in found if d.severity.label == "error"], found


def test_grant_ending_warns_seven_days_before(policy):
    grant(policy)
    at = policy.pos("teams.yaml", "until: ^2026-12-31")
    assert policy.spans("quota-grant-ending", now=dt.date(2026, 12, 24)) == [at]
    assert policy.spans("quota-grant-ending", now=dt.date(2026, 12, 23)) == []
    assert policy.spans("quota-grant-ending", now=dt.date(2026, 12, 31)) == [at]
    assert policy.spans("quota-grant-ended", now=dt.date(2026, 12, 31)) == []


def test_grant_ended_fails(policy):
    grant(policy)
    at = policy.pos("teams.yaml", "until: ^2026-12-31")
    assert policy.spans("quota-grant-ended", now=dt.date(2027, 1, 1)) == [at]
    assert policy.spans("quota-grant-ending", now=dt.date(2027, 1, 1)) == []


def test_grant_ending_says_the_drop(policy):
    grant(policy)
    (found,) = policy.findings("quota-grant-ending", now=dt.date(2026, 12, 30))
    assert "2027-01-01" in found.message and "16 -> 8" in found.message


def test_grant_dates_reversed(policy):
    grant(policy, "cards: 8, from: 2026-12-10, until: 2026-12-01")
    assert policy.spans("quota-grant-dates") == [policy.pos("teams.yaml", "until: ^2026-12-01")]


def test_grant_on_normalized_entry(policy):
    policy.replace(
        "teams.yaml",
        ML_H100,
        "    - pool: h100-train\n      normalized: 23.2\n      grants:\n"
        "        - {cards: 8, from: 2026-11-01, until: 2026-12-31}\n"
        "    - {pool: l40s-infer, cards: 8}\n",
    )
    assert policy.spans("quota-grant-units") == [policy.pos("teams.yaml", "{cards: ^8, from")]


def test_grant_counts_against_capacity_only_while_in_force(policy):
    """serving keeps its 8 H100: ml's 8 + 8 granted + 8 exceed the 16 cards while in force."""
    policy.replace(
        "teams.yaml",
        ML_H100,
        "    - pool: h100-train\n      cards: 8\n      grants:\n"
        "        - {cards: 8, from: 2026-12-05, until: 2026-12-31}\n"
        "    - {pool: l40s-infer, cards: 8}\n",
    )
    assert policy.spans("quota-exceeds-capacity", now=dt.date(2026, 12, 4)) == []
    assert policy.spans("quota-exceeds-capacity", now=dt.date(2026, 12, 5)) != []
    assert policy.spans("quota-exceeds-capacity", now=dt.date(2027, 1, 1)) == []
