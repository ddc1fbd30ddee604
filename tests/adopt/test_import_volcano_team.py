"""hetgitops import of Volcano queues as hand-written clusters have them (issue 32 item 5): one
queue per team across its pools (`volcano.layout: team`), and queues whose amounts name the
accelerators only (`volcano.resources: accelerators`). Both come back from the written policy's
render as the cluster has them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hetgitops.adopt import roundtrip
from tests.adopt.importing import Imported, import_text, imported_objects
from tests.generated.clustergen import cluster

SPANNING = 1002  # a seed whose Volcano queues span each team's pools (clustergen)
PER_POOL = 1000  # a seed with one GPU-only leaf per (team, pool)


def _teams(got: Imported) -> dict[str, dict[str, Any]]:
    docs = yaml.safe_load_all(got.files["teams.yaml"])
    return {t["metadata"]["name"]: t["spec"] for t in docs if t}


def _queue_findings(got: Imported) -> list[str]:
    return [
        f"{d.rule}: {d.message}"
        for d in got.result.diagnostics
        if d.message.startswith("Queue ") and d.rule != "import-kind-not-imported"
    ]


def _unchanged(text: str, got: Imported, kind: str = "Queue") -> list[str]:
    """The names of the cluster's objects of `kind` the render writes back alike."""
    rendered = {
        m.obj["metadata"]["name"]: m for m in got.rendered.manifests if m.obj.get("kind") == kind
    }
    alike = []
    for item in imported_objects(text):
        found = rendered.get(item.name)
        if item.kind == kind and found is not None and not list(roundtrip.check([item], [found])):
            alike.append(item.name)
    return alike


def test_a_queue_spanning_a_teams_pools_becomes_its_one_queue(tmp_path: Path) -> None:
    generated = cluster(SPANNING)
    assert "volcano-spanning" in generated.constructs
    text = generated.text()
    got = import_text(text, tmp_path / "p")
    spanning = [w.removeprefix("Queue ") for w in generated.sayable["volcano-spanning"]]
    teams = _teams(got)
    kept = [n for n in spanning if n in teams]
    assert kept
    for name in kept:
        volcano = teams[name]["volcano"]
        assert volcano["layout"] == "team"
        assert "capability" in volcano and "queueNames" not in volcano
    assert any(len(teams[n]["quotas"]) > 1 for n in kept)  # one queue over several pools
    assert _queue_findings(got) == []
    assert sorted(_unchanged(text, got)) == sorted(kept)


def test_gpu_only_leaves_keep_naming_the_gpus_only(tmp_path: Path) -> None:
    generated = cluster(PER_POOL)
    text = generated.text()
    got = import_text(text, tmp_path / "p")
    leaves = [w.removeprefix("Queue ") for w in generated.sayable["volcano-deserved-gpu-only"]]
    assert leaves
    volcano = [t.get("volcano", {}) for t in _teams(got).values()]
    assert {v.get("resources") for v in volcano if "queueNames" in v or v} == {"accelerators"}
    assert not [f for f in _queue_findings(got) if "deserved" in f or "capability" in f]
    assert sorted(_unchanged(text, got)) == sorted(leaves)


def test_a_team_has_one_queue_or_leaves_not_both(tmp_path: Path) -> None:
    """A leaf beside the team's spanning queue stays the cluster's, named at its line."""
    generated = cluster(SPANNING)
    team = generated.sayable["volcano-spanning"][0].removeprefix("Queue ")
    node = next(o for o in generated.objects if o["kind"] == "Node")
    group = node["metadata"]["labels"].setdefault("volcano.sh/nodegroup-name", "extra-group")
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": [group]}
    leaf = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": f"{team}-extra", "labels": {"example.com/team": team}},
        "spec": {
            "weight": 1,
            "deserved": {"nvidia.com/gpu": "1"},
            "affinity": {"nodeGroupAffinity": affinity},
        },
    }
    generated.objects.append(leaf)
    got = import_text(generated.text(), tmp_path / "p")
    named = [f for f in _queue_findings(got) if f"Queue {team}-extra" in f]
    assert named, _queue_findings(got)
    assert all(f.startswith("import-object-not-adopted") for f in named), named


def test_a_spanning_queue_of_no_team_is_named_with_why(tmp_path: Path) -> None:
    generated = cluster(SPANNING)
    generated.objects.append(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "nobody"},
            "spec": {"weight": 1, "capability": {"nvidia.com/gpu": "4", "example.com/npu": "2"}},
        }
    )
    got = import_text(generated.text(), tmp_path / "p")
    named = [f for f in _queue_findings(got) if f.split(": ", 1)[1].startswith("Queue nobody:")]
    assert len(named) == 1 and "no team of its name, team label or namespace" in named[0]
