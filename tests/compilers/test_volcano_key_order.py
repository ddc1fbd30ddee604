"""The Volcano scheduler ConfigMap does not depend on the order of keys the policy writes: a
plugin entry written `{enablePreemptable: false, name: gang}` used to render a different
`volcano-scheduler.conf` than `{name: gang, enablePreemptable: false}`, so a reordering
rewrote the scheduler's config on the next sync (issue 33 item 18)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import yaml

from hetgitops import api

REPO = Path(__file__).resolve().parents[2]
GANG = {"name": "gang", "enablePreemptable": False, "enableJobStarving": True}
CAPACITY = {"name": "capacity", "enableHierarchy": True}
NODEGROUP = {"name": "nodegroup", "enableHierarchy": True, "arguments": {"strict": False, "b": 1}}
ALLOCATE = {"name": "allocate", "arguments": {"predicateErrorCacheEnable": True, "a": "x"}}
METRICS = {"address": "http://prometheus:9090", "interval": "30s"}


def _reversed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


def _volcano() -> dict[str, Any]:
    return {
        "actions": ["enqueue", "allocate", "backfill"],
        "tiers": [
            {"plugins": [{"name": "priority"}, GANG]},
            {"plugins": [{"name": "drf", "enablePreemptable": False}, CAPACITY, NODEGROUP]},
        ],
        "configurations": [ALLOCATE],
        "metrics": METRICS,
    }


def _config_map(tmp: Path, volcano: dict[str, Any]) -> str:
    folder = tmp / "policy"
    shutil.copytree(REPO / "policies", folder)
    fleet_file = folder / "fleet.yaml"
    docs = list(yaml.safe_load_all(fleet_file.read_text(encoding="utf-8")))
    docs[0]["spec"]["volcano"] = volcano
    fleet_file.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    options = api.Options(now=dt.date(2026, 9, 1), targets=("volcano",))
    result = api.render([folder], options)
    assert not result.failed(), [f"{d.rule}: {d.message}" for d in result.diagnostics]
    found = [m for m in result.manifests if m.kind == "ConfigMap"]
    assert len(found) == 1
    return str(found[0].obj["data"]["volcano-scheduler.conf"])


def test_reordered_plugin_keys_render_the_same_config_map(tmp_path: Path) -> None:
    written = _config_map(tmp_path / "a", _volcano())
    reordered = _config_map(tmp_path / "b", _reversed(_volcano()))
    assert reordered == written
    # name first, switches, then arguments: the order Volcano's own examples use
    assert "  - name: gang\n    enableJobStarving: true\n    enablePreemptable: false\n" in written
    assert "- name: nodegroup\n    enableHierarchy: true\n    arguments:\n      b: 1\n" in written
