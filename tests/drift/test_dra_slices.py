"""drift reads the devices DRA pools publish (`drift/slices.py`): live ResourceSlices of
NVIDIA's driver against the policy's node count x cards and MIG layout, on the `dra` scenario.

The slices are built as k8s-dra-driver-gpu v25.12.0 publishes them (tests/dra_driver.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dra_driver

from hetgitops import api
from hetgitops.drift import slices
from hetgitops.model.policy import Policy
from hetgitops.plan import dra_devices

DRA = Path(__file__).resolve().parents[1] / "cases/render/dra/policy"
_slices = dra_driver.slices


def _policy() -> Policy:
    result = api.render([DRA])
    assert result.policy is not None and not result.failed()
    return result.policy


def _by_node(live: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(s for s in live if s["spec"]["nodeName"] == name)


def test_a_fleet_whose_driver_publishes_what_the_policy_counts_has_no_finding() -> None:
    policy = _policy()
    live = _slices(policy)
    assert len(live) == 10  # 6 H100 and 4 L40S nodes
    assert dra_devices.published(policy.pools["h100-infer"], 8) == {
        "1g.10gb": 14,
        "3g.40gb": 4,
        None: 4,
    }
    assert slices.check(policy, live) == []


def test_a_missing_slice_fewer_devices_and_another_card_are_each_reported_per_node() -> None:
    policy = _policy()
    live = _slices(policy)
    live.remove(_by_node(live, "gpu-l40s-02"))
    _by_node(live, "gpu-l40s-03")["spec"]["devices"].pop()
    odd = _by_node(live, "gpu-l40s-04")["spec"]["devices"][0]
    odd["attributes"]["productName"] = {"string": "NVIDIA L4"}
    (found,) = slices.check(policy, live)
    assert found.rule == "drift-dra-devices"
    assert found.span.file.endswith("inference.yaml") and found.span.line == 34
    assert found.details == (
        "gpu-l40s-02: publishes no gpu.nvidia.com ResourceSlice",
        "gpu-l40s-03: 7 GPU device(s) of l40s-48gb published, the policy counts 8",
        "gpu-l40s-04: device gpu-l40s-04-gpu-0 (GPU): productName 'NVIDIA-L4' is not NVIDIA-L40S",
        "gpu-l40s-04: 7 GPU device(s) of l40s-48gb published, the policy counts 8",
    )
    assert "gpu-l40s-[02:04]" in found.message


def test_mig_devices_of_a_missing_profile_and_a_card_of_other_memory_are_reported() -> None:
    policy = _policy()
    live = _slices(policy)
    devices = _by_node(live, "gpu-h100-001")["spec"]["devices"]
    devices[:] = [d for d in devices if d["attributes"].get("profile") != {"string": "3g.40gb"}]
    whole = next(d for d in devices if d["attributes"]["type"] == {"string": "gpu"})
    whole["capacity"]["memory"]["value"] = "40Gi"
    (found,) = slices.check(policy, live)
    assert found.details == (
        "gpu-h100-001: device gpu-h100-001-gpu-0 (GPU): memory 40Gi is outside 72Gi-88Gi",
        "gpu-h100-001: 3 GPU device(s) of h100-80gb published, the policy counts 4",
        "gpu-h100-001: 0 MIG 3g.40gb device(s) of h100-80gb published, the policy counts 4",
    )


def test_slices_of_other_drivers_and_device_plugin_pools_are_not_read() -> None:
    policy = _policy()
    live = _slices(policy)
    for item in live:
        item["spec"]["driver"] = "gpu.example.com"
    found = slices.check(policy, live)
    assert {d.rule for d in found} == {"drift-dra-devices"}
    pools = sorted(d.message.split("'")[1] for d in found)
    assert pools == ["h100-infer", "l40s-infer"]  # never a device-plugin pool


class _Cluster:
    """Records what drift LISTs; serves the slices, or nothing (NotServed)."""

    def __init__(self, items: list[dict[str, Any]] | None) -> None:
        self.items, self.listed = items, []  # type: ignore[var-annotated]

    def list(self, resource: Any, *, selector: str = "") -> list[dict[str, Any]]:
        from hetgitops.live.client import NotServed

        self.listed.append((resource.group, resource.version, resource.plural))
        if self.items is None:
            raise NotServed("resource.k8s.io/v1 is not served")
        return self.items


def test_drift_lists_the_slices_once_for_a_dra_fleet_and_never_for_another() -> None:
    from hetgitops.drift.run import _resource_slices

    policy = _policy()
    cluster = _Cluster(_slices(policy))
    assert len(_resource_slices(policy, cluster)) == 10  # type: ignore[arg-type]
    assert cluster.listed == [("resource.k8s.io", "v1", "resourceslices")]
    assert _resource_slices(policy, _Cluster(None)) == []  # type: ignore[arg-type]
    bundled = api.render([DRA.parents[3] / "policies"]).policy
    assert bundled is not None
    quiet = _Cluster([])
    assert _resource_slices(bundled, quiet) == [] and quiet.listed == []  # type: ignore[arg-type]
