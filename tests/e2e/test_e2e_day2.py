"""E2E day-2: apply the old render for real, then the new one, against the real API server with
Kueue v0.19.2's CRDs (whose CEL transition rules make a topology-bound flavor's nodeLabels and
tolerations, and a Topology's levels, immutable)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIELD_MANAGER, apply_tree_to
from harness.controlplane.harness import ControlPlane

from hetgitops import api
from hetgitops.output import manifests, writer

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
H100 = "  cardType: h100-80gb\n  purpose: inference\n"
TAINTED = H100 + "  taints:\n    - {key: hetgitops.io/serving, effect: NoSchedule}\n"


def _tree(tmp: Path, name: str, edits: list[tuple[str, str, str]]) -> Path:
    policy = tmp / name / "policy"
    shutil.copytree(REPO / "policies", policy)
    for file, old, new in edits:
        text = (policy / file).read_text()
        assert old in text, (file, old)
        (policy / file).write_text(text.replace(old, new, 1))
    result = api.render([policy], api.Options(check_output=False))
    assert not result.failed(), [str(d) for d in result.diagnostics]
    out = tmp / name / "tree"
    writer.write_tree(manifests.tree(result.manifests), out)
    return out


def _apply(plane: ControlPlane, tree: Path) -> subprocess.CompletedProcess[str]:
    """The `core` then the `kueue` stage (as the Flux layout applies them); the other stages
    need the Volcano / GPU Operator namespaces their charts create."""
    core = apply_tree_to(plane, tree / "core", dry_run=False, check=False)
    if core.returncode != 0:
        return core
    return apply_tree_to(plane, tree / "kueue", dry_run=False, check=False)


CHANGES = {
    "taint added to h100-infer": [("pools/inference.yaml", H100, TAINTED)],
    "topology level dropped": [
        ("fleet.yaml", "levels: [zone, rack, hostname]", "levels: [zone, hostname]")
    ],
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_old_then_new_render_applies(
    control_plane: ControlPlane, tmp_path: Path, change: str
) -> None:
    old = _tree(tmp_path, "old", [])
    new = _tree(tmp_path, "new", CHANGES[change])
    first = _apply(control_plane, old)
    assert first.returncode == 0, first.stderr
    second = _apply(control_plane, new)
    assert second.returncode == 0, second.stderr


def test_the_immutability_rule_is_live(control_plane: ControlPlane, tmp_path: Path) -> None:
    """The same change applied in place (the flavor keeping its name) is refused by the API
    server: what hetgitops rendered before this fix."""
    old = _tree(tmp_path, "old", [])
    assert _apply(control_plane, old).returncode == 0
    flavor = next((old / "kueue").glob("resourceflavor-h100-infer*.yaml"))
    obj = manifests_yaml(flavor)
    obj["spec"]["tolerations"] = [
        {"key": "hetgitops.io/serving", "operator": "Exists", "effect": "NoSchedule"}
    ]
    refused = control_plane.kubectl(
        "apply",
        "--server-side",
        f"--field-manager={FIELD_MANAGER}",
        "-f",
        "-",
        input=json.dumps(obj),
        check=False,
    )
    assert refused.returncode != 0
    assert "immutable" in refused.stderr.lower() or "oldself" in refused.stderr.lower(), (
        refused.stderr
    )


def manifests_yaml(path: Path) -> dict[str, object]:
    import yaml

    loaded: dict[str, object] = yaml.safe_load(path.read_text())
    return loaded
