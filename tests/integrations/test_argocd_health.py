"""The generated Argo CD health checks, run by a real Lua 5.1 runtime (Argo CD embeds gopher-lua,
a Lua 5.1) against objects carrying status as Kueue's and Volcano's controllers write it.

Status shapes and wording come from the controllers' sources: Kueue's ClusterQueue cache
(`inactiveReason`: reason = first of Stopped/FlavorNotFound/AdmissionCheckNotFound/...,
message "Can't admit new workloads: ..."), its LocalQueue reconciler (Ready,
ClusterQueueDoesNotExist, ClusterQueueIsInactive, Stopped) and Volcano's QueueState
(Open, Closed, Closing, Unknown)."""

from __future__ import annotations

import copy
import datetime as dt
import functools
from collections.abc import Mapping
from typing import Any

import pytest

from hetgitops import api
from hetgitops.compilers.argocd_config import group_kind, health_scripts
from tests.integrations.conftest import REPO

lupa = pytest.importorskip("lupa.lua51")


@functools.cache
def rendered() -> dict[str, Mapping[str, Any]]:
    """One rendered object per `<group>_<Kind>` of the bundled fleet and of the multi-cluster
    example (its manager's MultiKueue objects), to wear a status."""
    found: dict[str, Mapping[str, Any]] = {}
    for policy in (REPO / "examples" / "multicluster", REPO / "policies"):
        result = api.render([policy], api.Options(now=dt.date(2026, 9, 1)))
        found.update({group_kind(m.obj): m.obj for m in reversed(result.manifests)})
    return found


def health(obj: Mapping[str, Any]) -> tuple[str, str]:
    """Run the shipped script the way Argo CD does: `obj` global, only safe libraries."""
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    env = runtime.globals()
    for unsafe in ("os", "io", "require", "dofile", "loadfile", "load", "loadstring", "module"):
        env[unsafe] = None  # Argo CD opens base, table, string and math only
    env.obj = runtime.table_from(copy.deepcopy(dict(obj)), recursive=True)
    result = runtime.execute(health_scripts()[group_kind(obj)])
    return str(result["status"]), str(result["message"] or "")


def with_status(key: str, status: Mapping[str, Any] | None, **meta: Any) -> dict[str, Any]:
    obj = copy.deepcopy(dict(rendered()[key]))
    obj["metadata"] = {**obj["metadata"], "generation": 2, **meta}
    if status is not None:
        obj["status"] = status
    return obj


def condition(status: str, reason: str, message: str, generation: int = 2) -> dict[str, Any]:
    return {
        "type": "Active",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": "2026-09-01T10:00:00Z",
    }


CQ = "kueue.x-k8s.io_ClusterQueue"
CQ_CASES = [
    (condition("True", "Ready", "Can admit new workloads"), "Healthy"),
    (
        condition(
            "False",
            "FlavorNotFound",
            "Can't admit new workloads: references missing ResourceFlavor(s): [h100-infer].",
        ),
        "Degraded",
    ),
    (condition("False", "Stopped", "Can't admit new workloads: is stopped."), "Suspended"),
    (
        condition(
            "False",
            "AdmissionCheckInactive",
            "Can't admit new workloads: references inactive AdmissionCheck(s): [mk].",
        ),
        "Degraded",
    ),
    (
        condition("False", "Terminating", "Can't admit new workloads; clusterQueue is terminating"),
        "Progressing",
    ),
    (condition("True", "Ready", "Can admit new workloads", generation=1), "Progressing"),
]


@pytest.mark.parametrize(("active", "expected"), CQ_CASES)
def test_cluster_queue_health_follows_the_active_condition(
    active: dict[str, Any], expected: str
) -> None:
    status = {"pendingWorkloads": 0, "reservingWorkloads": 0, "conditions": [active]}
    state, message = health(with_status(CQ, status))
    assert state == expected
    if expected != "Progressing":
        assert message.startswith(active["reason"]) and active["message"] in message


def test_cluster_queue_without_status_or_being_deleted_is_progressing() -> None:
    assert health(with_status(CQ, None))[0] == "Progressing"
    deleting = with_status(
        CQ,
        {"conditions": [condition("True", "Ready", "Can admit new workloads")]},
        deletionTimestamp="2026-09-01T11:00:00Z",
        finalizers=["kueue.x-k8s.io/resource-in-use"],
    )
    assert health(deleting) == (
        "Progressing",
        "Deleting: Kueue keeps the queue until its admitted workloads finish",
    )


