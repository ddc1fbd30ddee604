"""`import` says what the first sync creates (issue 32 item 6): every rendered object the input
lacks, per kind, at the policy line of the first, with a word when the input held no object of
that kind at all; an object the input holds is never listed."""

from __future__ import annotations

from pathlib import Path

from hetgitops.adopt.creates import SHOWN, first_sync_creates
from hetgitops.diagnostics import Severity
from tests.adopt.importing import import_text

CLUSTER = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {gpu: a100}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: vision}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: vision, namespace: vision}
spec: {clusterQueue: vision}
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-1
  labels: {gpu: a100, nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, nvidia.com/gpu.count: "8"}
status: {allocatable: {nvidia.com/gpu: "8", cpu: "128", memory: 1Ti}}
"""


def _creates(text: str, tmp_path: Path) -> list[str]:
    got = import_text(text, tmp_path / "policy")
    return [
        d.message
        for d in got.result.diagnostics
        if d.rule == "import-first-sync-creates" and d.severity == Severity.INFO
    ]


def test_the_objects_the_input_lacks_are_listed_per_kind(tmp_path: Path) -> None:
    creates = _creates(CLUSTER, tmp_path)
    assert any(
        m.startswith("the first sync creates 1 ResourceQuota: vision/hetgitops-accelerators")
        and "the input holds no ResourceQuota at all" in m
        for m in creates
    ), creates
    # The imported ClusterQueue, LocalQueue and flavor are the cluster's: never "created".
    assert not [m for m in creates if "ClusterQueue" in m or "LocalQueue" in m], creates


def test_a_kind_the_input_holds_gets_no_unread_word(tmp_path: Path) -> None:
    namespace = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n"
    creates = _creates(CLUSTER + namespace, tmp_path)
    (line,) = [m for m in creates if "Namespace" in m]
    assert line == "the first sync creates 1 Namespace: vision"


def test_long_lists_are_counted_not_spelled() -> None:
    from hetgitops.adopt.sources import Read, from_text
    from hetgitops.output.manifests import Manifest

    read = Read()
    from_text("c.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: kept}\n", read)
    rendered = [
        Manifest(
            "core", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"n{k:02d}"}}
        )
        for k in range(SHOWN + 3)
    ] + [Manifest("core", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kept"}})]
    (found,) = list(first_sync_creates(read.objects, rendered))
    assert found.message == (
        f"the first sync creates {SHOWN + 3} Namespace: "
        + ", ".join(f"n{k:02d}" for k in range(SHOWN))
        + " and 3 more"
    )
