"""hetgitops import of Koordinator quota trees: not translated yet, but never dropped in
silence: each profile and quota is named with what it holds (issue 34 item 4, first step)."""

from __future__ import annotations

from pathlib import Path

from hetgitops.adopt import sources
from hetgitops.adopt.run import import_objects

HERE = Path(__file__).parent
CLUSTER = HERE / "cluster_koordinator.yaml"


def test_a_hand_written_tree_is_reported_object_by_object(tmp_path: Path) -> None:
    read = sources.from_paths([CLUSTER])
    result = import_objects(read, tmp_path / "p", cluster="lab")
    said = [d.message for d in result.diagnostics if d.rule == "import-kind-not-imported"]
    # Koordinator's own koordinator-root-quota is Koordinator's: not reported.
    assert [m.split(" (")[0].split(":")[0] for m in said] == [
        "ElasticQuotaProfile a100-profile",
        "ElasticQuota a100-root",
        "ElasticQuota research",
        "ElasticQuota vision-team",
    ]
    profile, root, parent, leaf = said
    assert "gpu.example.com/model=a100" in profile and "resourceRatio 1" in profile
    assert "root quota the profile controller writes for ElasticQuotaProfile a100-profile" in root
    assert "parent quota under a100-root" in parent
    assert "min {cpu: 64, memory: 512Gi, nvidia.com/gpu: 4}" in leaf
    assert "allow-lent-resource unset (true)" in leaf and 'namespaces ["vision"]' in leaf
    assert all("outside the policy" in m for m in said)
    assert all(d.span.file == str(CLUSTER) for d in result.diagnostics if d.message in said)


def test_the_live_reader_lists_the_tree_kinds() -> None:
    listed = {(r.group, r.plural) for r in sources.RESOURCES}
    assert ("quota.koordinator.sh", "elasticquotaprofiles") in listed
    assert ("scheduling.sigs.k8s.io", "elasticquotas") in listed
