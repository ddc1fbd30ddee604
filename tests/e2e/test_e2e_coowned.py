"""E2E (issue 38 item 11): a field two field managers own stays when the change removes it.

The bundled tree is applied as Argo CD (argocd-controller); the pretrain ResourceQuota is applied
once more as Flux (kustomize-controller), as an earlier Flux sync of the same object leaves it.
The change drops team pretraining's ascend-910b quota, which removes the ResourceQuota's
`requests.huawei.com/Ascend910` hard key. `diff --kubeconfig` says `field-co-owned`, `drift`
of the new policy says `drift-co-owned`; then the sync (the new tree applied as Argo CD) leaves
the key in place, as the hazard said, and Flux applying the object without it removes it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from drift_fleet import ARGOCD, FLUX, applied, drift_kubeconfig, render, reset, server_side_apply
from harness.controlplane.harness import ControlPlane

from hetgitops.cli.main import main
from hetgitops.drift.run import DriftOptions, drift

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "policies"
KEY = "requests.huawei.com/Ascend910"
SUBJECT = f"ResourceQuota pretrain/hetgitops-accelerators: spec.hard[{KEY}]"


@pytest.fixture(scope="module", autouse=True)
def _clean_up(control_plane: ControlPlane) -> Iterator[None]:
    """Leave no Argo CD- or Flux-owned objects behind (other e2e tests apply the same tree)."""
    yield
    reset(control_plane)


def _head(tmp: Path) -> Path:
    head = tmp / "head"
    shutil.copytree(BUNDLED, head)
    teams = head / "teams" / "training.yaml"
    line = "    - {pool: ascend-910b, cards: 8}\n"
    text = teams.read_text()
    assert text.index(line) < text.index("name: finetune-nlp")  # pretraining's entry
    teams.write_text(text.replace(line, "", 1))
    return head


def _co_owned(plane: ControlPlane, head: Path) -> list[dict[str, Any]]:
    args = ["diff", "--base-dir", str(BUNDLED), "--head-dir", str(head), "--format", "json"]
    result = CliRunner().invoke(
        main, [*args, "--now", "2026-12-01", "--kubeconfig", str(plane.readonly_kubeconfig)]
    )
    assert result.exit_code == 1, result.output
    hazards = json.loads(result.stdout)["hazards"]
    return [h for h in hazards if h["rule"] == "field-co-owned"]


def _hard(plane: ControlPlane) -> dict[str, str]:
    out = plane.kubectl(
        "get", "resourcequota", "hetgitops-accelerators", "-n", "pretrain", "-o", "json"
    )
    hard: dict[str, str] = json.loads(out.stdout)["spec"]["hard"]
    return hard


def test_a_co_owned_field_the_change_removes_is_announced_and_stays(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = control_plane
    reset(plane)
    objects = applied(render(BUNDLED))
    server_side_apply(plane, objects, manager=ARGOCD)
    head = _head(tmp_path)
    # The applier alone owns the key: the sync removes it, no hazard.
    assert _co_owned(plane, head) == []

    (quota,) = [
        o
        for o in objects
        if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == "pretrain"
    ]
    assert KEY in quota["spec"]["hard"]
    server_side_apply(plane, [quota], manager=FLUX)

    (hazard,) = _co_owned(plane, head)
    assert hazard["subject"] == SUBJECT
    assert f"{ARGOCD}, {FLUX} own it" in hazard["message"]
    assert "/spec/hard/requests.huawei.com~1Ascend910" in hazard["action"]

    found = drift([head], DriftOptions(kubeconfig=drift_kubeconfig(plane, head, tmp_path)))
    co_owned = [d for d in found.result.diagnostics if d.rule == "drift-co-owned"]
    assert [d.path for d in co_owned] == [
        f"ResourceQuota pretrain/hetgitops-accelerators: spec.hard.{KEY}"
    ], [str(d) for d in found.result.diagnostics]
    assert FLUX in co_owned[0].message and ARGOCD in co_owned[0].message

    # The sync: the new tree applied as Argo CD. The key stays, as the hazard said.
    server_side_apply(plane, applied(render(head)), manager=ARGOCD)
    seen = _hard(plane)
    assert KEY in seen, seen
    # The fix: the other manager applies the object without the key; now it goes.
    (new_quota,) = [
        o
        for o in applied(render(head))
        if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == "pretrain"
    ]
    server_side_apply(plane, [new_quota], manager=FLUX)
    seen = _hard(plane)
    assert KEY not in seen, seen
