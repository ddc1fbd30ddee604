"""E2E: the test control plane itself: upstream CRDs established, Nodes without a kubelet."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.controlplane.harness import ControlPlane

pytestmark = pytest.mark.e2e

# Written out rather than derived from tests/harness/upstream/sources.py: a CRD that silently stops
# being installed (renamed file, moved folder) must fail here.
EXPECTED_CRDS = {
    "admissionchecks.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "cohorts.kueue.x-k8s.io",
    "localqueues.kueue.x-k8s.io",
    "resourceflavors.kueue.x-k8s.io",
    "topologies.kueue.x-k8s.io",
    "workloadpriorityclasses.kueue.x-k8s.io",
    "workloads.kueue.x-k8s.io",
    "jobs.batch.volcano.sh",
    "podgroups.scheduling.volcano.sh",
    "queues.scheduling.volcano.sh",
    "hypernodes.topology.volcano.sh",
    "nodefeatures.nfd.k8s-sigs.io",
    "nodefeaturegroups.nfd.k8s-sigs.io",
    "nodefeaturerules.nfd.k8s-sigs.io",
    "clusterpolicies.nvidia.com",
    "nvidiadrivers.nvidia.com",
    "jobsets.jobset.x-k8s.io",
    "pytorchjobs.kubeflow.org",
    "trainjobs.trainer.kubeflow.org",
    "clustertrainingruntimes.trainer.kubeflow.org",
    "leaderworkersets.leaderworkerset.x-k8s.io",
}

GPU_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/mig.config": "all-1g.10gb",
    "hetgitops.io/pool": "training",
}


@pytest.fixture
def node(control_plane: ControlPlane) -> Iterator[str]:
    """A labelled Node created straight through the API (nothing runs a kubelet)."""
    name = f"e2e-gpu-{uuid.uuid4().hex[:8]}"
    manifest = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": GPU_LABELS},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
    }
    control_plane.kubectl("create", "-f", "-", input=json.dumps(manifest))
    yield name
    control_plane.kubectl("delete", "node", name, "--ignore-not-found")


def test_every_upstream_crd_is_established(control_plane: ControlPlane) -> None:
    listing = json.loads(control_plane.kubectl("get", "crd", "-o", "json").stdout)
    established = {
        crd["metadata"]["name"]
        for crd in listing["items"]
        for condition in crd.get("status", {}).get("conditions", [])
        if condition["type"] == "Established" and condition["status"] == "True"
    }
    assert EXPECTED_CRDS - established == set()


def test_node_labels_round_trip(control_plane: ControlPlane, node: str) -> None:
    stored = json.loads(control_plane.kubectl("get", "node", node, "-o", "json").stdout)
    assert GPU_LABELS.items() <= stored["metadata"]["labels"].items()
    # TaintNodesByCondition adds node.kubernetes.io/not-ready next to ours: no kubelet reports.
    assert {"key": "nvidia.com/gpu", "effect": "NoSchedule"} in stored["spec"]["taints"]


def test_nodes_selectable_by_label(control_plane: ControlPlane, node: str) -> None:
    selector = "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3,hetgitops.io/pool=training"
    names = control_plane.kubectl("get", "nodes", "-l", selector, "-o", "name").stdout.split()
    assert f"node/{node}" in names


# The GPU Operator's own assets (its default mig-parted ConfigMap) name their namespace with a
# placeholder the operator replaces with its own when it creates them.
OPERATOR_NAMESPACE = 'namespace: "FILLED BY THE OPERATOR"'


def test_upstream_examples_pass_the_real_api_server(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """Every upstream example in tests/harness/upstream, the GPU Operator's ClusterPolicy sample too
    (it relies on CRD defaults and null pruning, which the API server applies before validating a
    create or update). Client-side apply, as the samples' own docs do: server-side apply checks
    the applied configuration itself, where the sample's `plugin: null` is refused ("must be of
    type object")."""
    from harness import upstream

    examples = sorted(upstream.folder().glob("*/examples/*.yaml"))
    assert {path.parent.parent.name for path in examples} >= {"kueue", "volcano", "nfd", "nvidia"}
    files = []
    for path in examples:
        text = path.read_text()
        if OPERATOR_NAMESPACE in text:  # as the operator creates it, in its namespace
            path = tmp_path / path.name
            path.write_text(text.replace(OPERATOR_NAMESPACE, "namespace: default"))
        files += ["-f", str(path)]
    applied = control_plane.kubectl(
        "apply", "--dry-run=server", "-n", "default", "-o", "name", *files, check=False
    )
    assert applied.returncode == 0, applied.stderr  # which example the server refused, and why
    assert len(applied.stdout.split()) >= len(examples)
