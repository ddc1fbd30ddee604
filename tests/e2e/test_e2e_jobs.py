"""E2E: the jobs tree of the bundled fleet passes a server-side dry-run apply (strict field
validation against the real JobSet, PyTorchJob, LeaderWorkerSet, Volcano and KubeRay CRDs)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from hetgitops import api
from hetgitops.compilers.jobs import render as jobs
from hetgitops.output import writer

pytestmark = pytest.mark.e2e

ApplyTree = Callable[..., subprocess.CompletedProcess[str]]
REPO = Path(__file__).resolve().parents[2]
LWS_PROFILE = """\
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: multi-node-serving}
spec:
  framework: leaderworkerset
  tier: online-inference
  requirements: {cardsPerNode: 8, gang: 2, purposes: [inference]}
  image: vllm
  port: 8000
"""


def _policies(tmp_path: Path, variant: str) -> Path:
    if variant == "bundled":
        return REPO / "policies"
    folder = tmp_path / "policies"
    shutil.copytree(REPO / "policies", folder)
    (folder / "profiles" / "lws.yaml").write_text(LWS_PROFILE)
    fleet = folder / "fleet.yaml"
    fleet.write_text(
        fleet.read_text().replace("targets: [core, kueue, volcano,", "targets: [core, volcano,")
    )
    return folder


@pytest.mark.parametrize("variant", ["bundled", "volcano-only-with-lws"])
def test_jobs_tree_dry_runs_cleanly(apply_tree: ApplyTree, tmp_path: Path, variant: str) -> None:
    result = api.jobs([_policies(tmp_path, variant)], api.Options(check_output=False))
    assert not result.failed(), result.diagnostics
    out = tmp_path / "jobs"
    writer.write_tree(jobs.tree(result.manifests), out)
    applied = apply_tree(out, dry_run=True, check=False)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.count("serverside-applied") == len(result.manifests)
