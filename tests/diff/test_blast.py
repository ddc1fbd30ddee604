"""diff --kubeconfig: the live blast radius counted from Workloads and Pods shaped as Kueue v0.19
and the API server return them (tests/e2e/test_e2e_diff_live.py reads them from a real one)."""

from __future__ import annotations

from typing import Any

from hetgitops.diff.blast import LiveWork, annotate, radius
from hetgitops.diff.hazards import Hazard

TEAMS = {"train": "pretraining", "serve": "online-inference"}


def workload(
    name: str,
    namespace: str,
    *,
    queue: str,
    admitted_on: str = "",
    cq: str = "",
    gpu: str = "nvidia.com/gpu",
) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": []}
    if admitted_on:
        status["conditions"] = [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "True"},
        ]
        status["admission"] = {
            "clusterQueue": cq,
            "podSetAssignments": [
                {"name": "main", "flavors": {gpu: admitted_on, "cpu": admitted_on}}
            ],
        }
    requests = {gpu: "8", "cpu": "8"}
    podset = {
        "name": "main",
        "count": 1,
        "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}},
    }
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queueName": queue, "podSets": [podset]},
        "status": status,
    }


def pod(name: str, namespace: str, node: str, **spec: Any) -> dict[str, Any]:
    owners = spec.pop("owners", [{"kind": "Job", "name": name}])
    return {
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": owners},
        "spec": {"nodeName": node, **spec},
        "status": {"phase": "Running"},
    }


WORK = LiveWork(
    workloads=[
        workload("a", "train", queue="pretraining", admitted_on="a800-old", cq="pretraining"),
        workload("b", "train", queue="pretraining", admitted_on="a800-old", cq="pretraining"),
        workload("c", "train", queue="pretraining"),  # pending
        workload("d", "serve", queue="serving", admitted_on="h100-x", cq="online-inference"),
    ],
    pods=[
        pod("a-0", "train", "n1"),
        pod("b-0", "train", "n2", tolerations=[{"key": "maint", "operator": "Exists"}]),
        pod("d-0", "serve", "n2", priorityClassName="online"),
        pod("agent", "gpu-operator", "n1", owners=[{"kind": "DaemonSet", "name": "dcgm"}]),
        {**pod("done", "train", "n1"), "status": {"phase": "Succeeded"}},
    ],
    team_of_namespace=TEAMS,
)


def hazard(rule: str, *scope: tuple[str, str]) -> Hazard:
    return Hazard(rule=rule, subject="subject", message="message", action="action", scope=scope)


def test_a_flavor_rename_counts_the_work_admitted_on_the_old_flavor() -> None:
    found = radius(hazard("kueue-flavor-renamed", ("flavor", "a800-old")), WORK)
    assert dict(found.running) == {"pretraining": 2} and not found.pending


def test_a_noexecute_taint_counts_untolerating_pods_and_agents_apart() -> None:
    found = radius(hazard("taint-evicts", ("nodes", "n1,n2"), ("taint", "maint")), WORK)
    assert dict(found.pods) == {"pretraining": 1, "online-inference": 1}  # b-0 tolerates it
    assert found.daemon_pods == 1


def test_stranding_scopes() -> None:
    queue = radius(hazard("localqueue-removed", ("localqueue", "train/pretraining")), WORK)
    assert (dict(queue.running), dict(queue.pending)) == ({"pretraining": 2}, {"pretraining": 1})
    cq = radius(hazard("clusterqueue-removed", ("clusterqueue", "online-inference")), WORK)
    assert dict(cq.running) == {"online-inference": 1}
    tier = radius(hazard("priority-class-removed", ("priorityclass", "online")), WORK)
    assert dict(tier.pods) == {"online-inference": 1}
    ns = radius(hazard("namespace-removed", ("namespace", "train")), WORK)
    assert dict(ns.pods) == {"pretraining": 2} and sum(ns.running.values()) == 2


def test_the_live_line_says_numbers_per_team_and_nothing_when_nothing() -> None:
    (flip,) = annotate([hazard("kueue-flavor-renamed", ("flavor", "a800-old"))], WORK)
    assert flip.live == (
        "live: no longer counted, running on the pool: 2 admitted and 0 pending workload(s) "
        "(pretraining 2)"
    )
    (idle,) = annotate([hazard("kueue-flavor-renamed", ("flavor", "unused"))], WORK)
    assert idle.live == "live: no longer counted, running on the pool: nothing now"
    (unscoped,) = annotate([hazard("volcano-shrink-order")], WORK)
    assert unscoped.live == ""


