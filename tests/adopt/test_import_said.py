"""hetgitops import: what hand-written clusters say that the language learnt to say (issue 32
item 5): a WorkloadPriorityClass's own description, the Namespace labels a ClusterQueue's
namespaceSelector matches, a namespace ResourceQuota's own accelerator caps. Each comes into
the policy and renders back as the cluster has it, with no finding."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.adopt.importing import HERE, import_text
from tests.adopt.importing import rendered_object as _rendered

CLUSTER = HERE / "cluster_a100.yaml"


def _docs(text: str) -> dict[str, dict]:  # type: ignore[type-arg]
    return {d["metadata"]["name"]: d["spec"] for d in yaml.safe_load_all(text)}


def test_a_workload_priority_class_with_its_own_description_is_kept(tmp_path: Path) -> None:
    text = CLUSTER.read_text().replace(
        "kind: WorkloadPriorityClass\nmetadata: {name: batch}\nvalue: 1000\n"
        "description: Batch work.\n",
        "kind: WorkloadPriorityClass\nmetadata: {name: batch}\nvalue: 1000\n"
        "description: Kueue batch, admitted in order.\n",
    )
    got = import_text(text, tmp_path / "p")
    assert got.found == []
    tier = _docs(got.files["tiers.yaml"])["batch"]
    assert tier["description"] == "Batch work."
    assert tier["workloadDescription"] == "Kueue batch, admitted in order."
    wpc = _rendered(got.rendered, "WorkloadPriorityClass", "batch")
    assert wpc["description"] == "Kueue batch, admitted in order."
    assert _rendered(got.rendered, "PriorityClass", "batch")["description"] == "Batch work."


def test_a_workload_priority_class_without_a_description_renders_none(tmp_path: Path) -> None:
    text = CLUSTER.read_text().replace(
        "kind: WorkloadPriorityClass\nmetadata: {name: batch}\nvalue: 1000\n"
        "description: Batch work.\n",
        "kind: WorkloadPriorityClass\nmetadata: {name: batch}\nvalue: 1000\n",
    )
    got = import_text(text, tmp_path / "p")
    assert got.found == []
    assert _docs(got.files["tiers.yaml"])["batch"]["workloadDescription"] == ""
    assert "description" not in _rendered(got.rendered, "WorkloadPriorityClass", "batch")


def test_the_same_description_writes_no_workload_description(tmp_path: Path) -> None:
    got = import_text(CLUSTER.read_text(), tmp_path / "p")
    assert "workloadDescription" not in _docs(got.files["tiers.yaml"])["batch"]
