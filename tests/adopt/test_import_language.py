"""hetgitops import: what a cluster commonly carries beyond quotas (fair-sharing weights,
admission checks) comes into the policy and renders back unchanged."""

from __future__ import annotations

from pathlib import Path

import yaml

from hetgitops import api
from tests.adopt.importing import HERE, import_text, imported_objects
from tests.adopt.importing import rendered_object as _rendered

CLUSTER = HERE / "cluster_a100.yaml"


def test_fair_sharing_weights_and_admission_checks_import_and_render_back(
    tmp_path: Path,
) -> None:
    text = CLUSTER.read_text()
    text = text.replace(
        "  cohortName: research\n  namespaceSelector: {}\n",
        "  cohortName: research\n  namespaceSelector: {}\n  fairSharing: {weight: 2500m}\n",
    )
    text = text.replace(
        "  stopPolicy: Hold\n",
        "  stopPolicy: Hold\n  fairSharing: {}\n  admissionChecksStrategy:\n"
        "    admissionChecks:\n    - {name: dws-prov, onFlavors: [h100]}\n    - {name: budget}\n",
    )
    text = text.replace(
        "metadata: {name: research}\n",
        "metadata: {name: research}\nspec:\n  fairSharing: {weight: 3}\n",
    )
    got = import_text(text, tmp_path / "p")
    files, rendered = got.files, got.rendered
    assert got.found == []
    teams = {t["metadata"]["name"]: t["spec"] for t in yaml.safe_load_all(files["teams.yaml"])}
    assert teams["vision"]["kueue"]["fairSharingWeight"] == "2500m"
    assert teams["nlp"]["kueue"]["fairSharingWeight"] == "1"
    assert teams["nlp"]["kueue"]["admissionChecks"] == [
        {"name": "dws-prov", "onPools": ["h100"]},
        {"name": "budget"},
    ]
    fleet = yaml.safe_load(files["fleet.yaml"])
    assert fleet["spec"]["cohorts"] == [{"name": "research", "fairSharingWeight": "3"}]
    nlp = _rendered(rendered, "ClusterQueue", "nlp")["spec"]
    assert nlp["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "dws-prov", "onFlavors": ["h100"]}, {"name": "budget"}]
    }
    assert _rendered(rendered, "ClusterQueue", "vision")["spec"]["fairSharing"] == {
        "weight": "2500m"
    }
    assert _rendered(rendered, "Cohort", "research")["spec"] == {"fairSharing": {"weight": "3"}}


def test_a_changed_weight_is_a_located_field_change(tmp_path: Path) -> None:
    """The round trip compares the weight: a policy saying another one is reported."""
    text = CLUSTER.read_text().replace(
        "  cohortName: research\n  namespaceSelector: {}\n",
        "  cohortName: research\n  namespaceSelector: {}\n  fairSharing: {weight: 2}\n",
    )
    out = tmp_path / "p"
    result = import_text(text, out).result
    teams = result.files["teams.yaml"].replace("fairSharingWeight: '2'", "fairSharingWeight: '4'")
    assert teams != result.files["teams.yaml"]
    result.files["teams.yaml"] = teams
    sources_ = [(str(out / n), t.encode()) for n, t in result.files.items()]
    again = api.validate_sources(sources_, api.Options(check_output=False))
    from hetgitops.adopt import roundtrip

    changes = [d.message for d in roundtrip.check(imported_objects(text), again.manifests)]
    assert changes == [
        "ClusterQueue vision: the first sync sets spec.fairSharing.weight to '4' (the cluster "
        "has '2')"
    ]


def test_an_admission_check_on_an_unknown_pool_is_an_unresolved_reference(tmp_path: Path) -> None:
    files = import_text(CLUSTER.read_text(), tmp_path / "p").files
    teams = files["teams.yaml"].replace(
        "    stopPolicy: Hold\n",
        "    stopPolicy: Hold\n    admissionChecks: [{name: x, onPools: [h200]}]\n",
    )
    assert teams != files["teams.yaml"]
    files["teams.yaml"] = teams
    out = tmp_path / "q"
    out.mkdir()
    for name, body in files.items():
        (out / name).write_text(body)
    found = [(d.rule, d.span.line) for d in api.validate([out]).diagnostics]
    assert ("unresolved-reference", _line(teams, "onPools: [h200]")) in found


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


