"""hetgitops import: a ClusterQueue limiting its GPUs only (cpu and memory without limits) and
cpu/memory per card that differ between its pools come into quota entries' `hostLimits` and
`cpuPerCard` / `memoryPerCard`, and render back unchanged (issue 32 item 5)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.adopt.importing import HERE, import_text
from tests.adopt.importing import rendered_object as _rendered

CLUSTER = HERE / "cluster_a100.yaml"
LIMITED = """\
      - {name: cpu, nominalQuota: 96, borrowingLimit: 96}
      - {name: memory, nominalQuota: 768Gi, borrowingLimit: 768Gi}
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 8}
"""
GPU_ONLY = """\
      - {name: cpu, nominalQuota: 96}
      - {name: memory, nominalQuota: 768Gi}
      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 8}
"""
NLP_H100 = """\
      - {name: cpu, nominalQuota: 128}
      - {name: memory, nominalQuota: 1Ti}
      - {name: nvidia.com/gpu, nominalQuota: 8}
"""
# nlp holds the a100s too, at 24 cpu and 256Gi a card where its h100s have 16 and 128Gi.
NLP_TWO_POOLS = (
    NLP_H100
    + """\
    - name: a100
      resources:
      - {name: cpu, nominalQuota: 96}
      - {name: memory, nominalQuota: 1Ti}
      - {name: nvidia.com/gpu, nominalQuota: 4}
"""
)


def _teams(files: dict[str, str]) -> dict[str, dict]:  # type: ignore[type-arg]
    return {t["metadata"]["name"]: t["spec"] for t in yaml.safe_load_all(files["teams.yaml"])}


def _queue_findings(found: list[str]) -> list[str]:
    return [f for f in found if "ClusterQueue" in f]


def test_gpu_only_limits_import_as_host_limits_false(tmp_path: Path) -> None:
    text = CLUSTER.read_text()
    assert text.count(LIMITED) == 1
    text = text.replace(LIMITED, GPU_ONLY)
    got = import_text(text, tmp_path / "p")
    assert _queue_findings(got.found) == []
    (quota,) = _teams(got.files)["vision"]["quotas"]
    assert quota == {"pool": "a100", "cards": 8, "borrowingLimit": 8, "hostLimits": False}
    resources = _rendered(got.rendered, "ClusterQueue", "vision")["spec"]["resourceGroups"][0]
    by_name = {r["name"]: r for r in resources["flavors"][0]["resources"]}
    assert by_name["cpu"] == {"name": "cpu", "nominalQuota": "96"}
    assert by_name["nvidia.com/gpu"]["borrowingLimit"] == "8"


def test_limits_on_every_resource_keep_the_default(tmp_path: Path) -> None:
    got = import_text(CLUSTER.read_text(), tmp_path / "p")
    assert "hostLimits" not in _teams(got.files)["vision"]["quotas"][0]


def test_per_pool_cpu_and_memory_import_on_the_quota_entry(tmp_path: Path) -> None:
    text = CLUSTER.read_text()
    assert text.count(NLP_H100) == 1
    text = text.replace(NLP_H100, NLP_TWO_POOLS)
    got = import_text(text, tmp_path / "p")
    assert _queue_findings(got.found) == []
    nlp = _teams(got.files)["nlp"]
    assert (nlp["cpuPerCard"], nlp["memoryPerCard"]) == ("16", "128Gi")
    h100, a100 = nlp["quotas"]
    assert "cpuPerCard" not in h100 and "memoryPerCard" not in h100
    assert (a100["cpuPerCard"], a100["memoryPerCard"]) == ("24", "256Gi")


def test_mig_profiles_limited_unlike_amounts_import_per_profile(tmp_path: Path) -> None:
    """clustergen seed 7: team nlp limits each MIG profile to its own count (GPU-only limits on
    a MIG pool): one borrowingLimit cannot say it; `migBorrowingLimits` does, and the queue's
    limits are no longer reported, nor its zero-quota flavors (`kueue.coveredResources`):
    the queue comes back as the cluster has it."""
    from tests.generated.clustergen import cluster

    got = import_text(cluster(7).text(), tmp_path / "p")
    first = _teams(got.files)["nlp"]["quotas"][0]
    assert first["mig"] == {"1g.5gb": 8, "2g.10gb": 4, "3g.20gb": 4}
    assert first["migBorrowingLimits"] == first["mig"]
    assert "borrowingLimit" not in first
    nlp = [f for f in got.found if f.startswith("import-field-changes: ClusterQueue nlp")]
    assert nlp == []
    # Every MIG profile of the fleet's two layouts, and no nvidia.com/gpu (all-MIG pools).
    covered = _teams(got.files)["nlp"]["kueue"]["coveredResources"]
    assert covered == [
        f"nvidia.com/mig-{p}"
        for p in ("1g.10gb", "1g.5gb", "2g.10gb", "2g.20gb", "3g.20gb", "3g.40gb")
    ]
