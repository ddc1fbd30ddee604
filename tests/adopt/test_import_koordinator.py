"""hetgitops import of Koordinator quota trees: not translated yet, but never dropped in
silence: each profile and quota is named with what it holds (issue 34 item 4, first step)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from hetgitops import api
from hetgitops.adopt import sources
from hetgitops.adopt.run import ImportResult, import_objects
from tests.adopt.test_import import _as_cluster

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
    assert "node-pool=a100" in profile and "resourceRatio 1" in profile
    assert "root quota the profile controller writes for ElasticQuotaProfile a100-profile" in root
    assert "parent quota under a100-root" in parent
    assert "min {cpu: 64, memory: 512Gi, nvidia.com/gpu: 4}" in leaf
    assert "allow-lent-resource unset (true)" in leaf and 'namespaces ["vision"]' in leaf
    assert all("outside the policy" in m for m in said)
    assert all(d.span.file == str(CLUSTER) for d in result.diagnostics if d.message in said)


def test_a_hand_written_tree_over_an_imported_pool_says_what_the_policy_cannot(
    tmp_path: Path,
) -> None:
    """The same tree beside the Kueue cluster whose pool a100 its profile selects: the target
    is adopted, the policy writes its own tree (profile a100, cohort-research-a100,
    vision-a100), and each hand-written object says why it is not the policy's."""
    read = sources.from_paths([HERE / "cluster_a100.yaml", CLUSTER])
    result = import_objects(read, tmp_path / "p", cluster="lab")
    fleet = yaml.safe_load(result.files["fleet.yaml"])
    assert "koordinator" in fleet["spec"]["targets"]
    assert result.rendered is not None and not result.rendered.failed()
    names = _tree(result.rendered.manifests)
    assert {("ElasticQuotaProfile", "a100"), ("ElasticQuota", "vision-a100")} <= names
    not_adopted = sorted(
        d.message.split(":")[0].split(" (")[0]
        for d in result.diagnostics
        if d.rule == "import-object-not-adopted"
    )
    # The controller's root quota (a100-root) and Koordinator's own are not the policy's.
    assert not_adopted == [
        "ElasticQuota research",
        "ElasticQuota vision-team",
        "ElasticQuotaProfile a100-profile",
    ]
    said = " ".join(d.message for d in result.diagnostics)
    assert "two profiles over the same nodes" in said and "<team>-<pool>" in said
    assert not [d for d in result.diagnostics if d.rule == "import-kind-not-imported"]


def test_the_live_reader_lists_the_tree_kinds() -> None:
    listed = {(r.group, r.plural) for r in sources.RESOURCES}
    assert ("quota.koordinator.sh", "elasticquotaprofiles") in listed
    assert ("scheduling.sigs.k8s.io", "elasticquotas") in listed


# The bundled fleet with the koordinator target: render, import the render, render again.

FLEET_TARGETS = "targets: [core, kueue, volcano, nodes, gpu-operator]"
TREE_KINDS = {"ElasticQuotaProfile", "ElasticQuota"}


def _bundled_with_koordinator(tmp_path: Path) -> api.Result:
    policy = tmp_path / "in"
    shutil.copytree(Path(__file__).parents[2] / "policies", policy)
    fleet = policy / "fleet.yaml"
    text = fleet.read_text()
    assert FLEET_TARGETS in text
    fleet.write_text(text.replace(FLEET_TARGETS, FLEET_TARGETS[:-1] + ", koordinator]"))
    first = api.render([policy])
    assert not first.failed()
    return first


def _import(objects: list[dict[str, Any]], tmp_path: Path) -> ImportResult:
    read = sources.Read()
    text = "---\n".join(yaml.safe_dump(obj) for obj in objects)
    sources.from_text("rendered.yaml", text, read)
    return import_objects(read, tmp_path / "policy", cluster="lab")


def _cluster(first: api.Result) -> list[dict[str, Any]]:
    # The Helm values and the ElasticQuotaArgs block are files for the installer, not objects.
    return [obj for obj in _as_cluster(first) if "kind" in obj]


def _tree(manifests: Any) -> set[tuple[str, str]]:
    return {(m.obj["kind"], m.obj["metadata"]["name"]) for m in manifests
            if m.obj.get("kind") in TREE_KINDS}  # fmt: skip


