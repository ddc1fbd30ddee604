"""hetgitops import of Volcano Queues: a hand-written Volcano cluster (nodegroups, a parent
queue, weights, reclaimable, guarantee, no capability) and Volcano's own examples."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hetgitops.adopt import sources
from hetgitops.adopt.engine import import_objects

HERE = Path(__file__).parent
CLUSTER = HERE / "cluster_volcano.yaml"


def test_a_volcano_cluster_imports_and_its_leaf_queues_render_back_unchanged(
    tmp_path: Path,
) -> None:
    read = sources.from_paths([CLUSTER])
    result = import_objects(read, tmp_path / "p", cluster="lab")
    found = sorted((d.rule, d.message.split(":")[0][:34]) for d in result.diagnostics)
    # No import-field-changes: every leaf renders as the cluster has it. Parent, root and
    # default stay Volcano's; the teams need namespaces; nodes already carry the nodegroups.
    assert found == [
        ("import-kind-not-imported", "Queue research is a parent queue"),
        ("import-team-without-namespace", "Queue nlp belongs to no ClusterQue"),
        ("import-team-without-namespace", "Queue vision belongs to no Cluster"),
        ("targets-incomplete", "target 'volcano' without 'nodes'"),
    ]  # fmt: skip
    teams = {
        t["metadata"]["name"]: t["spec"] for t in yaml.safe_load_all(result.files["teams.yaml"])
    }
    assert teams["vision"]["volcano"] == {
        "weight": 4, "omitCapability": True, "parent": "research", "queueNames": {"a100": "vision"}
    }  # fmt: skip
    assert teams["nlp"]["volcano"]["reclaimable"] is False
    assert teams["nlp"]["volcano"]["guaranteePercent"] == 50
    assert teams["nlp"]["quotas"] == [{"pool": "h100", "cards": 8}]
    fleet = yaml.safe_load(result.files["fleet.yaml"])
    assert fleet["spec"]["targets"] == ["core", "volcano"]
    assert result.rendered is not None
    queues = {
        m.obj["metadata"]["name"] for m in result.rendered.manifests if m.obj.get("kind") == "Queue"
    }
    assert queues == {"vision", "nlp"}  # fmt: skip


def test_a_leaf_the_language_cannot_say_is_reported_at_its_team(tmp_path: Path) -> None:
    """A guarantee on cpu alone (no accelerator share gives it) is a located field change."""
    text = CLUSTER.read_text().replace(
        'resource: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "4"}', 'resource: {cpu: "10"}'
    )
    read = sources.Read()
    sources.from_text("cluster.yaml", text, read)
    result = import_objects(read, tmp_path / "p", cluster="lab")
    changes = [d for d in result.diagnostics if d.rule == "import-field-changes"]
    assert [d.message.split(":")[0] for d in changes] == ["Queue nlp"]
    assert changes[0].span.file.endswith("teams.yaml")


def _volcano_examples() -> list[Path]:
    import upstream

    if upstream.missing():
        return []
    return sorted((upstream.folder() / "volcano" / "examples").glob("*queue*.yaml"))


@pytest.mark.parametrize("example", _volcano_examples(), ids=lambda p: p.name)
def test_volcano_example_queues_import_to_a_valid_policy_and_each_is_reported(
    example: Path, tmp_path: Path
) -> None:
    """Volcano's example queues bind to no accelerator pool (cpu capability, no nodegroup):
    each is reported, none dropped, and the written policy validates."""
    read = sources.from_paths([example])
    queues = [o.name for o in read.objects if o.kind == "Queue"]
    assert queues
    result = import_objects(read, tmp_path / "p", cluster="lab")
    assert result.rendered is not None
    assert [d for d in result.rendered.diagnostics if d.severity.name == "ERROR"] == []
    reported = {d.message.split(":")[0].split(" ")[1] for d in result.diagnostics
                if d.rule.startswith("import-")}  # fmt: skip
    assert set(queues) <= reported
