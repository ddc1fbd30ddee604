"""E2E: `spec.kueue.flavorNodeTaints` on the real API server with Kueue v0.19.2's CRDs. The
flavor is topology-bound (the bundled fleet has a Topology), so its nodeLabels, tolerations and
topologyName are frozen by the CRD's CEL transition rules; its nodeTaints are not: turning the
field on and off is a server-side apply of the same object (same uid), no rename, no recreate
(tests/e2e/test_e2e_day2.py shows the tolerations refused in place)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from drift_fleet import reset
from harness.controlplane.harness import ControlPlane
from test_e2e_day2 import _apply, _tree

pytestmark = pytest.mark.e2e

TAINT = "    - {key: hetgitops.io/pool, value: a800-train, effect: NoSchedule}\n"
ON = [("pools/training.yaml", TAINT, TAINT + "  kueue: {flavorNodeTaints: true}\n")]


def _flavor(plane: ControlPlane, tree: Path) -> dict[str, Any]:
    (path,) = (tree / "kueue").glob("resourceflavor-a800-train*.yaml")
    name = path.stem.removeprefix("resourceflavor-")
    got = plane.kubectl("get", "resourceflavors.kueue.x-k8s.io", name, "-o", "json").stdout
    live: dict[str, Any] = json.loads(got)
    return live


def test_flavor_node_taints_turn_on_and_off_in_place(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    reset(control_plane)
    off, on = _tree(tmp_path, "off", []), _tree(tmp_path, "on", ON)
    assert sorted(p.name for p in (off / "kueue").iterdir()) == sorted(
        p.name for p in (on / "kueue").iterdir()
    )  # the same flavor name: nodeTaints are outside the digest of the frozen fields
    seen = []
    for tree in (off, on, off):
        applied = _apply(control_plane, tree)
        assert applied.returncode == 0, applied.stderr
        live = _flavor(control_plane, tree)
        seen.append((live["metadata"]["uid"], live["spec"].get("nodeTaints")))
    assert [taints for _, taints in seen] == [
        None,
        [{"key": "hetgitops.io/pool", "value": "a800-train", "effect": "NoSchedule"}],
        None,
    ], seen
    assert len({uid for uid, _ in seen}) == 1, seen
