"""Rule kueue-volcano-share-pool: Kueue's topology-aware admission and Volcano on one pool."""

from __future__ import annotations

TOPOLOGY = "  topology:\n    name: fleet-topology\n    levels: [zone, rack, hostname]\n"
GANG = """\
kind: WorkloadProfile
metadata:
  name: gang
spec:
  framework: volcano-job
  tier: training
  requirements:
    cardsPerNode: 8
    gang: 1
    purposes: [training]
  image: pytorch
"""


def _both(policy, *, topology: bool = True) -> None:
    if topology:
        policy.replace("fleet.yaml", "  cohorts:\n", TOPOLOGY + "  cohorts:\n")
    policy.add("profiles.yaml", GANG)


def test_a_pool_both_schedulers_place_on_under_tas_is_named_at_the_pool(policy):
    _both(policy)
    assert policy.spans("kueue-volcano-share-pool") == [
        policy.pos("pools.yaml", "  name: ^h100-train")
    ]
    (found,) = policy.findings("kueue-volcano-share-pool")
    assert found.severity.name == "WARNING"
    assert "Kueue (topology-aware: profile(s) train) and Volcano (profile(s) gang)" in (
        found.message
    )
    assert "one scheduler" in found.hint and "split its nodes" in found.hint
    notes = [r.message for r in found.related]
    assert any("'gang' queues its Volcano Job" in n for n in notes)
    assert any("'train' is admitted by Kueue" in n for n in notes)
    assert any("topology-bound" in n for n in notes)


def test_without_a_topology_kube_scheduler_places_both_and_nothing_fires(policy):
    _both(policy, topology=False)
    assert policy.spans("kueue-volcano-share-pool") == []


def test_one_scheduler_per_pool_passes(policy):
    policy.replace("fleet.yaml", "  cohorts:\n", TOPOLOGY + "  cohorts:\n")
    assert policy.spans("kueue-volcano-share-pool") == []
    policy.replace("profiles.yaml", "framework: job", "framework: volcano-job")
    assert policy.spans("kueue-volcano-share-pool") == []
