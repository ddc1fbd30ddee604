"""Multi-cluster compile: one manifest set per Cluster, the MultiKueue manager's objects, and
the `DIR/<cluster>/<target>/` tree."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hetgitops import api
from hetgitops.output.manifests import Manifest, tree
from tests.checks.conftest import PolicyText
from tests.checks.multi_policy import multi_policy

NOW = dt.date(2026, 12, 1)


def _render(policy: PolicyText, tmp_path: Path) -> list[Manifest]:
    folder = tmp_path / "policy"
    folder.mkdir(exist_ok=True)
    for name, text in policy.files.items():
        (folder / name).write_text(text)
    result = api.render([folder], api.Options(now=NOW))
    assert not result.failed(), [f"{d.span} {d.rule} {d.message}" for d in result.diagnostics]
    return result.manifests


def _one(manifests: list[Manifest], cluster: str, kind: str, name: str) -> dict[str, Any]:
    found = [m for m in manifests if (m.cluster, m.kind, m.name) == (cluster, kind, name)]
    assert len(found) == 1, (cluster, kind, name)
    return dict(found[0].obj)


def _kinds(manifests: list[Manifest], cluster: str) -> set[str]:
    return {m.kind for m in manifests if m.cluster == cluster}


@pytest.fixture
def multi() -> PolicyText:
    return multi_policy()


def test_manager_queue_holds_the_sum_of_the_workers(multi, tmp_path):
    rendered = _render(multi, tmp_path)
    hub = _one(rendered, "hub", "ClusterQueue", "ml")["spec"]
    [group] = hub["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    totals = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    workers = [
        {
            r["name"]: r["nominalQuota"]
            for f in _one(rendered, c, "ClusterQueue", "ml")["spec"]["resourceGroups"][0]["flavors"]
            for r in f["resources"]
        }
        for c in ("east", "west")
    ]
    assert workers[0]["nvidia.com/gpu"] == workers[1]["nvidia.com/gpu"] == "8"
    assert totals["nvidia.com/gpu"] == "16"
    assert totals["cpu"] == str(int(workers[0]["cpu"]) + int(workers[1]["cpu"]))
    assert group["flavors"][0]["name"] == "multikueue"
    assert "cohortName" not in hub
    assert hub["admissionChecksStrategy"] == {"admissionChecks": [{"name": "multikueue-east-west"}]}


def test_dispatch_order_is_the_config_order(multi, tmp_path):
    config = _one(_render(multi, tmp_path), "hub", "MultiKueueConfig", "multikueue-east-west")
    assert config["spec"] == {"clusters": ["east", "west"], "quotaManagement": "Manual"}
    multi.replace("clusters.yaml", "dispatchOrder: 2", "dispatchOrder: 0")
    config = _one(_render(multi, tmp_path), "hub", "MultiKueueConfig", "multikueue-west-east")
    assert config["spec"]["clusters"] == ["west", "east"]


def test_a_team_on_one_worker_gets_its_own_check(multi, tmp_path):
    multi.replace(
        "teams.yaml", "    - {pool: l40s-infer, cards: 8}\n    - {pool: h100", "    - {pool: h100"
    )
    rendered = _render(multi, tmp_path)
    serving = _one(rendered, "hub", "ClusterQueue", "serving")["spec"]
    assert serving["admissionChecksStrategy"]["admissionChecks"] == [{"name": "multikueue-east"}]
    check = _one(rendered, "hub", "AdmissionCheck", "multikueue-east")
    assert check["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "MultiKueueConfig",
            "name": "multikueue-east",
        },
    }
    assert _one(rendered, "hub", "MultiKueueConfig", "multikueue-east")["spec"]["clusters"] == [
        "east"
    ]
    # The worker without serving quota still has its namespace and LocalQueue (MultiKueue
    # matches by name), and an empty ClusterQueue.
    assert _one(rendered, "west", "LocalQueue", "serving")["metadata"]["namespace"] == "serving"
    assert "resourceGroups" not in _one(rendered, "west", "ClusterQueue", "serving")["spec"]


def test_credentials_are_references(multi, tmp_path):
    rendered = _render(multi, tmp_path)
    east = _one(rendered, "hub", "MultiKueueCluster", "east")["spec"]
    west = _one(rendered, "hub", "MultiKueueCluster", "west")["spec"]
    assert east == {
        "clusterSource": {"kubeConfig": {"location": "east-kubeconfig", "locationType": "Secret"}}
    }
    assert west == {"clusterSource": {"clusterProfileRef": {"name": "west"}}}
    assert "Secret" not in {m.kind for m in rendered}


def test_the_manager_gets_no_pools_and_no_volcano(multi, tmp_path):
    rendered = _render(multi, tmp_path)
    assert _kinds(rendered, "hub") == {
        "Namespace",
        "PriorityClass",
        "WorkloadPriorityClass",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "AdmissionCheck",
        "MultiKueueConfig",
        "MultiKueueCluster",
    }
    assert {"Queue", "NodeFeatureRule", "Cohort"} <= _kinds(rendered, "east")
    assert [m.name for m in rendered if m.cluster == "hub" and m.kind == "ResourceFlavor"] == [
        "multikueue"
    ]
    assert {m.name for m in rendered if m.cluster == "east" and m.kind == "ResourceFlavor"} == {
        "h100-train"
    }


def test_manager_quota_overrides_the_sum(multi, tmp_path):
    multi.replace(
        "teams.yaml",
        "  tiers: [serving]\n",
        "  tiers: [serving]\n  managerQuota: {nvidia.com/gpu: 12}\n",
    )
    hub = _one(_render(multi, tmp_path), "hub", "ClusterQueue", "serving")["spec"]
    totals = {
        r["name"]: r["nominalQuota"] for r in hub["resourceGroups"][0]["flavors"][0]["resources"]
    }
    assert totals["nvidia.com/gpu"] == "12"


def test_tree_is_one_kustomized_tree_per_cluster(multi, tmp_path):
    files = tree(_render(multi, tmp_path))
    assert "kustomization.yaml" not in files
    for cluster in ("hub", "east", "west"):
        assert f"{cluster}/kustomization.yaml" in files
        assert f"{cluster}/kueue/kustomization.yaml" in files
    assert "east/kueue/clusterqueue-ml.yaml" in files
    assert "hub/kueue/multikueuecluster-east.yaml" in files
    assert "- kueue/clusterqueue-ml.yaml" in files["hub/kustomization.yaml"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "from hetgitops.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )


def test_render_cli_per_cluster(multi, tmp_path):
    _render(multi, tmp_path)
    folder = str(tmp_path / "policy")
    alone = _cli("render", folder, "--now", "2026-12-01")
    assert alone.returncode == 2 and "--cluster NAME" in alone.stderr
    hub = _cli("render", folder, "--now", "2026-12-01", "--cluster", "hub")
    assert hub.returncode == 0 and "kind: MultiKueueConfig" in hub.stdout
    assert "kind: Queue\n" not in hub.stdout
    unknown = _cli("render", folder, "--now", "2026-12-01", "--cluster", "nope")
    assert unknown.returncode == 2 and "east, hub, west" in unknown.stderr
    out = tmp_path / "out"
    written = _cli("render", folder, "--now", "2026-12-01", "--output", str(out))
    assert written.returncode == 0, written.stderr
    assert (out / "west" / "kueue" / "clusterqueue-ml.yaml").is_file()
    assert not (out / "kustomization.yaml").exists()


def test_workers_have_the_managers_namespaces_and_local_queues(multi, tmp_path):
    """MultiKueue links a dispatched job to a worker by namespace and LocalQueue name only."""
    rendered = _render(multi, tmp_path)

    def names(cluster: str, kind: str) -> set[tuple[str, str]]:
        return {(m.namespace, m.name) for m in rendered if (m.cluster, m.kind) == (cluster, kind)}

    for kind in ("Namespace", "LocalQueue"):
        assert names("hub", kind), kind
        assert names("east", kind) == names("west", kind) == names("hub", kind), kind


def test_workers_get_the_managers_service_account(multi, tmp_path):
    """The manager watches every adapter kind on a worker; one forbidden kind keeps the
    MultiKueueCluster inactive (ClientConnectionFailed), so the role covers them all."""
    rendered = _render(multi, tmp_path)
    for worker in ("east", "west"):
        role = _one(rendered, worker, "ClusterRole", "hetgitops-multikueue")
        granted = {
            (group, resource): rule["verbs"]
            for rule in role["rules"]
            for group in rule["apiGroups"]
            for resource in rule["resources"]
        }
        for kind in [
            ("batch", "jobs"),
            ("jobset.x-k8s.io", "jobsets"),
            ("kubeflow.org", "pytorchjobs"),
        ]:
            assert {"create", "delete", "get", "list", "watch"} <= set(granted[kind]), kind
        assert set(granted["kueue.x-k8s.io", "workloads/status"]) == {"get", "patch", "update"}
        binding = _one(rendered, worker, "ClusterRoleBinding", "hetgitops-multikueue")
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "multikueue-sa", "namespace": "kueue-system"}
        ]
        account = [m for m in rendered if (m.cluster, m.kind) == (worker, "ServiceAccount")]
        assert [(m.namespace, m.name, m.target) for m in account] == [
            ("kueue-system", "multikueue-sa", "kueue")
        ]
    assert "ServiceAccount" not in _kinds(rendered, "hub")


def test_a_team_without_quota_on_a_worker_gets_a_zero_accelerator_quota(multi, tmp_path):
    multi.replace(
        "teams.yaml", "    - {pool: l40s-infer, cards: 8}\n    - {pool: h100", "    - {pool: h100"
    )
    rendered = _render(multi, tmp_path)

    def quota(cluster: str, namespace: str) -> dict[str, str]:
        found = [
            m
            for m in rendered
            if (m.cluster, m.kind, m.namespace) == (cluster, "ResourceQuota", namespace)
        ]
        assert len(found) == 1, (cluster, namespace)
        return dict(found[0].obj["spec"]["hard"])

    assert quota("west", "serving") == {"requests.nvidia.com/gpu": "0"}
    assert quota("west", "ml") == {"requests.nvidia.com/gpu": "8"}
    assert quota("east", "serving") == {"requests.nvidia.com/gpu": "16"}
    assert "ResourceQuota" not in _kinds(rendered, "hub")
