"""The lanes of the preemption differential (tests/sim/preempt_lanes.py), without a cluster:
each lane is one pool the model answers for, and no Job of one lane can take another's quota
(the reason they run at once)."""

from __future__ import annotations

import random

import pytest
from harness.simcluster import policyfleet

from hetgitops.explain.preemption_report import preempt
from hetgitops.model.policy import Policy

from .conftest import NOW, POLICIES
from .preempt_lanes import LANES, Lane, fillers, probe, workload


@pytest.fixture(scope="module")
def policy() -> Policy:
    return policyfleet.load(POLICIES, now=NOW)


def test_each_lane_is_the_one_pool_of_its_card_type(policy: Policy) -> None:
    # One ResourceFlavor per lane: Kueue's quota and candidates are per flavor-resource.
    assert len({lane.pool for lane in LANES}) == len(LANES)
    for lane in LANES:
        same_card = [p.name for p in policy.pools.values() if p.card_type == lane.card]
        assert same_card == [lane.pool], lane


def _asked(lane: Lane) -> list[tuple[str, int, str]]:
    fill = [(t, size, tier) for t, tiers in lane.teams for tier in tiers for size in lane.sizes]
    return fill + [(t, size, tier) for t, tier in lane.probes for size in lane.probe_sizes]


@pytest.mark.parametrize("lane", LANES, ids=[lane.pool for lane in LANES])
def test_every_job_of_a_lane_is_answered_in_its_pool(policy: Policy, lane: Lane) -> None:
    for team, units, tier in _asked(lane):
        said = preempt(policy, workload(policy, lane, team, units, tier), [])
        # On an empty cluster: admitted, or more than the queue can ever hold (a100-transition's
        # 16-card probe of pretraining asks 2Ti memory): never preemption, never another pool.
        assert said.pool == lane.pool, (team, units, tier, said.why)
        assert said.outcome in ("fits", "none") and not said.victims, (team, units, tier)


def test_probes_outrank_some_filler_of_their_lane(policy: Policy) -> None:
    # A probe of "higher priority": above the dev tier every lane fills with.
    tiers = {t.name: t.value for t in policy.tiers.values()}
    for lane in LANES:
        lowest = min(tiers[tier] for _, fill in lane.teams for tier in fill)
        assert all(tiers[tier] > lowest for _, tier in lane.probes), lane


def test_the_draw_is_seeded() -> None:
    policy = policyfleet.load(POLICIES, now=NOW)
    drawn = [
        [[j["metadata"]["name"] for j in fillers(policy, lane, random.Random(s), 0)]
         + [str(probe(lane, random.Random(s)))] for lane in LANES]
        for s in (37, 37)
    ]  # fmt: skip
    assert drawn[0] == drawn[1]
