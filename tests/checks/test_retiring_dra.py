"""A pool moving from the device plugin to DRA claims through a flavor transition (issue 36: the
bundled l40s-infer's flavor loses its topologyName on DRA, so its move renames it and diff
gives the retiringFlavor snippet). The work admitted on the retiring flavor was admitted under
the device plugin and holds `nvidia.com/gpu`: the retiring flavor must keep quota for that
name, and `holds` written in it (as `diff --kubeconfig` reads the live usage) must cut the new
flavor's mapped resource."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import yaml

from hetgitops import api
from hetgitops.diagnostics import Severity
from hetgitops.explain.quotas import transition_reach

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
OLD = "l40s-infer-f397d926"  # the bundled render's l40s flavor (tests/checks/test_retiring.py)
MAPPED = "dra.hetgitops.io/l40s-48gb"
NODES = '    - {names: "gpu-l40s-[01:04]", zone: zone-b, rack: rack-b03}\n'


def _moved(tmp_path: Path, holds: dict[str, Any]) -> Path:
    root = tmp_path / "policy"
    shutil.copytree(REPO / "policies", root)
    fleet = root / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace('kubernetes: "1.33"', 'kubernetes: "1.35"'))
    entry = {
        "name": OLD,
        "nodeLabels": {"hetgitops.io/card-type": "l40s-48gb", "hetgitops.io/pool": "l40s-infer"},
        "topologyName": "fleet-topology-6d6042ad",
        "holds": holds,
    }
    block = yaml.safe_dump({"kueue": {"retiringFlavor": entry}}, sort_keys=False)
    devices = "  devices: {allocation: draClaims, migratingFrom: devicePlugin}\n"
    added = devices + "".join(f"  {line}\n" for line in block.splitlines())
    pools = root / "pools" / "inference.yaml"
    pools.write_text(pools.read_text().replace(NODES, NODES + added))
    return root


def _quota(result: api.Result, queue: str, flavor: str, resource: str) -> str:
    (obj,) = [m.obj for m in result.manifests if m.kind == "ClusterQueue" and m.name == queue]
    (entry,) = [f for f in obj["spec"]["resourceGroups"][0]["flavors"] if f["name"] == flavor]
    return str(next(r for r in entry["resources"] if r["name"] == resource)["nominalQuota"])


def test_the_retiring_flavor_keeps_the_device_plugin_work_counted(tmp_path: Path) -> None:
    root = _moved(tmp_path, {"finetune-vision": {"nvidia.com/gpu": 6}})
    result = api.render([root], api.Options(now=NOW))
    assert not [d for d in result.diagnostics if d.severity is Severity.ERROR]
    # The running pods hold nvidia.com/gpu on the old flavor: their team quota stays there
    # (it was 0, the claims pool's figure, so every running GPU counted as borrowed).
    assert _quota(result, "finetune-vision", OLD, "nvidia.com/gpu") == "8"
    assert _quota(result, "online-inference", OLD, "nvidia.com/gpu") == "24"
    # holds in the plugin's name cut the mapped resource on the new flavor (8 - 6); a team
    # without holds keeps all of it held back.
    assert _quota(result, "finetune-vision", "l40s-infer", MAPPED) == "2"
    assert _quota(result, "online-inference", "l40s-infer", MAPPED) == "0"
    assert _quota(result, "finetune-vision", "l40s-infer", "nvidia.com/gpu") == "0"


def test_explain_cuts_the_new_flavor_as_the_queues_do(tmp_path: Path) -> None:
    root = _moved(tmp_path, {"online-inference": {"nvidia.com/gpu": 18}})
    result = api.validate([root], api.Options(now=NOW, check_output=False))
    assert result.policy is not None and not result.failed()
    limits = transition_reach(result.policy).limits
    assert limits["online-inference", "l40s-infer"][MAPPED][0] == 24 - 18
    assert limits["finetune-vision", "l40s-infer"][MAPPED][0] == 0
