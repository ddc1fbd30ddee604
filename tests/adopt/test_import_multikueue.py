"""hetgitops import of a MultiKueue manager: its check, config and clusters are reported, each
with the Cluster document it would be, credentials by name only; import never lists Secrets."""

from __future__ import annotations

from pathlib import Path

from hetgitops.adopt import sources
from hetgitops.adopt.run import import_objects

CLUSTER = Path(__file__).parent / "cluster_multikueue.yaml"


def test_a_multikueue_manager_is_reported_as_the_cluster_documents_it_would_be(
    tmp_path: Path,
) -> None:
    read = sources.from_paths([CLUSTER])
    result = import_objects(read, tmp_path / "p", cluster="manager")
    found = {
        d.message.split(":")[0]: d
        for d in result.diagnostics
        if d.rule == "import-kind-not-imported"
    }
    assert set(found) == {
        "AdmissionCheck sample-multikueue is MultiKueue's (MultiKueueConfig multikueue-test)",
        "MultiKueueConfig multikueue-test dispatches to multikueue-test-worker1, "
        "multikueue-test-worker2",
        "MultiKueueCluster multikueue-test-worker1",
        "MultiKueueCluster multikueue-test-worker2",
    }
    worker1 = found["MultiKueueCluster multikueue-test-worker1"]
    assert "role worker and credentials {secret: worker1-secret}" in worker1.message
    worker2 = found["MultiKueueCluster multikueue-test-worker2"]
    assert "{clusterProfile: worker2-profile}" in worker2.message
    spans = {o.name: str(o.span) for o in read.objects}
    assert str(worker1.span) == spans["multikueue-test-worker1"]
    assert all(d.severity.name == "WARNING" for d in found.values())
    assert result.rendered is not None and not result.rendered.failed()


def test_import_never_lists_secrets() -> None:
    assert "secrets" not in {r.plural for r in sources.RESOURCES}
    assert {"multikueueconfigs", "multikueueclusters"} <= {r.plural for r in sources.RESOURCES}
