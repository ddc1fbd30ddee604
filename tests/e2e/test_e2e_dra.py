"""E2E: the real kube-apiserver compiles the DeviceClass selectors hetgitops renders for DRA
pools (tests/cases/render/dra) and refuses one that does not compile, which the offline
structural check (`dra-selector`) can only approximate."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from hetgitops import api

pytestmark = pytest.mark.e2e

ApplyTree = Callable[..., subprocess.CompletedProcess[str]]
VARIANT = Path(__file__).resolve().parents[1] / "cases" / "render" / "dra" / "policy"


def _device_classes() -> list[dict[str, object]]:
    result = api.render([VARIANT], api.Options(check_output=False))
    assert not result.failed()
    return [dict(m.obj) for m in result.manifests if m.kind == "DeviceClass"]


def test_rendered_selectors_compile_and_a_broken_one_is_refused(
    apply_tree: ApplyTree, tmp_path: Path
) -> None:
    classes = _device_classes()
    assert classes
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump_all(classes))
    applied = apply_tree(good, dry_run=True, check=False)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.count("serverside-applied") == len(classes)
    broken = dict(classes[0])
    cel = broken["spec"]["selectors"][0]["cel"]["expression"]  # type: ignore[index]
    broken["spec"] = {"selectors": [{"cel": {"expression": cel + " &&"}}]}
    # A name of its own: on a control plane that already holds the class (applied by another
    # manager in an earlier module), the dry run would meet a field conflict before the CEL.
    broken["metadata"] = {**broken["metadata"], "name": broken["metadata"]["name"] + "-broken"}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(broken))
    refused = apply_tree(bad, dry_run=True, check=False)
    assert refused.returncode != 0
    assert "compilation failed" in refused.stderr or "Syntax error" in refused.stderr, (
        refused.stderr
    )
