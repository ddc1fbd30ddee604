"""E2E: the read-only kubeconfig (what `drift` uses) can read everything and change nothing."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from harness.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def node(control_plane: ControlPlane) -> str:
    name = f"e2e-ro-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "-f", "-", input=json.dumps(_node(name)))
    return name


def _node(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def _readonly(
    plane: ControlPlane, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return plane.kubectl(*args, kubeconfig=plane.readonly_kubeconfig, input=stdin, check=False)


@pytest.mark.parametrize(
    "args",
    [
        ("get", "nodes", "-o", "name"),
        ("get", "clusterqueues.kueue.x-k8s.io", "-o", "name"),
        ("get", "queues.scheduling.volcano.sh", "-o", "name"),
        ("get", "nodefeaturerules.nfd.k8s-sigs.io", "-o", "name"),
        ("get", "clusterpolicies.nvidia.com", "-o", "name"),
    ],
)
def test_readonly_can_list(control_plane: ControlPlane, node: str, args: tuple[str, ...]) -> None:
    result = _readonly(control_plane, *args)
    assert result.returncode == 0, result.stderr


def test_readonly_can_get_node(control_plane: ControlPlane, node: str) -> None:
    result = _readonly(control_plane, "get", "node", node, "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metadata"]["name"] == node


@pytest.mark.parametrize(
    "args",
    [
        ("label", "node", "{node}", "hetgitops.io/touched=yes"),
        ("patch", "node", "{node}", "--type=merge", "-p", '{"spec":{"unschedulable":true}}'),
        ("delete", "node", "{node}"),
        ("create", "namespace", "e2e-ro-forbidden"),
    ],
    ids=["label", "patch", "delete", "create"],
)
def test_readonly_cannot_write(
    control_plane: ControlPlane, node: str, args: tuple[str, ...]
) -> None:
    result = _readonly(control_plane, *(arg.replace("{node}", node) for arg in args))
    assert result.returncode != 0
    assert "Forbidden" in result.stderr
    stored = json.loads(control_plane.kubectl("get", "node", node, "-o", "json").stdout)
    assert "hetgitops.io/touched" not in stored["metadata"].get("labels", {})
    assert not stored["spec"].get("unschedulable", False)


def test_readonly_cannot_create_custom_resources(control_plane: ControlPlane) -> None:
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "e2e-ro-forbidden"},
    }
    result = _readonly(control_plane, "create", "-f", "-", stdin=json.dumps(flavor))
    assert result.returncode != 0
    assert "Forbidden" in result.stderr