def _with_usage(workload_: dict[str, Any], usage: dict[str, str]) -> dict[str, Any]:
    (assignment,) = workload_["status"]["admission"]["podSetAssignments"]
    assignment["resourceUsage"] = usage
    return workload_


def test_flavor_hazards_give_the_admitted_usage_per_queue_as_holds_takes_it() -> None:
    from hetgitops.diff.blast import LiveWork

    work = LiveWork(
        workloads=[
            _with_usage(
                workload("a", "train", queue="pretraining", admitted_on="old", cq="pretraining"),
                {"nvidia.com/gpu": "8", "cpu": "96"},
            ),
            _with_usage(
                workload("b", "train", queue="pretraining", admitted_on="old", cq="pretraining"),
                {"nvidia.com/gpu": "4", "cpu": "48"},
            ),
            _with_usage(
                workload("c", "serve", queue="serving", admitted_on="new", cq="online-inference"),
                {"nvidia.com/gpu": "2", "cpu": "24"},
            ),
        ],
        team_of_namespace=TEAMS,
    )
    (kept,) = annotate([hazard("kueue-flavor-transition", ("flavor", "old"))], work)
    assert kept.live.endswith("(holds: {pretraining: {cpu: '144', nvidia.com/gpu: '12'}})")
    (early,) = annotate([hazard("kueue-flavor-retired", ("flavor", "old"))], work)
    assert "NOT safe yet: still admitted there {pretraining: {cpu: '144'" in early.live
    (drained,) = annotate([hazard("kueue-flavor-retired", ("flavor", "gone"))], work)
    assert drained.live.endswith("nothing admitted on it: safe to remove now")


def _sharing_pod(name: str, node: str, replicas: str) -> dict[str, Any]:
    requests = {"nvidia.com/gpu": replicas}
    return pod(name, "train", node, containers=[{"name": "c", "resources": {"requests": requests}}])


def test_a_sharing_reduction_compares_the_replicas_in_use_with_the_new_capacity() -> None:
    """44 time-sliced replicas in use on nodes that hold 24 after the change: NOT safe (20
    above); step 1 says they stay counted; 20 in use is safe."""
    busy = LiveWork(pods=[_sharing_pod(f"p{i}", f"n{i % 3}", "4") for i in range(11)])
    scope = (("nodes", "n0,n1,n2"), ("capacity", "nvidia.com/gpu|24"))
    (late,) = annotate([hazard("sharing-retired", *scope)], busy)
    assert "44 nvidia.com/gpu in use on those nodes, 24 after: NOT safe yet, 20" in late.live
    (one,) = annotate([hazard("sharing-reduced", *scope)], busy)
    assert "NOT safe yet" in one.live
    (staged,) = annotate([hazard("sharing-staged", *scope)], busy)
    assert "20 above it stay counted and running" in staged.live
    fits = LiveWork(pods=[_sharing_pod(f"p{i}", "n0", "4") for i in range(5)])
    (done,) = annotate([hazard("sharing-retired", *scope)], fits)
    assert done.live.endswith("20 nvidia.com/gpu in use on those nodes, 24 after: safe now")


def test_a_noexecute_taint_counts_pods_whose_tolerations_do_not_match_it() -> None:
    """Kubernetes' ToleratesTaint: an Equal toleration with another value, or one for another
    effect, does not keep the pod from being evicted; one for every taint does."""
    work = LiveWork(
        pods=[
            pod("x-0", "train", "n1", tolerations=[{"key": "maint", "value": "other"}]),
            pod("x-1", "train", "n1", tolerations=[{"operator": "Exists", "effect": "NoSchedule"}]),
            pod("x-2", "train", "n1", tolerations=[{"key": "maint", "value": "on"}]),
            pod("x-3", "train", "n1", tolerations=[{"operator": "Exists"}]),
        ],
        team_of_namespace=TEAMS,
    )
    found = radius(hazard("taint-evicts", ("nodes", "n1"), ("taint", "maint=on")), work)
    assert dict(found.pods) == {"pretraining": 2}
