"""The preemptor against Kueue v0.19.2's own TestPreemption table cases
(pkg/scheduler/preemption/preemption_test.go; ported in preemption/kueue_cases.yaml): the
same victims, with the same reasons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hetgitops.explain.preemption import (
    NEVER,
    Preemptor,
    QueueSpec,
    Rules,
    Running,
    Snapshot,
)
from hetgitops.explain.preemption_answer import _victim
from hetgitops.explain.preemption_tree import FR, Quota

CASES = yaml.safe_load((Path(__file__).parent / "preemption" / "kueue_cases.yaml").read_text())


def _fr(key: str) -> FR:
    flavor, resource = key.split("/")
    return flavor, resource


def _queue(name: str, spec: dict[str, Any]) -> QueueSpec:
    quotas = {_fr(k): Quota(*v) for k, v in spec["quotas"].items()}
    p = spec.get("preemption") or {}
    borrow = p.get("borrowWithinCohort") or {}
    rules = Rules(
        p.get("withinClusterQueue", NEVER),
        p.get("reclaimWithinCohort", NEVER),
        borrow.get("policy", NEVER),
        borrow.get("maxPriorityThreshold"),
    )
    return QueueSpec(name, spec.get("cohort"), quotas, rules)


def _running(w: dict[str, Any], name: str = "in") -> Running:
    return Running(
        w.get("name", name),
        w["cq"],
        w.get("priority", 0),
        {_fr(k): v for k, v in w["usage"].items()},
        admitted=w.get("admitted", 0),
        created=w.get("created", 0),
    )


@pytest.mark.parametrize("case", sorted(CASES["cases"]))
def test_kueue_table_case(case: str) -> None:
    spec = CASES["cases"][case]
    queues = [_queue(n, q) for n, q in CASES["queues"].items()]
    snap = Snapshot(queues, [], [_running(w) for w in spec["admitted"]])
    probe = _running(spec["incoming"])
    frs = {_fr(k) for k in spec["preempt"]}
    chosen = Preemptor(snap, probe, frs).targets(probe.usage)
    rules = snap.specs[probe.cluster_queue].rules
    got = {c.wl.name: _victim(c, rules).reason for c in chosen}
    assert got == spec["want"], case
