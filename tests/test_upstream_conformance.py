"""Conformance: the bundled render validates against the real upstream CRDs (tests/harness/upstream:
read from the pinned upstream Go modules).

Uses the same `--crd-dir` machinery users get, so it also proves the CRD -> JSON Schema
conversion. Skipped (with the reason shown) when they cannot be fetched (no Go toolchain, no
module proxy), unless HETGITOPS_REQUIRE_UPSTREAM=1, as in CI, where that fails the run.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from harness import upstream

from hetgitops import api
from hetgitops.conformance import k8s_schemas
from hetgitops.output.manifests import Manifest

pytestmark = pytest.mark.upstream

REPO = Path(__file__).resolve().parents[1]
# Folders holding the CRDs of the targets hetgitops emits (Kueue v0.19.2 serves v1beta1 too).
CRD_FOLDERS = ("kueue/crds", "volcano/crds", "nfd/crds", "nvidia/crds", "koordinator/crds")
EXPECTED_KINDS = {
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "ResourceFlavor",
    "Topology",
    "WorkloadPriorityClass",
}


def _upstream() -> Path:
    return upstream.for_test()


def _crd_errors(manifests: list[Manifest]) -> tuple[list[str], set[str]]:
    """Errors against the upstream CRDs, and the kinds that had a CRD to check against."""
    folders = tuple(_upstream() / sub for sub in CRD_FOLDERS)
    validators, unreadable = k8s_schemas.crd_validators(folders)
    assert not unreadable
    errors: list[str] = []
    checked: set[str] = set()
    for manifest in manifests:
        found = validators.get((str(manifest.obj.get("apiVersion")), manifest.kind))
        if found is None:
            continue
        checked.add(manifest.kind)
        errors += [
            f"{manifest.relative_path()}: {path}: {message}"
            for path, message in k8s_schemas.problems(found[0], manifest.obj)
        ]
    return errors, checked


def _render(policies: Path) -> list[Manifest]:
    result = api.render([policies])
    assert not result.failed(), [str(d) for d in result.diagnostics]
    assert result.manifests
    return result.manifests


def test_bundled_render_matches_upstream_crds() -> None:
    errors, checked = _crd_errors(_render(REPO / "policies"))
    assert errors == []
    assert checked >= EXPECTED_KINDS | {"Queue", "NodeFeatureRule"}


def test_koordinator_render_matches_upstream_crds() -> None:
    """Koordinator v1.8.0's own CRDs (config/crd/bases of the module the sim builds)."""
    result = api.render([REPO / "policies"], api.Options(targets=("koordinator",)))
    assert not result.failed()
    errors, checked = _crd_errors(result.manifests)
    assert errors == []
    assert checked == {"ElasticQuota", "ElasticQuotaProfile"}
    profile = next(m for m in result.manifests if m.kind == "ElasticQuotaProfile")
    bad = replace(profile, obj={**profile.obj, "spec": {**profile.obj["spec"], "resourceRatio": 1}})
    assert [e.split(": ")[1] for e in _crd_errors([bad])[0]] == ["spec.resourceRatio"]


def test_v1beta1_render_matches_the_v1beta1_schema(tmp_path: Path) -> None:
    """A Kueue 0.14 fleet gets v1beta1 objects; the same CRD files still carry that version."""
    policies = tmp_path / "policies"
    shutil.copytree(REPO / "policies", policies)
    fleet = policies / "fleet.yaml"
    text = fleet.read_text()
    assert 'kueue: "0.19.2"' in text
    fleet.write_text(text.replace('kueue: "0.19.2"', 'kueue: "0.14.3"'))
    manifests = _render(policies)
    kueue = [m for m in manifests if str(m.obj.get("apiVersion")).startswith("kueue.x-k8s.io/")]
    assert {m.obj["apiVersion"] for m in kueue} == {"kueue.x-k8s.io/v1beta1"}
    errors, checked = _crd_errors(kueue)
    assert errors == []
    assert checked == EXPECTED_KINDS


def test_crd_dir_option_end_to_end() -> None:
    """The `validate --crd-dir` path: api.validate with every upstream folder, no CRD finding.
    The one finding left is the bundled PyTorchJob profile's job-integration warning (Kueue
    0.19 needs the integration enabled in its Configuration, which no policy field states)."""
    folders = tuple(_upstream() / sub for sub in CRD_FOLDERS)
    result = api.validate([REPO / "policies"], api.Options(crd_dirs=folders))
    assert [d.rule for d in result.diagnostics] == [
        "kueue-volcano-share-pool",
        "job-integration",
    ], [str(d) for d in result.diagnostics]


def test_multicluster_render_matches_upstream_crds() -> None:
    """Every cluster's objects, the manager's MultiKueue objects included, against Kueue
    v0.19.2's CRDs (one object at a time: the path that explains a failure)."""
    rendered = _render(REPO / "examples" / "multicluster")
    errors, checked = _crd_errors(rendered)
    assert errors == []
    assert checked >= {"AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster", "ClusterQueue"}


def test_upstream_multikueue_rules_are_enforced() -> None:
    """The CRDs' own limits reach the checks: AdmissionCheck parameters.kind (an RE2 pattern
    with a late `(?i)` flag), MultiKueueConfig 1-20 unique clusters, MultiKueueCluster
    locationType."""
    hub = [m for m in _render(REPO / "examples" / "multicluster") if m.cluster == "hub"]
    check = next(m for m in hub if m.kind == "AdmissionCheck")
    config = next(m for m in hub if m.kind == "MultiKueueConfig")
    remote = next(m for m in hub if m.kind == "MultiKueueCluster")
    bad = [
        replace(check, obj={**check.obj, "spec": {**check.obj["spec"], "parameters": {
            **check.obj["spec"]["parameters"], "kind": "Multi_Kueue"}}}),
        replace(config, obj={**config.obj, "spec": {"clusters": [f"w{i}" for i in range(21)]}}),
        replace(remote, obj={**remote.obj, "spec": {"clusterSource": {"kubeConfig": {
            "location": "x", "locationType": "Vault"}}}}),
    ]  # fmt: skip
    errors, _ = _crd_errors(bad)
    assert [e.split(": ")[1] for e in errors] == [
        "spec.parameters.kind",
        "spec.clusters",
        "spec.clusterSource.kubeConfig.locationType",
    ]
    good = replace(check, obj={**check.obj, "spec": {**check.obj["spec"], "parameters": {
        **check.obj["spec"]["parameters"], "kind": "multikueueconfig"}}})  # fmt: skip
    assert _crd_errors([good])[0] == []
