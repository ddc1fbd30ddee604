"""explain on the DRA claims path: a rendered job's claim is charged as Kueue charges it, the
mapped resource x the template's device count (hetgitops/explain/explanation.py `charged`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
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


def test_a_claim_template_the_policy_does_not_render_is_inadmissible_not_admitted() -> None:
    """Kueue charges a claim only through a mapped DeviceClass and refuses the Workload before
    any flavor otherwise (pkg/dra/claims.go:211-219). explain used to drop the unknown claim
    and admit the job with no accelerator; the real Kueue in tests/sim/test_sim_dra.py pends
    it, reason Inadmissible."""
    policy, workload = _rendered("llm-serving-l40s-48gb")
    sets = tuple(replace(ps, claims=("hand-written-claim",)) for ps in workload.pod_sets)
    found = run.explain_all(policy, [replace(workload, pod_sets=sets)])[0]
    assert (found.verdict, found.reason) == ("pending", "Inadmissible")
    assert "hand-written-claim" in found.message
    assert "l40s-48gb.gpu.dra.hetgitops.io" in found.policy[0]
