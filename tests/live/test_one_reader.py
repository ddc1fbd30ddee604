"""Issue 30: `diff --kubeconfig` (the blast radius) and `explain` live mode read a Workload
through the one reader in `hetgitops.live.workloads`, so they call the same Workloads admitted
(holding quota, Kueue v0.19.2 `workload.HasActiveQuotaReservation`) and pending. Each case is
a Workload status shaped as Kueue writes it (or as a stale or hand-edited one can look)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from hetgitops.diff.blast import LiveWork, radius
from hetgitops.diff.hazards import Hazard
from hetgitops.explain import run
from hetgitops.explain.existing import explain_workload
from hetgitops.explain.state import read_state
from hetgitops.live.client import Resource

REPO = Path(__file__).resolve().parents[2]
NAMESPACE, QUEUE, CQ = "ft-nlp", "ft-nlp", "finetune-nlp"
ADMISSION = {
    "clusterQueue": CQ,
    "podSetAssignments": [
        {
            "name": "main",
            "count": 1,
            "flavors": {"nvidia.com/gpu": "h100-infer-ddcde6d9"},
            "resourceUsage": {"nvidia.com/gpu": "4"},
        }
    ],
}


def _cond(kind: str, status: bool, reason: str = "x") -> dict[str, str]:
    return {"type": kind, "status": str(status), "reason": reason, "message": reason}


# name: (conditions, status.admission kept, spec.active, what both commands must call it)
CASES: dict[str, tuple[list[dict[str, str]], bool, bool, str]] = {
    "running": ([_cond("QuotaReserved", True), _cond("Admitted", True)], True, True, "admitted"),
    # Evicted, its pods not yet stopped: Kueue keeps admission and QuotaReserved=True (and the
    # quota counted) until the job reconciler releases it.
    "evicted-not-yet-released": (
        [_cond("QuotaReserved", True), _cond("Admitted", True), _cond("Evicted", True)],
        True,
        True,
        "admitted",
    ),
    # Quota reserved, admission checks still pending: it holds the quota.
    "awaiting-admission-checks": (
        [_cond("QuotaReserved", True), _cond("Admitted", False)],
        True,
        True,
        "admitted",
    ),
    # QuotaReserved=False with an admission left over: the old explain called it admitted, the
    # old blast radius pending.
    "requeued-with-stale-admission": (
        [_cond("QuotaReserved", False, "Preempted"), _cond("Evicted", True, "Preempted")],
        True,
        True,
        "pending",
    ),
    # Admitted=True without QuotaReserved=True: the old blast radius called it admitted, the
    # old explain pending.
    "admitted-without-reservation": (
        [_cond("QuotaReserved", False, "Pending"), _cond("Admitted", True)],
        False,
        True,
        "pending",
    ),
    # Deactivated: Kueue's cache no longer counts it and its queues no longer hold it.
    "deactivated": (
        [_cond("QuotaReserved", True), _cond("Admitted", True), _cond("Evicted", True)],
        True,
        False,
        "inactive",
    ),
    "finished": (
        [_cond("QuotaReserved", True), _cond("Admitted", True), _cond("Finished", True)],
        True,
        True,
        "finished",
    ),
}


def _workload(name: str) -> dict[str, Any]:
    conditions, admission, active, _ = CASES[name]
    container = {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "4"}}}
    spec: dict[str, Any] = {
        "queueName": QUEUE,
        "podSets": [
            {"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}
        ],
    }
    if not active:
        spec["active"] = False
    status: dict[str, Any] = {"conditions": conditions}
    if admission:
        status["admission"] = ADMISSION
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "creationTimestamp": "2026-12-01T00:00:00Z",
        },
        "spec": spec,
        "status": status,
    }


class _Cluster:
    """What `read_state` and `explain_workload` LIST: the one Workload, nothing else."""

    server = "https://fake"
    requests = 0

    def __init__(self, workload: dict[str, Any]) -> None:
        self.workload = workload

    def list(self, resource: Resource) -> list[dict[str, Any]]:
        return [self.workload] if resource.kind == "Workload" else []


@pytest.fixture(scope="module")
def policy() -> Any:
    return run.load_policy([REPO / "policies"], dt.date(2026, 12, 1))


def _blast(workload: dict[str, Any]) -> str:
    scope = (("localqueue", f"{NAMESPACE}/{QUEUE}"),)
    found = radius(
        Hazard(rule="localqueue-removed", subject="s", message="m", action="a", scope=scope),
        LiveWork([workload]),
    )
    return "admitted" if found.running else "pending" if found.pending else "not counted"


def _explain_state(policy: Any, workload: dict[str, Any]) -> str:
    state = read_state(policy, _Cluster(workload))
    ref = f"{NAMESPACE}/{workload['metadata']['name']}"
    held = ref in state.admitted.get(CQ, ()) or any(h.name == ref for h in state.holders)
    waits = any(w.name == ref for w in state.waiting)
    found = ["admitted"] * held + ["pending"] * waits
    return " and ".join(found) or "not counted"


@pytest.mark.parametrize("name", sorted(CASES))
def test_blast_radius_and_explain_call_a_workload_the_same(policy: Any, name: str) -> None:
    workload = _workload(name)
    expected = CASES[name][3]
    counted = expected if expected in ("admitted", "pending") else "not counted"
    assert _blast(workload) == _explain_state(policy, workload)
    assert _blast(workload) == counted
    assert _explain_state(policy, workload) == counted
    report = explain_workload(policy, _Cluster(workload), NAMESPACE, name)
    assert report.state == expected
