"""E2E: every rendered scenario passes a server-side dry-run apply against the real CRDs."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from hetgitops import api
from hetgitops.output import manifests, writer

pytestmark = pytest.mark.e2e

ApplyTree = Callable[..., subprocess.CompletedProcess[str]]
REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "cases" / "render"
# A bare API server has no Kueue conversion webhook: v1beta1 output is checked offline only.
SCENARIOS = sorted(
    p.parent.name for p in CASES.glob("*/policy") if p.parent.name != "kueue-v1beta1"
)


def _policy(scenario: str) -> Path:
    return REPO / "policies" if scenario == "bundled" else CASES / scenario / "policy"


@pytest.mark.parametrize("scenario", ["bundled", *SCENARIOS])
def test_rendered_tree_dry_runs_cleanly(
    apply_tree: ApplyTree, tmp_path: Path, scenario: str
) -> None:
    result = api.render([_policy(scenario)], api.Options(check_output=False))
    assert not result.failed()
    out = tmp_path / "tree"
    writer.write_tree(manifests.tree(result.manifests), out)
    applied = apply_tree(out, dry_run=True, check=False)
    assert applied.returncode == 0, applied.stderr
    count = sum(1 for m in result.manifests if m.applied)
    assert applied.stdout.count("serverside-applied") == count
