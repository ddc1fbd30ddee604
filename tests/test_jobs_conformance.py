"""Conformance: every rendered job validates against the real upstream CRDs (JobSet, Kubeflow
PyTorchJob, LeaderWorkerSet, Volcano batch Job, KubeRay RayJob / RayCluster / RayService) and
core kinds against the Kubernetes schemas.

Runs through `output_checks.check(..., crd_dirs=...)`, the `--crd-dir` path users get. Covers
the bundled fleet, the same fleet with a LeaderWorkerSet profile, and a Volcano-only variant
(every framework routed to Volcano leaf queues). The CRDs come from the pinned upstream Go
modules (tests/harness/upstream); skipped with the reason when they cannot be
fetched, unless HETGITOPS_REQUIRE_UPSTREAM=1 (CI), where that fails the run.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from harness import upstream

from hetgitops import api
from hetgitops.compilers.jobs.render import compile_jobs
from hetgitops.conformance import k8s_schemas, output_checks
from hetgitops.diagnostics import Severity

pytestmark = pytest.mark.upstream

REPO = Path(__file__).resolve().parents[1]
CRD_FOLDERS = ("jobset/crds", "kubeflow/crds", "kuberay/crds", "lws/crds", "volcano/crds")
NOW = dt.date(2026, 9, 1)
LWS_PROFILE = """\
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata:
  name: multi-node-serving
spec:
  framework: leaderworkerset
  tier: online-inference
  requirements: {cardsPerNode: 8, gang: 2, purposes: [inference]}
  image: vllm
  port: 8000
  topology: {preferred: rack}
"""
ALL_KINDS = {
    ("batch/v1", "Job"),
    ("apps/v1", "Deployment"),
    ("kubeflow.org/v1", "PyTorchJob"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("ray.io/v1", "RayJob"),
    ("ray.io/v1", "RayCluster"),
    ("ray.io/v1", "RayService"),
}


def _crd_dirs() -> tuple[Path, ...]:
    root = upstream.for_test()
    return tuple(root / sub for sub in CRD_FOLDERS)


def _variant(tmp_path: Path, *, volcano_only: bool) -> Path:
    policies = tmp_path / "policies"
    shutil.copytree(REPO / "policies", policies)
    (policies / "profiles" / "lws.yaml").write_text(LWS_PROFILE)
    if volcano_only:
        fleet = policies / "fleet.yaml"
        text = fleet.read_text()
        assert "targets: [core, kueue, volcano," in text
        fleet.write_text(
            text.replace("targets: [core, kueue, volcano,", "targets: [core, volcano,")
        )
    return policies


@pytest.fixture(params=["bundled", "with-lws", "volcano-only"])
def policies(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "bundled":
        return REPO / "policies"
    return _variant(tmp_path, volcano_only=request.param == "volcano-only")


def test_every_job_matches_its_schema(policies: Path) -> None:
    crd_dirs = _crd_dirs()
    validated = api.validate([policies], api.Options(now=NOW, check_output=False))
    assert validated.policy is not None and not validated.failed(), validated.diagnostics
    manifests, found = compile_jobs(validated.policy)
    assert manifests and not [d for d in found if d.severity == Severity.ERROR]
    checked = output_checks.check(manifests, validated.policy, crd_dirs=crd_dirs)
    # No error, and no "no schema for ...; not validated": every kind met its schema.
    assert [f"{d.span}: {d.rule}: {d.message}" for d in checked] == []


def test_the_variants_cover_every_framework(tmp_path: Path) -> None:
    kinds: set[tuple[str, str]] = set()
    for volcano_only in (False, True):
        folder = _variant(tmp_path / str(volcano_only), volcano_only=volcano_only)
        result = api.validate([folder], api.Options(now=NOW, check_output=False))
        assert result.policy is not None
        manifests, _ = compile_jobs(result.policy)
        kinds |= {(str(m.obj["apiVersion"]), m.kind) for m in manifests}
    assert kinds == ALL_KINDS


def test_core_kinds_have_kubernetes_schemas() -> None:
    """Job and Deployment are checked by the bundled Kubernetes schemas, not skipped."""
    minor = k8s_schemas.resolve_minor((1, 33))
    assert minor is not None
    assert k8s_schemas.k8s_validator(minor, "batch/v1", "Job") is not None
    assert k8s_schemas.k8s_validator(minor, "apps/v1", "Deployment") is not None


def test_jobs_crd_dir_option_end_to_end() -> None:
    """The `jobs --crd-dir` path: api.jobs with the upstream folders reports nothing but the
    PyTorchJob integration warning."""
    result = api.jobs([REPO / "policies"], api.Options(now=NOW, crd_dirs=_crd_dirs()))
    assert [d.rule for d in result.diagnostics] == ["kueue-volcano-share-pool", "job-integration"]
    assert len(result.manifests) == 30
