"""E2E: server-side dry-run against the real CRD schemas, CEL rules included."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest
from harness.controlplane.harness import ApplyTree, ControlPlane

pytestmark = pytest.mark.e2e

# Kueue v1beta2 is the storage version: a bare API server has no conversion webhook.
KUEUE_AND_VOLCANO = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: h100-{suffix}
spec:
  nodeLabels:
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
  nodeTaints:
  - key: nvidia.com/gpu
    value: present
    effect: NoSchedule
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: research-{suffix}
spec: {{}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a-{suffix}
spec:
  cohortName: research-{suffix}
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: h100-{suffix}
      resources:
      - name: cpu
        nominalQuota: 64
      - name: memory
        nominalQuota: 512Gi
      - name: nvidia.com/gpu
        nominalQuota: 8
        borrowingLimit: 8
        lendingLimit: 4
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: team-a-{suffix}
spec:
  weight: 1
  reclaimable: true
  capability:
    cpu: 64
    nvidia.com/gpu: 8
"""

# Violates the ClusterQueue CEL rule "borrowingLimit must be nil when cohort is empty".
BORROWING_WITHOUT_COHORT = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: lonely-{suffix}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
        borrowingLimit: 2
"""

LOCAL_QUEUE_TREE = {
    "kustomization.yaml": "resources:\n- namespace.yaml\n- kueue/localqueue.yaml\n",
    # A fixed namespace: dry-run creates it for real, and without a controller-manager a deleted
    # namespace never finishes terminating, so per-run names would pile up in a kept instance.
    "namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: e2e-team-a\n",
    "kueue/localqueue.yaml": textwrap.dedent("""\
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: LocalQueue
        metadata:
          name: default
          namespace: e2e-team-a
        spec:
          clusterQueue: team-a-{suffix}
        """),
}


@pytest.fixture
def suffix() -> str:
    # Unique names: the instance may outlive this session (a developer's `controlplane up`).
    return uuid.uuid4().hex[:8]


def _write(directory: Path, files: dict[str, str], suffix: str) -> Path:
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(suffix=suffix))
    return directory


def _exists(plane: ControlPlane, *what: str) -> bool:
    result = plane.kubectl("get", *what, "--ignore-not-found", "-o", "name")
    return bool(result.stdout.strip())


def test_dry_run_accepts_valid_kueue_and_volcano(
    control_plane: ControlPlane, apply_tree: ApplyTree, tmp_path: Path, suffix: str
) -> None:
    tree = _write(tmp_path, {"queues.yaml": KUEUE_AND_VOLCANO}, suffix)
    result = apply_tree(tree, dry_run=True)
    assert "serverside-applied (server dry run)" in result.stdout
    assert result.stdout.count("(server dry run)") == 4
    assert not _exists(control_plane, "clusterqueues.kueue.x-k8s.io", f"team-a-{suffix}")


def test_cel_rule_rejects_borrowing_limit_without_cohort(
    apply_tree: ApplyTree, tmp_path: Path, suffix: str
) -> None:
    tree = _write(tmp_path, {"cq.yaml": BORROWING_WITHOUT_COHORT}, suffix)
    result = apply_tree(tree, dry_run=True, check=False)
    assert result.returncode != 0
    assert "borrowingLimit must be nil when cohort is empty" in result.stderr


def test_openapi_schema_rejects_wrong_type(
    apply_tree: ApplyTree, tmp_path: Path, suffix: str
) -> None:
    bad = KUEUE_AND_VOLCANO.replace("weight: 1", "weight: heavy")
    result = apply_tree(_write(tmp_path, {"bad.yaml": bad}, suffix), dry_run=True, check=False)
    assert result.returncode != 0
    assert "spec.weight" in result.stderr


def test_cel_rule_rejects_invalid_taint_effect(
    apply_tree: ApplyTree, tmp_path: Path, suffix: str
) -> None:
    bad = KUEUE_AND_VOLCANO.replace("effect: NoSchedule", "effect: Sometimes")
    result = apply_tree(_write(tmp_path, {"bad.yaml": bad}, suffix), dry_run=True, check=False)
    assert result.returncode != 0
    assert "supported taint effect values" in result.stderr


def test_dry_run_kustomize_tree_in_new_namespace(
    control_plane: ControlPlane, apply_tree: ApplyTree, tmp_path: Path, suffix: str
) -> None:
    tree = _write(tmp_path, LOCAL_QUEUE_TREE, suffix)
    result = apply_tree(tree, dry_run=True)
    assert "localqueue.kueue.x-k8s.io/default serverside-applied" in result.stdout
    assert not _exists(control_plane, "localqueues.kueue.x-k8s.io", "default", "-n", "e2e-team-a")


def test_real_apply_persists(
    control_plane: ControlPlane, apply_tree: ApplyTree, tmp_path: Path, suffix: str
) -> None:
    tree = _write(tmp_path, {"queues.yaml": KUEUE_AND_VOLCANO}, suffix)
    apply_tree(tree, dry_run=False)
    stored = control_plane.kubectl(
        "get", "clusterqueues.kueue.x-k8s.io", f"team-a-{suffix}", "-o", "json"
    )
    spec = json.loads(stored.stdout)["spec"]
    assert spec["cohortName"] == f"research-{suffix}"
    control_plane.kubectl("delete", "-f", str(tree / "queues.yaml"))
