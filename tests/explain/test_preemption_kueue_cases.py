"""The preemptor against Kueue v0.19.2's own table cases, TestPreemption
(pkg/scheduler/preemption/preemption_test.go; ported in preemption/kueue_cases.yaml) and
TestHierarchicalPreemptions (preemption_hierarchical_test.go; kueue_hierarchical_cases.yaml):
the same victims, with the same reasons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hetgitops.explain.preemption import (
    NEVER,
    CohortSpec,
    Preemptor,
    QueueSpec,
    Rules,
    Running,
    Snapshot,
)
from hetgitops.explain.preemption_answer import victim
from hetgitops.explain.preemption_tree import FR, Quota

HERE = Path(__file__).parent / "preemption"
FILES = {
    f: yaml.safe_load((HERE / f).read_text())
    for f in ("kueue_cases.yaml", "kueue_hierarchical_cases.yaml")
}
CASES = [(f, name) for f, body in FILES.items() for name in sorted(body["cases"])]


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


def _cohort(name: str, spec: dict[str, Any]) -> CohortSpec:
    quotas = {_fr(k): Quota(*v) for k, v in (spec.get("quotas") or {}).items()}
    return CohortSpec(name, spec.get("parent"), quotas)


def _running(w: dict[str, Any], name: str = "in") -> Running:
    return Running(
        w.get("name", name),
        w["cq"],
        w.get("priority", 0),
        {_fr(k): v for k, v in w["usage"].items()},
        admitted=w.get("admitted", 0),
        created=w.get("created", 0),
    )


@pytest.mark.parametrize(("file", "case"), CASES, ids=[c for _, c in CASES])
def test_kueue_table_case(file: str, case: str) -> None:
    body = FILES[file]
    spec = body["cases"][case]
    queues = [_queue(n, q) for n, q in (spec.get("queues") or body["queues"]).items()]
    cohorts = [_cohort(n, c) for n, c in (spec.get("cohorts") or {}).items()]
    snap = Snapshot(queues, cohorts, [_running(w) for w in spec["admitted"]])
    probe = _running(spec["incoming"])
    frs = {_fr(k) for k in spec["preempt"]}
    chosen = Preemptor(snap, probe, frs).targets(probe.usage)
    rules = snap.specs[probe.cluster_queue].rules
    got = {c.wl.name: victim(c, rules).reason for c in chosen}
    assert got == spec["want"], case
