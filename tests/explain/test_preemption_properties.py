"""Properties of the preemption model over generated cohort trees, queues and admitted work:
it leaves the snapshot as it found it; victims free enough for the probe to fit, none can be
spared alone, each is one its ClusterQueue's settings allow, with the reason Kueue writes."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetgitops.explain.preemption import (
    ANY,
    IN_CLUSTER_QUEUE,
    LOWER,
    LOWER_OR_NEWER,
    NEVER,
    CohortSpec,
    Preemptor,
    QueueSpec,
    Rules,
    Running,
    Snapshot,
    satisfies,
)
from hetgitops.explain.preemption_answer import FITS, PREEMPT, answer
from hetgitops.explain.preemption_tree import FR, Quota, cq_available, potential_available

GPU: FR = ("pool", "gpu")
COHORTS = [CohortSpec("root"), CohortSpec("left", "root"), CohortSpec("right", "root")]
POLICIES = st.sampled_from([NEVER, LOWER, LOWER_OR_NEWER, ANY])


@st.composite
def queue(draw: Any, name: str) -> QueueSpec:
    nominal = draw(st.integers(0, 10))
    lending = draw(st.one_of(st.none(), st.integers(0, nominal)))
    borrowing = draw(st.one_of(st.none(), st.integers(0, 10)))
    cohort = draw(st.sampled_from([None, "root", "left", "right"]))
    rules = Rules(
        draw(POLICIES),
        draw(POLICIES),
        draw(st.sampled_from([NEVER, LOWER])),
        draw(st.one_of(st.none(), st.integers(-2, 2))),
    )
    if cohort is None:
        borrowing, lending = None, None  # Kueue's webhook: no limits without a cohort
    return QueueSpec(name, cohort, {GPU: Quota(nominal, borrowing, lending)}, rules)


@st.composite
def scene(draw: Any) -> tuple[Snapshot, Running]:
    names = [f"q{i}" for i in range(draw(st.integers(1, 4)))]
    queues = [draw(queue(n)) for n in names]
    snap = Snapshot(queues, COHORTS, [])
    for i in range(draw(st.integers(0, 10))):
        cq = draw(st.sampled_from(names))
        wl = Running(
            f"w{i}",
            cq,
            draw(st.integers(-2, 2)),
            {GPU: draw(st.integers(1, 5))},
            admitted=draw(st.integers(0, 5)),
            created=draw(st.integers(0, 5)),
        )
        if wl.usage[GPU] <= cq_available(snap.queue(cq), GPU):  # Kueue admitted it
            snap.add(wl)
    probe = Running(
        "probe",
        draw(st.sampled_from(names)),
        draw(st.integers(-2, 3)),
        {GPU: draw(st.integers(1, 8))},
        admitted=99,
        created=draw(st.integers(0, 6)),
    )
    return snap, probe


def _usage(snap: Snapshot) -> dict[Any, dict[FR, int]]:
    return {k: dict(n.usage) for k, n in snap.nodes.items()}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scene())
def test_victims_free_enough_none_is_spare_and_each_is_allowed(found: Any) -> None:
    snap, probe = found
    before = _usage(snap)
    said = answer(snap, probe)
    assert _usage(snap) == before  # the preemptor restores what it simulated
    cq = snap.queue(probe.cluster_queue)
    rules = snap.specs[probe.cluster_queue].rules
    value = probe.usage[GPU]
    if said.outcome == FITS:
        assert value <= cq_available(cq, GPU)
    if value > potential_available(cq, GPU):
        assert said.outcome == "none"
    if said.outcome != PREEMPT:
        return
    assert said.victims
    by_name = {w.name: w for ws in snap.workloads.values() for w in ws.values()}
    victims = [by_name[v.name] for v in said.victims]
    for v, wl in zip(said.victims, victims, strict=True):
        own = wl.cluster_queue == probe.cluster_queue
        assert (v.reason == IN_CLUSTER_QUEUE) == own
        rule = rules.within_cluster_queue if own else rules.reclaim_within_cohort
        assert satisfies(rule, probe, wl)
        if not own:
            other = snap.queue(wl.cluster_queue)
            assert other.root() is cq.root() and cq.parent is not None
    preemptor = Preemptor(snap, probe, {GPU})
    for wl in victims:
        snap.remove(wl)
    assert preemptor.fits(probe.usage, True)
    for wl in victims:  # Kueue's fill-back left none it could spare
        snap.add(wl)
        assert not preemptor.fits(probe.usage, False)
        snap.remove(wl)
    for wl in victims:
        snap.add(wl)
    assert _usage(snap) == before
