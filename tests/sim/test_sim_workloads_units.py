"""The seeded workload generator (tests/harness/simcluster/workloads.py) without a cluster: enough
requests, deterministic, batches that never share a card type, and Jobs that read back as the
request they were made from."""

from __future__ import annotations

from collections import Counter

from harness.simcluster import policyfleet
from harness.simcluster.workloads import generate, rounds

from hetgitops.explain.workload import from_manifest

from .conftest import NOW, POLICIES


def test_generated_jobs_are_deterministic_and_read_back_as_their_requests() -> None:
    policy = policyfleet.load(POLICIES, now=NOW)
    first, again = generate(policy, 20, 300), generate(policy, 20, 300)
    assert [g.job for g in first] == [g.job for g in again]
    assert len({g.name for g in first}) == 300
    for g in first:
        (asked,) = g.workload.pod_sets
        (read,) = from_manifest(g.job).pod_sets
        assert (read.count, dict(read.requests), dict(read.node_selector)) == (
            asked.count,
            dict(asked.requests),
            dict(asked.node_selector),
        )
    kinds = Counter("mig" if g.request.mig else "whole" for g in first)
    assert kinds["mig"] > 15 and kinds["whole"] > 150
    assert len({g.request.team for g in first}) == len(policy.teams)


def test_a_batch_holds_one_workload_per_card_type() -> None:
    policy = policyfleet.load(POLICIES, now=NOW)
    generated = generate(policy, 20, 300)
    batches = rounds(generated)
    assert sum(len(b) for b in batches) == 300
    for batch in batches:
        cards = [g.card for g in batch]
        assert len(cards) == len(set(cards))
