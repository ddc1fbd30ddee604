"""E2E: `diff --kubeconfig` reads the running work from a real API server (read-only user,
Kueue's real Workload CRD) and says per hazard how much it reaches."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from harness.controlplane.harness import ControlPlane

from hetgitops.cli.main import main

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
NOW = "2026-12-01"
OLD_FLAVOR = "a800-train-6db26c16"  # the bundled render's digest-named flavor of a800-train


def _apply(plane: ControlPlane, obj: dict[str, Any]) -> None:
    plane.kubectl(
        "apply", "--server-side", "--field-manager=e2e-live", "-f", "-", input=json.dumps(obj)
    )


@pytest.fixture()
def busy(control_plane: ControlPlane, kueue_workload: Any) -> Iterator[ControlPlane]:
    plane = control_plane
    _apply(plane, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pretrain"}})
    for index in range(3):
        admitted = ("pretraining", OLD_FLAVOR) if index < 2 else None
        kueue_workload(f"train-{index}", "pretrain", "pretraining", 8, admitted=admitted)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train-0-main", "namespace": "pretrain"},
        "spec": {"nodeName": "gpu-a800-001", "containers": [{"name": "c", "image": "x"}]},
    }
    _apply(plane, pod)
    yield plane
    # Not the Namespace: this control plane runs no namespace controller, so a deleted
    # Namespace stays Terminating and every later test that applies into it fails.
    plane.kubectl("delete", "workloads.kueue.x-k8s.io", "--all", "-n", "pretrain", check=False)
    plane.kubectl(
        "delete",
        "pod",
        "train-0-main",
        "-n",
        "pretrain",
        "--grace-period=0",
        "--force",
        check=False,
    )


def test_diff_counts_the_running_work_a_noexecute_taint_and_flavor_rename_reach(
    busy: ControlPlane, tmp_path: Path
) -> None:
    head = tmp_path / "head"
    shutil.copytree(REPO / "policies", head)
    pools = head / "pools" / "training.yaml"
    text = pools.read_text()
    old = "{key: hetgitops.io/pool, value: a800-train, effect: NoSchedule}"
    assert old in text
    pools.write_text(
        text.replace(
            old,
            "{key: hetgitops.io/pool, value: a800-train, effect: NoExecute, "
            "evictsRunningPods: true}",
        )
    )
    result = CliRunner().invoke(
        main,
        [
            "diff",
            "--base-dir",
            str(REPO / "policies"),
            "--head-dir",
            str(head),
            "--now",
            NOW,
            "--format",
            "json",
            "--kubeconfig",
            str(busy.readonly_kubeconfig),
        ],
    )
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    live: dict[str, list[str]] = {}
    for hazard in report["hazards"]:
        live.setdefault(hazard["rule"], []).append(hazard.get("live", ""))
    (renamed,) = live["kueue-flavor-renamed"]
    assert "2 admitted and 0 pending workload(s) (pretraining 2)" in renamed
    # One NodeFeatureRule rule per rack of a800-train; the pod runs on gpu-a800-001 (rack a01).
    evicted = [line for line in live["taint-evicts"] if "nothing now" not in line]
    assert evicted == ["live: evicted: 1 pod(s) (pretraining 1)"], live["taint-evicts"]
    assert len(live["taint-evicts"]) == 4


def test_diff_without_a_cluster_is_an_environment_error(tmp_path: Path) -> None:
    head = tmp_path / "head"
    shutil.copytree(REPO / "policies", head)
    (head / "teams" / "training.yaml").write_text(
        (head / "teams" / "training.yaml")
        .read_text()
        .replace("name: finetune-vision", "name: finetune-vision2", 1)
    )
    config = tmp_path / "nowhere.kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "x", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
                "current-context": "x",
            }
        )
    )
    result = CliRunner().invoke(
        main,
        [
            "diff",
            "--base-dir",
            str(REPO / "policies"),
            "--head-dir",
            str(head),
            "--now",
            NOW,
            "--kubeconfig",
            str(config),
        ],
    )
    assert result.exit_code == 4, result.output
    assert "live blast radius" in result.output
