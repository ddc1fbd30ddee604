"""The live readers of `hetgitops.live.workloads`: Kueue v0.19.2's "holds quota", "waiting" and
"finished" on Workload statuses, and a pod's request (containers summed, init containers'
at least), on plain JSON as the API server returns it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hetgitops.live import workloads


def wl(*conditions: tuple[str, bool], active: bool = True, admission: bool = True) -> Any:
    status: dict[str, Any] = {
        "conditions": [{"type": t, "status": str(s)} for t, s in conditions],
    }
    if admission:
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": []}
    return {"spec": {} if active else {"active": False}, "status": status}


def test_quota_is_held_on_quota_reserved_while_active_and_unfinished() -> None:
    assert workloads.holds_quota(wl(("QuotaReserved", True)))  # admission checks pending
    assert workloads.holds_quota(wl(("QuotaReserved", True), ("Evicted", True)))
    assert not workloads.holds_quota(wl(("QuotaReserved", False)))  # a stale admission
    assert not workloads.holds_quota(wl(("Admitted", True), admission=False))
    assert not workloads.holds_quota(wl(("QuotaReserved", True), ("Finished", True)))
    assert not workloads.holds_quota(wl(("QuotaReserved", True), active=False))


def test_status_in_kueues_order() -> None:
    finished = wl(("QuotaReserved", True), ("Finished", True), active=False)
    assert workloads.status(finished) == "finished"
    assert workloads.status(wl(("QuotaReserved", True), active=False)) == "inactive"
    assert workloads.status(wl(("QuotaReserved", True), ("Admitted", False))) == "admitted"
    assert workloads.status(wl(admission=False)) == "pending"  # just created: no conditions
    assert workloads.waiting(wl(admission=False))
    assert not workloads.waiting(wl(admission=False, active=False))


def test_requested_names_every_resource_asked_as_request_or_limit() -> None:
    spec = {
        "containers": [{"resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": 1}}}],
        "initContainers": [{"resources": {"requests": {"memory": "1Gi"}}}],
    }
    workload = {"spec": {"podSets": [{"template": {"spec": spec}}]}}
    assert workloads.requested(workload) == {"cpu", "memory", "nvidia.com/gpu"}


def test_a_pods_request_sums_containers_and_takes_at_least_each_init_container() -> None:
    spec = {
        "containers": [
            {"resources": {"requests": {"nvidia.com/gpu": "1"}}},
            {"resources": {"limits": {"nvidia.com/gpu": "2"}}},
        ],
        "initContainers": [{"resources": {"requests": {"nvidia.com/gpu": "4", "cpu": "1"}}}],
    }
    found = workloads.pod_requests(spec, lambda _, q: Decimal(str(q)))
    assert found == {"cpu": Decimal(1), "nvidia.com/gpu": Decimal(4)}
    assert workloads.pod_finished({"status": {"phase": "Succeeded"}})
    assert not workloads.pod_finished({"status": {"phase": "Running"}})