QUOTAS = """
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpu-quota, namespace: vision}
spec:
  hard: {requests.nvidia.com/gpu: "GPUS", requests.cpu: "200", pods: "100"}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: object-counts, namespace: vision}
spec:
  hard: {configmaps: "50"}
"""


def test_a_namespace_resource_quota_is_kept_with_its_name_and_other_limits(
    tmp_path: Path,
) -> None:
    got = import_text(CLUSTER.read_text() + QUOTAS.replace("GPUS", "8"), tmp_path / "p")
    files, rendered = got.files, got.rendered
    assert got.found == [
        "import-object-not-adopted: ResourceQuota vision/object-counts: it caps no accelerator; "
        "it stays as it is, outside the policy"
    ]
    teams = {t["metadata"]["name"]: t["spec"] for t in yaml.safe_load_all(files["teams.yaml"])}
    assert teams["vision"]["namespaceQuota"] == {
        "name": "gpu-quota",
        "hard": {"pods": "100", "requests.cpu": "200"},
    }
    quota = _rendered(rendered, "ResourceQuota", "gpu-quota")
    assert quota["spec"]["hard"] == {
        "pods": "100", "requests.cpu": "200", "requests.nvidia.com/gpu": "8"
    }  # fmt: skip


def test_an_accelerator_limit_other_than_the_queues_reach_is_a_field_change(
    tmp_path: Path,
) -> None:
    """The language ties the namespace's accelerator cap to what its queue can admit (8)."""
    found = import_text(CLUSTER.read_text() + QUOTAS.replace("GPUS", "12"), tmp_path / "p").found
    assert [f for f in found if f.startswith("import-field-changes")] == [
        "import-field-changes: ResourceQuota vision/gpu-quota: the first sync sets "
        "spec.hard.requests.nvidia.com/gpu to '8' (the cluster has '12')"
    ]


H100_FLAVOR = (
    "  tolerations:\n  - {key: dedicated, operator: Equal, value: h100, effect: NoSchedule}\n"
)


def test_a_flavors_node_taints_that_are_its_pools_taints_import_and_render_back(
    tmp_path: Path,
) -> None:
    """`nodeTaints` equal to the pool's taints (its tolerations) become
    `spec.kueue.flavorNodeTaints`; the flavor renders back as the cluster has it."""
    taints = "  nodeTaints:\n  - {key: dedicated, value: h100, effect: NoSchedule}\n"
    got = import_text(CLUSTER.read_text().replace(H100_FLAVOR, H100_FLAVOR + taints), tmp_path)
    assert got.found == []
    pools = {p["metadata"]["name"]: p["spec"] for p in yaml.safe_load_all(got.files["pools.yaml"])}
    assert pools["h100"]["kueue"]["flavorNodeTaints"] is True
    assert "flavorNodeTaints" not in pools["a100"].get("kueue", {})
    assert _rendered(got.rendered, "ResourceFlavor", "h100")["spec"]["nodeTaints"] == [
        {"key": "dedicated", "value": "h100", "effect": "NoSchedule"}
    ]


def test_node_taints_other_than_the_pools_stay_a_located_field_change(tmp_path: Path) -> None:
    taints = "  nodeTaints:\n  - {key: dedicated, value: other, effect: NoSchedule}\n"
    got = import_text(CLUSTER.read_text().replace(H100_FLAVOR, H100_FLAVOR + taints), tmp_path)
    pools = {p["metadata"]["name"]: p["spec"] for p in yaml.safe_load_all(got.files["pools.yaml"])}
    assert "flavorNodeTaints" not in pools["h100"]["kueue"]
    changes = [d for d in got.result.diagnostics if d.rule == "import-field-changes"]
    assert any("ResourceFlavor h100" in d.message and "nodeTaints" in d.message for d in changes)
