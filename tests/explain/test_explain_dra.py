"""explain on the DRA claims path: a rendered job's claim is charged as Kueue charges it, the
mapped resource x the template's device count (hetgitops/explain/explanation.py `charged`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from hetgitops.explain import request, run
from hetgitops.explain.explanation import charged

VARIANT = Path(__file__).resolve().parents[1] / "cases" / "render" / "dra" / "policy"
L40S = "dra.hetgitops.io/l40s-48gb"


def _rendered(name: str):
    policy = run.load_policy([VARIANT], dt.date(2026, 12, 1))
    found = request.from_profile(policy, "llm-serving", "online-inference")
    return policy, next(w for w in found if w.name == name)


def test_a_claiming_job_is_charged_its_mapped_resource() -> None:
    policy, workload = _rendered("llm-serving-l40s-48gb")
    assert workload.pod_sets[0].claims and L40S not in workload.pod_sets[0].requests
    found = run.explain_all(policy, [workload])[0]
    assert found.verdict == "admitted"
    assert found.workload.pod_sets[0].requests[L40S] == 1


def test_charging_is_done_once() -> None:
    policy, workload = _rendered("llm-serving-l40s-48gb")
    once = charged(policy, workload)
    assert charged(policy, once) == once
