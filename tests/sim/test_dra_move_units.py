"""The busy harness's view of a pool's move to DRA claims (issue 36), without a cluster: the
driver's devices counted as capacity in the mapped resource, plain work left with no quota
counted as stranded, and `dra-pool-moved` announcing it for the pool it names."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from harness.simcluster import announce, busy, policyfleet

from .conftest import NOW, POLICIES
from .test_sim_day2_units import POOLS, _flavor, _hazard, _judge, _load, _workload

Obj = dict[str, Any]


def _queue(name: str, flavor: str, quota: dict[str, str]) -> Obj:
    resources = [{"name": r, "nominalQuota": q} for r, q in quota.items()]
    return {
        "metadata": {"name": name},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": list(quota),
                    "flavors": [{"name": flavor, "resources": resources}],
                }
            ]
        },
        "status": {"conditions": [{"type": "Active", "status": "True"}]},
    }


def _moved_load(gpu_quota: str) -> busy.Load:
    return _load(
        workloads=[_workload("ft/plain", "ft", "l40s")],
        queues=[_queue("ft", "l40s-a", {"cpu": "96", "nvidia.com/gpu": gpu_quota})],
        flavors=[_flavor("l40s-a", "l40s")],
        localqueues={"ft/ft": "ft"},
    )


def test_plain_work_on_a_flavor_nobody_gives_quota_for_it_is_stranded() -> None:
    assert _moved_load("0").stranded() == ["no-flavor ft/plain"]
    assert _moved_load("8").stranded() == []


MOVED = _hazard(
    "dra-pool-moved",
    "DeviceClass l40s-48gb.gpu.dra.hetgitops.io",
    "is new: ... (work pending with the device plugin's resources on pool l40s "
    "(nvidia.com/gpu) is never admitted: re-render it with `hetgitops jobs` and resubmit)",
    "live: pending on the moved pools with the device plugin's resources, never admitted: "
    "0 admitted and 1 pending workload(s) (finetune-vision 1)",
)


def test_the_move_announces_the_plain_work_it_strands_on_its_pool() -> None:
    final = _moved_load("0")
    assert not _judge([MOVED], final, final, stranded=final.stranded()).failures
    other = {**MOVED, "message": MOVED["message"].replace("on pool l40s", "on pool rtx")}
    assert _judge([other], final, final, stranded=final.stranded()).failures
    assert announce.pools_of(MOVED, announce.Context(POOLS, final, final)) == {"l40s"}


def test_the_drivers_devices_are_capacity_in_the_mapped_resource() -> None:
    card = policyfleet.load(POLICIES, now=NOW).card_types["l40s-48gb"]
    pools = busy.Pools(node_pool={"l40s-1": "l40s", "dev-1": "rtx"}, dra_cards={"l40s": card})
    device = {"name": "d", "attributes": {"type": {"string": "gpu"}}}
    slices = [
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "l40s-1", "devices": [device] * 8}},
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "dev-1", "devices": [device] * 8}},
        {"spec": {"driver": "other.example.com", "nodeName": "l40s-1", "devices": [device]}},
    ]
    assert busy.slice_capacity(slices, pools) == {
        ("l40s", "dra.hetgitops.io/l40s-48gb"): Decimal(8)
    }


def test_a_flavor_transition_announces_the_work_its_held_back_quota_strands() -> None:
    final = _moved_load("0")
    transition = _hazard(
        "kueue-flavor-transition",
        "ResourceFlavor l40s-a",
        "retires for pool l40s: ... so new work on the pool pends instead of double-booking",
        "live: kept counted on the retiring flavor: 3 admitted and 0 pending workload(s)",
    )
    assert not _judge([transition], final, final, stranded=final.stranded()).failures
