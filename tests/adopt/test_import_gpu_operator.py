"""hetgitops import of the GPU Operator's configuration: MIG layouts (the nodes'
nvidia.com/mig.config label and the mig-parted ConfigMap) and device-plugin time-slicing, from
a hand-written cluster and from the operator's own default mig-parted config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hetgitops.adopt import sources
from hetgitops.adopt.run import import_objects
from tests.adopt.importing import HERE, import_text

CLUSTER = HERE / "cluster_gpu_operator.yaml"


def test_mig_and_time_slicing_import_and_render_back_unchanged(tmp_path: Path) -> None:
    got = import_text(CLUSTER.read_text(), tmp_path / "p")
    files, rendered = got.files, got.rendered
    assert got.found == []  # every ClusterQueue and both ConfigMaps render as the cluster has them
    pools = {p["metadata"]["name"]: p["spec"] for p in yaml.safe_load_all(files["pools.yaml"])}
    assert pools["a100"]["mig"] == {
        "configName": "a100-half",
        "devices": [{"gpus": [0, 1, 2, 3], "profiles": {"1g.5gb": 7}}],
    }
    assert pools["a100"]["cardsPerNode"] == 8  # GFD's count, not the 4 whole GPUs advertised
    assert pools["h100"]["mig"]["devices"] == [{"gpus": "all", "profiles": {"1g.10gb": 7}}]
    assert pools["l40s"]["timeSlicing"] == {"replicas": 4, "configName": "l40s-shared"}
    assert pools["l40s"]["cardsPerNode"] == 4
    fleet = yaml.safe_load(files["fleet.yaml"])["spec"]
    assert fleet["gpuOperator"] == {
        "namespace": "gpu-operator",
        "migConfigName": "custom-mig-parted-config",
        "devicePluginConfigName": "time-slicing-config",
        "migStrategy": "mixed",
    }
    assert "gpu-operator" in fleet["targets"]
    teams = {t["metadata"]["name"]: t["spec"] for t in yaml.safe_load_all(files["teams.yaml"])}
    assert teams["inference"]["quotas"][0] == {"pool": "a100", "cards": 8, "mig": {"1g.5gb": 14}}
    maps = {
        m.obj["metadata"]["name"] for m in rendered.manifests if m.obj.get("kind") == "ConfigMap"
    }
    assert maps == {"custom-mig-parted-config", "time-slicing-config"}


def test_a_sharing_setting_the_policy_would_change_is_located(tmp_path: Path) -> None:
    """A device-plugin config key no node uses, which the render leaves out: no sync removes
    a ConfigMap key it never set (server-side apply keeps the other manager's key; a first
    client-side apply has no record of it), so the cluster keeps it: reported as such."""
    text = CLUSTER.read_text().replace(
        "  l40s-shared: |\n",
        "  unused: |\n    version: v1\n    flags:\n      migStrategy: mixed\n  l40s-shared: |\n",
    )
    assert import_text(text, tmp_path / "p").found == [
        "import-field-changes: ConfigMap gpu-operator/time-slicing-config: the policy does not "
        'declare data.unused (the cluster has {"flags": {"migStrategy": "mixed"}, "version": '
        '"v1"}); a sync leaves it as it is (no apply removes a field it never set; Argo CD\'s '
        "Replace=true would), so the cluster keeps doing what the policy does not say: declare "
        "it, or remove it from the cluster by hand"
    ]


def _operator_config() -> Path | None:
    from harness import upstream

    if upstream.missing():
        return None
    return upstream.folder() / "nvidia" / "examples" / "default-mig-parted-config.yaml"


NODES = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: h100-0
    labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.count: "8",
             nvidia.com/mig.config: all-1g.10gb}
  status: {allocatable: {nvidia.com/mig-1g.10gb: "56"}}
- apiVersion: v1
  kind: Node
  metadata:
    name: a100-0
    labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB, nvidia.com/gpu.count: "8",
             nvidia.com/mig.config: all-1g.10gb}
  status: {allocatable: {nvidia.com/mig-1g.10gb: "32"}}
- apiVersion: v1
  kind: Node
  metadata:
    name: a800-0
    labels: {nvidia.com/gpu.product: NVIDIA-A800-SXM4-80GB, nvidia.com/gpu.count: "8",
             nvidia.com/mig.config: all-balanced}
  status: {allocatable: {nvidia.com/mig-1g.10gb: "16", nvidia.com/mig-2g.20gb: "8",
                         nvidia.com/mig-3g.40gb: "8"}}
"""


def test_the_operators_own_mig_configs_import_per_card_by_device_filter(tmp_path: Path) -> None:
    """all-1g.10gb means 7 slices on an H100 and 4 on an A100-40GB (its device filters);
    all-balanced on an A800-80GB is 2x1g, 1x2g, 1x3g. The operator's ConfigMap stays its own."""
    config = _operator_config()
    if config is None:
        pytest.skip("upstream modules unavailable")
    read = sources.Read()
    sources.from_text("nodes.yaml", NODES, read)
    sources.from_text(str(config), config.read_text(), read)
    result = import_objects(read, tmp_path / "p", cluster="lab")
    assert result.rendered is not None and not result.rendered.failed()
    pools = {
        p["metadata"]["name"]: p["spec"] for p in yaml.safe_load_all(result.files["pools.yaml"])
    }
    layouts = {n: (p["mig"]["configName"], p["mig"]["devices"]) for n, p in pools.items()}
    assert layouts == {
        "h100-80gb": ("all-1g.10gb", [{"gpus": "all", "profiles": {"1g.10gb": 7}}]),
        "a100-40gb": ("all-1g.10gb", [{"gpus": "all", "profiles": {"1g.10gb": 4}}]),
        "a800-80gb": (
            "all-balanced",
            [{"gpus": "all", "profiles": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}],
        ),
    }
    assert "gpu-operator" not in yaml.safe_load(result.files["fleet.yaml"])["spec"]["targets"]


def test_without_gpu_feature_discovery_a_node_counts_its_mig_gpus_too(tmp_path: Path) -> None:
    """No GFD `nvidia.com/gpu.count` label (the simulated fleet has none): a mixed-strategy
    node advertises only its whole GPUs as nvidia.com/gpu, so the MIG layout's GPUs (listed,
    or an `all` entry's, from its slices) are added. Counting the whole ones alone made the
    a100 pool 4 cards a node and the h100 pool 1, whose quotas no node could hold."""
    text = CLUSTER.read_text()
    for count in ('"8"', '"4"'):
        text = text.replace(f"nvidia.com/gpu.count: {count}, ", "")
    assert "gpu.count" not in text
    got = import_text(text, tmp_path / "p")
    assert got.found == []
    pools = {p["metadata"]["name"]: p["spec"] for p in yaml.safe_load_all(got.files["pools.yaml"])}
    assert {name: pool["cardsPerNode"] for name, pool in pools.items()} == {
        "a100": 8,  # 4 whole + GPUs 0-3 in MIG mode
        "h100": 8,  # all in MIG mode: 56 slices of 1g.10gb at 7 a GPU
        "l40s": 4,  # 16 replicas at 4 a GPU
    }
