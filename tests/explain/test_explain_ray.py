"""`explain -f` on RayJob, RayCluster and RayService: Kueue v0.19.2's pod sets (head, one per
worker group, a K8sJobMode submitter) with the containers KubeRay adds, and one flavor per
pod set for the bundled heterogeneous RayJob."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.workload import VOLCANO, WorkloadError, from_manifest

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
JOBS = REPO / "tests" / "cases" / "jobs" / "bundled" / "expected"
MIB = 2**20


def _pod(cpu: str = "2", gpus: int = 0) -> dict[str, Any]:
    limits: dict[str, Any] = {"cpu": cpu}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    return {"spec": {"containers": [{"name": "ray", "resources": {"limits": limits}}]}}


def _cluster(**extra: Any) -> dict[str, Any]:
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": _pod()},
        "workerGroupSpecs": [
            {"groupName": "a", "replicas": 3, "numOfHosts": 2, "template": _pod(gpus=8)},
            {"groupName": "b", "template": _pod(gpus=1)},  # replicas: the CRD's default 0
        ],
        **extra,
    }


def _obj(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": "r", "namespace": "ft-vision", "labels": {"kueue.x-k8s.io/queue-name": "q"}}
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": meta, "spec": spec}


def _sets(obj: dict[str, Any]) -> list[tuple[str, int, dict[str, int]]]:
    return [(p.name, p.count, dict(p.requests)) for p in from_manifest(obj).pod_sets]


HEAD = {"cpu": 2000}


def test_a_rayjob_has_head_groups_and_a_default_submitter() -> None:
    assert _sets(_obj("RayJob", {"rayClusterSpec": _cluster()})) == [
        ("head", 1, HEAD),
        ("a", 6, {"cpu": 2000, "nvidia.com/gpu": 8}),  # replicas x numOfHosts
        ("b", 0, {"cpu": 2000, "nvidia.com/gpu": 1}),
        ("submitter", 1, {"cpu": 500, "memory": 200 * MIB}),
    ]


def test_http_mode_has_no_submitter_and_sidecar_mode_counts_it_in_the_head() -> None:
    http = _sets(_obj("RayJob", {"rayClusterSpec": _cluster(), "submissionMode": "HTTPMode"}))
    assert [name for name, _, _ in http] == ["head", "a", "b"]
    sidecar = {"rayClusterSpec": _cluster(), "submissionMode": "SidecarMode"}
    head = _sets(_obj("RayJob", sidecar))[0]
    assert head == ("head", 1, {"cpu": 2500, "memory": 200 * MIB})


def test_autoscaling_adds_kuberays_sidecar_to_the_head() -> None:
    spec = _cluster(enableInTreeAutoscaling=True)
    for kind, body in (("RayCluster", spec), ("RayService", {"rayClusterConfig": spec})):
        head = _sets(_obj(kind, body))[0]
        assert head == ("head", 1, {"cpu": 2500, "memory": 512 * MIB}), kind


def test_a_group_named_head_or_a_rayjob_without_a_cluster_is_refused() -> None:
    spec = _cluster()
    spec["workerGroupSpecs"][0]["groupName"] = "head"
    with pytest.raises(WorkloadError, match="reserved for the head group"):
        from_manifest(_obj("RayCluster", spec))
    with pytest.raises(WorkloadError, match="existing cluster"):
        from_manifest(_obj("RayJob", {"clusterSelector": {"ray.io/cluster": "x"}}))


def test_kuberays_volcano_labels_make_a_volcano_gang_without_the_submitter() -> None:
    obj = _obj("RayJob", {"rayClusterSpec": _cluster()})
    obj["metadata"]["labels"] = {"volcano.sh/queue-name": "finetune-vision-a800-train"}
    workload = from_manifest(obj)
    assert workload.scheduler == VOLCANO and workload.queue == "finetune-vision-a800-train"
    assert workload.min_available == 1 + 6 + 0


def test_the_bundled_heterogeneous_rayjob_gets_one_flavor_per_pod_set() -> None:
    policy = run.load_policy([REPO / "policies"], NOW)
    path = JOBS / "ray-rlhf" / "finetune-vision" / "a800-80gb+l40s-48gb.yaml"
    found = explain(policy, from_manifest(yaml.safe_load(path.read_text())))
    assert found.verdict == "admitted"
    assert found.kueue is not None
    pools = {r.pod_set.name: r.flavor.pool for r in found.kueue.pod_sets if r.flavor}
    assert pools == {
        "head": "a800-train",
        "policy": "a800-train",
        "rollout": "l40s-infer",
        "submitter": "a800-train",
    }