def test_the_bundled_fleets_koordinator_trees_round_trip_with_no_change(tmp_path: Path) -> None:
    first = _bundled_with_koordinator(tmp_path)
    result = _import(_cluster(first), tmp_path)
    assert result.rendered is not None and not result.rendered.failed()
    # The bundled fleet renders kueue beside koordinator and its teams span pools, so the
    # pinning warning is true of it (checks/koordinator_pinning.py); it is no import finding.
    found = [d.message for d in result.diagnostics if d.severity.name != "INFO" and d.rule != PIN]
    assert found == []
    fleet = yaml.safe_load(result.files["fleet.yaml"])
    assert "koordinator" in fleet["spec"]["targets"]
    tree = _tree(first.manifests)
    assert len(tree) > 30 and tree == _tree(result.rendered.manifests)
    # The in-band classes are the target's, not tiers; dev's koord-batch says it is preemptible.
    tiers = {
        t["metadata"]["name"]: t["spec"] for t in yaml.safe_load_all(result.files["tiers.yaml"])
    }
    assert not [name for name in tiers if name.endswith("-koord")]
    assert tiers["dev"].get("preemptible") is True
    assert not tiers["training"].get("preemptible")


LEAF = "finetune-nlp-a100-transition"
PIN = "koordinator-namespace-pinning"
LENT = "quota.scheduling.koordinator.sh/allow-lent-resource"


def _object(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def test_what_the_controllers_write_is_no_change_but_a_changed_tree_is(tmp_path: Path) -> None:
    objects = _cluster(_bundled_with_koordinator(tmp_path))
    leaf = _object(objects, "ElasticQuota", LEAF)
    meta = leaf["metadata"]
    rendered_lent = meta["labels"][LENT]
    rendered_cpu = leaf["spec"]["min"]["cpu"]
    meta["labels"][LENT] = "false" if rendered_lent == "true" else "true"
    leaf["spec"]["min"]["cpu"] = "1"
    # What Koordinator writes (drift's list) and status: no change.
    meta["annotations"]["quota.scheduling.koordinator.sh/runtime"] = '{"nvidia.com/gpu":"1"}'
    meta["annotations"]["quota.scheduling.koordinator.sh/shared-weight"] = "{}"
    leaf["status"] = {"used": {"nvidia.com/gpu": "1"}}
    profile = next(o for o in objects if o["kind"] == "ElasticQuotaProfile")
    profile["spec"]["resourceRatio"] = "0.9"
    # The root quota the profile controller writes: the controller's, never compared.
    root = {"name": profile["spec"]["quotaName"], "namespace": "koordinator-system"}
    objects.append(
        {
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
            "kind": "ElasticQuota",
            "metadata": root,
            "spec": {"min": {"cpu": "1"}, "max": {"cpu": "1"}},
        }
    )
    result = _import(objects, tmp_path)
    changes = sorted(
        d.message.split(" (the cluster")[0]
        for d in result.diagnostics
        if d.rule.startswith("import-")
    )
    quota = f"ElasticQuota koordinator-system/{LEAF}: the first sync sets"
    expected = [
        f"{quota} labels.{LENT} to '{rendered_lent}'",
        f"{quota} spec.min.cpu to '{rendered_cpu}'",
        f"ElasticQuotaProfile koordinator-system/{profile['metadata']['name']}: the first sync "
        "sets spec.resourceRatio to '1'",
    ]
    assert changes == sorted(expected), changes


def test_one_ratio_on_every_profile_is_the_fleets(tmp_path: Path) -> None:
    objects = _cluster(_bundled_with_koordinator(tmp_path))
    for obj in objects:
        if obj["kind"] == "ElasticQuotaProfile":
            obj["spec"]["resourceRatio"] = "0.5"
    result = _import(objects, tmp_path)
    fleet = yaml.safe_load(result.files["fleet.yaml"])
    assert fleet["spec"]["koordinator"] == {"resourceRatio": "0.5"}
    said = [(d.rule, d.message) for d in result.diagnostics if d.rule.startswith("import-")]
    assert said == []
    # Half of each pool is less than the bundled teams' min: the written policy says so, as
    # Koordinator's webhook would refuse the leaves under such a root.
    checks = {d.rule for d in result.diagnostics if not d.rule.startswith("import-")}
    assert checks == {"koordinator-min-over-capacity", PIN}
