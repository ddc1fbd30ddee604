"""hetgitops import: a node's card is matched against the catalogue `init` offers."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.adopt.importing import import_text

# One H200 node as GPU feature discovery labels it: NVML's name "NVIDIA H200", spaces -> "-".
H200_CLUSTER = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-h200-01
    labels: {nvidia.com/gpu.product: NVIDIA-H200, node-pool: h200}
  status:
    allocatable: {cpu: "192", memory: 2Ti, nvidia.com/gpu: "8"}
    nodeInfo: {kubeletVersion: v1.33.2}
"""


def test_an_h200_node_imports_as_the_catalogue_h200_with_its_performance(
    tmp_path: Path,
) -> None:
    """Import read only policies/cards/ and wrote an H200 as an unknown card with a TODO
    coefficient, although `init --card h200-141gb` offers it."""
    imported = import_text(H200_CLUSTER, tmp_path / "policy")
    cards = [d for d in yaml.safe_load_all(imported.files["cards.yaml"]) if d]
    assert [c["metadata"]["name"] for c in cards] == ["h200-141gb"]
    spec = cards[0]["spec"]
    assert spec["performance"] == {
        "coefficient": 3.17,
        "reference": "A100-SXM4-80GB",
        "benchmark": "dense-bf16-tflops",
        "coefficientSet": "spec-sheet",
    }
    assert (spec["memoryGiB"], spec["mig"]) == (141, {"profileTable": "H200-141GB"})
    pools = [d for d in yaml.safe_load_all(imported.files["pools.yaml"]) if d]
    assert [p["spec"]["cardType"] for p in pools] == ["h200-141gb"]
    assert not [f for f in imported.found if f.startswith("import-unknown-card")]
    assert "TODO: not in hetgitops' catalogue" not in imported.files["cards.yaml"]
