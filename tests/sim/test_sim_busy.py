"""The busy simulated fleet (tests/harness/simcluster/busy.py): the bundled fleet filled from
`hetgitops jobs` output and hand-written work of every kind, admitted by the real Kueue and
Volcano and bound by the real schedulers. Asserts the load the day-2 tests run under: every
pool and accelerator resource at least 70 % taken, some teams borrowing, some workloads
pending, nothing admitted beyond what the nodes hold, no admitted pod without a node."""

from __future__ import annotations

from collections import Counter

import pytest
from harness.simcluster import busy

pytestmark = pytest.mark.sim

TARGET = 0.70


def test_busy_fleet_reaches_its_target_load(busy_fleet: busy.BusyFleet) -> None:
    load = busy_fleet.baseline
    # Every pool of the bundled fleet, every accelerator resource its nodes advertise.
    pools = {pool for pool, _ in load.capacity}
    assert pools == set(busy_fleet.policy.pools), sorted(pools)
    low = {k: round(v, 2) for k, v in load.utilisation().items() if v < TARGET}
    assert not low, low
    assert len(load.borrowing) >= 2, load.borrowing
    pending = load.pending()
    assert len(pending) >= 2, pending
    # What is pending is what the plan submitted to pend, nothing else.
    planned = sum(f.copies for f in busy.BUNDLED_PLAN if f.pending)
    assert len(pending) == planned, pending
    assert not load.over_capacity(), load.over_capacity()
    assert not load.unbound(), load.unbound()
    assert not load.stranded(), load.stranded()


def test_busy_fleet_runs_every_kind(busy_fleet: busy.BusyFleet) -> None:
    """Each kind the fleet submits is admitted by Kueue (Workload owner kinds) or bound by the
    Volcano scheduler; the kinds with a controller in the sim have Running pods."""
    load = busy_fleet.baseline
    owners = Counter(
        w["metadata"]["ownerReferences"][0]["kind"]
        for w in load.workloads.values()
        if busy.admitted(w) and w["metadata"].get("ownerReferences")
    )
    for kind in ("Job", "JobSet", "PyTorchJob", "LeaderWorkerSet", "Pod"):
        assert owners[kind] > 0, owners
    running = Counter(
        (p["spec"].get("schedulerName", "default-scheduler"), p["metadata"]["namespace"])
        for p in load.live_pods.values()
        if p["status"].get("phase") == "Running"
    )
    assert running["volcano", "pretrain"] >= 5, running  # the A100 gang + the Ascend job
    assert running["default-scheduler", "serving"] >= 12 + 44 + 18 + 16, running