LQ = "kueue.x-k8s.io_LocalQueue"


@pytest.mark.parametrize(
    ("reason", "status", "message", "expected"),
    [
        ("Ready", "True", "Can submit new workloads to clusterQueue", "Healthy"),
        ("ClusterQueueIsInactive", "False", "Can't submit new workloads to clusterQueue",
         "Degraded"),
        ("ClusterQueueDoesNotExist", "False", "Can't submit new workloads to clusterQueue",
         "Degraded"),
        ("Stopped", "False", "LocalQueue is stopped", "Suspended"),
    ],
)  # fmt: skip
def test_local_queue_health(reason: str, status: str, message: str, expected: str) -> None:
    obj = with_status(LQ, {"conditions": [condition(status, reason, message)]})
    assert health(obj) == (expected, f"{reason}: {message}")
    assert health(with_status(LQ, None))[0] == "Progressing"


def test_local_queue_reads_the_active_condition_as_the_cluster_queue_does() -> None:
    # one script for both queues: a stale observedGeneration and a deletion are not Healthy
    stale = with_status(LQ, {"conditions": [condition("True", "Ready", "Can submit", 1)]})
    assert health(stale) == ("Progressing", "Waiting for Kueue to observe the latest spec")
    ready = {"conditions": [condition("True", "Ready", "Can submit")]}
    deleting = with_status(LQ, ready, deletionTimestamp="2026-09-01T11:00:00Z")
    assert health(deleting) == ("Progressing", "Deleting")
    assert health_scripts()[LQ].startswith("-- Argo CD health of a Kueue LocalQueue ")
    assert "@" not in health_scripts()[LQ] + health_scripts()[CQ]


def test_resource_flavor_has_no_status_and_reports_a_held_deletion() -> None:
    key = "kueue.x-k8s.io_ResourceFlavor"
    assert health(with_status(key, None))[0] == "Healthy"
    held = with_status(
        key,
        None,
        deletionTimestamp="2026-09-01T11:00:00Z",
        finalizers=["kueue.x-k8s.io/resource-in-use"],
    )
    assert health(held)[0] == "Progressing"


@pytest.mark.parametrize(
    ("state", "expected"),
    [("Open", "Healthy"), ("Closed", "Suspended"), ("Closing", "Progressing"),
     ("Unknown", "Degraded")],
)  # fmt: skip
def test_volcano_queue_health_follows_the_state(state: str, expected: str) -> None:
    status = {"state": state, "allocated": {"cpu": "0", "memory": "0"}, "running": 0}
    key = "scheduling.volcano.sh_Queue"
    assert health(with_status(key, status)) == (expected, f"Queue state: {state}")
    assert health(with_status(key, None))[0] == "Progressing"


def test_every_script_is_for_a_kind_hetgitops_renders() -> None:
    assert set(health_scripts()) <= set(rendered())
    # Every rendered kind whose controller writes a status has a script.
    assert {CQ, LQ, "scheduling.volcano.sh_Queue", *MULTIKUEUE} <= set(health_scripts())


MULTIKUEUE = ("kueue.x-k8s.io_AdmissionCheck", "kueue.x-k8s.io_MultiKueueCluster")


@pytest.mark.parametrize("key", MULTIKUEUE)
@pytest.mark.parametrize(
    ("active", "expected"),
    [
        (condition("True", "Active", "Connected"), "Healthy"),
        (condition("True", "SomeActiveClusters", "Inactive clusters: [ampere-west]"), "Healthy"),
        (condition("False", "NoUsableClusters", "Inactive clusters: [a, b]"), "Degraded"),
        (
            condition(
                "False",
                "ClientConnectionFailed",
                'pytorchjobs.kubeflow.org is forbidden: User "system:serviceaccount:'
                'kueue-system:multikueue-sa" cannot watch resource "pytorchjobs"',
            ),
            "Degraded",
        ),
    ],
)
def test_multikueue_health_follows_the_active_condition(
    key: str, active: dict[str, Any], expected: str
) -> None:
    state, message = health(with_status(key, {"conditions": [active]}))
    assert (state, message) == (expected, f"{active['reason']}: {active['message']}")
    assert health(with_status(key, None))[0] == "Progressing"
    deleting = with_status(key, {"conditions": [active]}, deletionTimestamp="2026-09-01T11:00:00Z")
    assert health(deleting)[0] == "Progressing"
