"""`dra-pool-moved` on the busy fleet's move (issue 36): a pool whose flavor stops giving the
device plugin's resource quota leaves plain extended-resource work pending there for good; the
hazard names the pool and the resource, and `--kubeconfig` counts that work (scope `plain`)."""

from __future__ import annotations

import copy
import datetime as dt
import shutil
from pathlib import Path
from typing import Any

from hetgitops.diff.blast import LiveWork, annotate
from hetgitops.diff.hazards import Hazard

from .offline import hazards
from .test_blast import workload

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
NODES = '    - {names: "gpu-l40s-[01:04]", zone: zone-b, rack: rack-b03}\n'
RETIRING = (
    "  kueue:\n    retiringFlavor:\n      name: l40s-infer-f397d926\n      nodeLabels:\n"
    "        hetgitops.io/card-type: l40s-48gb\n        hetgitops.io/pool: l40s-infer\n"
    "      topologyName: fleet-topology-6d6042ad\n"
)


def _moved(tmp_path: Path, *, retiring: bool) -> Path:
    root = tmp_path / "policy"
    shutil.copytree(REPO / "policies", root)
    fleet = root / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace('kubernetes: "1.33"', 'kubernetes: "1.35"'))
    devices = "  devices: {allocation: draClaims, migratingFrom: devicePlugin}\n"
    pools = root / "pools" / "inference.yaml"
    added = devices + (RETIRING if retiring else "")
    pools.write_text(pools.read_text().replace(NODES, NODES + added))
    return root


def _moved_hazard(head: Path) -> dict[str, Any]:
    found = hazards(REPO / "policies", head, NOW)
    (moved,) = [h for h in found if h["rule"] == "dra-pool-moved"]
    return dict(moved)


def test_the_move_names_the_pool_whose_plain_work_is_never_admitted(tmp_path: Path) -> None:
    for retiring in (True, False):
        hazard = _moved_hazard(_moved(tmp_path / str(retiring), retiring=retiring))
        assert "on pool l40s-infer (nvidia.com/gpu) is never admitted" in hazard["message"], (
            retiring,
            hazard["message"],
        )


def _selecting(obj: dict[str, Any], pool: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"] = {"hetgitops.io/pool": pool}
    return out


def test_live_counts_the_plain_work_pending_on_the_moved_pool() -> None:
    pending = _selecting(workload("p", "ft-vision", queue="finetune-vision"), "l40s-infer")
    admitted = _selecting(
        workload("a", "serving", queue="online-inference", admitted_on="l40s-old", cq="o"),
        "l40s-infer",
    )
    elsewhere = _selecting(workload("e", "ft-vision", queue="finetune-vision"), "a800-train")
    claims = _selecting(
        workload("c", "serving", queue="online-inference", gpu="dra.hetgitops.io/l40s-48gb"),
        "l40s-infer",
    )
    work = LiveWork(workloads=[pending, admitted, elsewhere, claims])
    hazard = Hazard(
        rule="dra-pool-moved",
        subject="DeviceClass l40s-48gb.gpu.dra.hetgitops.io",
        message="",
        action="",
        scope=(("plain", "l40s-infer|nvidia.com/gpu"),),
    )
    (live,) = annotate([hazard], work)
    assert "0 admitted and 1 pending workload(s)" in live.live, live.live
