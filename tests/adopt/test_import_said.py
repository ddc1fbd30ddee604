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


NAMESPACES = """---
apiVersion: v1
kind: Namespace
metadata:
  name: nlp
  labels: {team: nlp, env: prod}
"""


def test_namespace_labels_the_selector_matches_are_kept(tmp_path: Path) -> None:
    """ClusterQueue nlp selects `team: nlp`; its namespace carries it (and `env`, which no
    selector names and the policy leaves to the cluster)."""
    got = import_text(CLUSTER.read_text() + NAMESPACES, tmp_path / "p")
    assert got.found == []
    assert _docs(got.files["teams.yaml"])["nlp"]["namespaceLabels"] == {"team": "nlp"}
    labels = _rendered(got.rendered, "Namespace", "nlp")["metadata"]["labels"]
    assert labels["team"] == "nlp" and "env" not in labels
    assert _rendered(got.rendered, "ClusterQueue", "nlp")["spec"]["namespaceSelector"] == {
        "matchLabels": {"team": "nlp"}
    }


def test_a_dump_without_namespaces_keeps_the_selectors_labels(tmp_path: Path) -> None:
    """No Namespace in the input: the team's LocalQueues are in its namespaces, so they carry
    what the selector matches; without it the written policy would not validate
    (namespace-selector-misses)."""
    got = import_text(CLUSTER.read_text(), tmp_path / "p")
    assert _docs(got.files["teams.yaml"])["nlp"]["namespaceLabels"] == {"team": "nlp"}
    assert not [d for d in got.rendered.diagnostics if d.rule == "namespace-selector-misses"]


def test_a_team_namespace_the_queue_does_not_select_is_named(tmp_path: Path) -> None:
    """nlp-dev holds a LocalQueue of nlp but lacks `team: nlp`: Kueue admits nothing from it
    today. The policy labels every team namespace alike, so the first sync makes the queue
    select it: said at the Namespace, not done in silence."""
    text = CLUSTER.read_text().replace(
        "spec: {clusterQueue: nlp, stopPolicy: Hold}\n",
        "spec: {clusterQueue: nlp, stopPolicy: Hold}\n---\napiVersion: kueue.x-k8s.io/v1beta2\n"
        "kind: LocalQueue\nmetadata: {name: gpu, namespace: nlp-dev}\n"
        "spec: {clusterQueue: nlp, stopPolicy: Hold}\n",
    )
    text += NAMESPACES + NAMESPACES.replace("nlp, env: prod", "nlp-dev").replace(
        "name: nlp\n", "name: nlp-dev\n"
    )
    got = import_text(text, tmp_path / "p")
    assert _docs(got.files["teams.yaml"])["nlp"]["namespaceLabels"] == {"team": "nlp"}
    assert got.found == [
        "import-field-changes: Namespace nlp-dev: the first sync labels it so that ClusterQueue "
        "nlp's namespaceSelector selects it: Kueue starts admitting its workloads to that queue"
    ]


QUOTA = """---
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: nlp}
spec:
  hard: {requests.nvidia.com/gpu: "4", pods: "50"}
"""


def test_a_namespace_quota_capping_below_the_reach_is_kept(tmp_path: Path) -> None:
    """nlp's queue can admit more than 4 GPUs (its quota and what it may borrow); the cluster's
    quota caps 4: kept as `accelerators`, rendered as the cluster has it, and warned about."""
    got = import_text(CLUSTER.read_text() + QUOTA, tmp_path / "p")
    quota = _docs(got.files["teams.yaml"])["nlp"]["namespaceQuota"]
    assert quota == {
        "name": "gpus",
        "accelerators": {"nvidia.com/gpu": "4"},
        "hard": {"pods": "50"},
    }
    rendered = [
        m.obj
        for m in got.rendered.manifests
        if m.obj["kind"] == "ResourceQuota" and m.obj["metadata"]["namespace"] == "nlp"
    ]
    assert [q["spec"]["hard"] for q in rendered] == [{"pods": "50", "requests.nvidia.com/gpu": "4"}]
    assert [f.split(":")[0] for f in got.found] == ["namespace-quota-below-reach"]


def test_a_namespace_quota_at_the_reach_writes_no_caps(tmp_path: Path) -> None:
    first = import_text(CLUSTER.read_text() + QUOTA, tmp_path / "a")
    reach = first.rendered.policy
    assert reach is not None
    from hetgitops.plan.quota_plan import admissible

    most = admissible(reach, reach.teams["nlp"])["nvidia.com/gpu"]
    got = import_text(CLUSTER.read_text() + QUOTA.replace('"4"', f'"{most}"'), tmp_path / "b")
    assert _docs(got.files["teams.yaml"])["nlp"]["namespaceQuota"] == {
        "name": "gpus",
        "hard": {"pods": "50"},
    }
    assert got.found == []
