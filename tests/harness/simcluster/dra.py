"""Dynamic Resource Allocation in the simulated fleet: what NVIDIA's k8s-dra-driver-gpu and its
chart put on a cluster where kwok stands in for the kubelets, and Kueue's DRA configuration.

- **ResourceSlices**: one per node of each DRA pool, as the driver's kubelet plugin publishes
  them (`tests/dra_driver.py`: attribute names of v25.12.0, NVML's values). A real kubelet never
  puts DRA devices into a Node's allocatable (kube-scheduler treats a DRA-backed resource as
  absent there, k8s v1.35.2 `pkg/scheduler/framework/plugins/noderesources/
  extendeddynamicresources.go:241-246`), so `fleet.py` advertises none for them; only a pool
  still `migratingFrom: devicePlugin` keeps what the device plugin advertises (`plugin_view`).
- **The driver's own DeviceClass** `gpu.nvidia.com` (chart `templates/deviceclass-gpu.yaml`:
  every full GPU of the driver, `extendedResourceName: nvidia.com/gpu` on resource.k8s.io/v1;
  /work/shared/reference/turn4-field.md 4.4), which carries the extended-resource path.
- **Kueue's `resources.deviceClassMappings`**: written into the manager's Configuration, then
  Kueue restarts, as on a real cluster (Kueue v0.19.2 builds its mapper once at start-up,
  `pkg/dra/mapper.go:44-45`).

kwok needs nothing more: its pod stages run any bound pod (`stage-pod-ready.yaml` reads only
the phase and conditions); the real kube-scheduler binds a pod with claims only after it wrote
the allocation into each ResourceClaim's status, and kube-controller-manager's
resourceclaim-controller creates the claims from the pods' templates.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import dra_driver
import yaml

from hetgitops.model.policy import Policy, Pool
from hetgitops.plan import dra

from . import cluster

DRIVER_MANAGER = "hetgitops-simcluster-dra-driver"
DRIVER_CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": dra.DRIVER},
    "spec": {
        "selectors": [
            {
                "cel": {
                    "expression": (
                        f"device.driver == '{dra.DRIVER}' && "
                        f"device.attributes['{dra.DRIVER}'].type == 'gpu'"
                    )
                }
            }
        ],
        "extendedResourceName": "nvidia.com/gpu",
    },
}


def plugin_view(pool: Pool) -> Pool | None:
    """The pool as NVIDIA's device plugin sees it on a DRA pool's nodes: as a device-plugin pool
    while it is still `migratingFrom: devicePlugin` (the plugin runs until the migration ends,
    docs/targets/dra.md), else None (the GPU Operator's per-node switch keeps it away)."""
    if pool.migrating_from != dra.DEVICE_PLUGIN:
        return None
    return dataclasses.replace(pool, allocation=dra.DEVICE_PLUGIN, migrating_from=None)


def slices(policy: Policy) -> list[dict[str, Any]]:
    return dra_driver.slices(policy)


def _live_slices(sim: cluster.SimCluster) -> list[dict[str, Any]]:
    listed = json.loads(sim.kubectl("get", "resourceslices", "-o", "json").stdout)
    return [s for s in listed["items"] if s["spec"].get("driver") == dra.DRIVER]


def publish(sim: cluster.SimCluster, policy: Policy) -> list[dict[str, Any]]:
    """Publish the policy's slices (the driver's kubelet plugins starting on the DRA pools'
    nodes) and withdraw the driver's slices of every other node; return the published ones."""
    wanted = slices(policy)
    names = {s["metadata"]["name"] for s in wanted}
    stale = [s["metadata"]["name"] for s in _live_slices(sim) if s["metadata"]["name"] not in names]
    if stale:
        sim.kubectl("delete", "resourceslices", *stale, "--wait=true")
    cluster.apply_objects(sim, wanted, manager=DRIVER_MANAGER)
    return wanted


def withdraw(sim: cluster.SimCluster) -> None:
    """Every slice of the driver gone, as when it is uninstalled."""
    names = [s["metadata"]["name"] for s in _live_slices(sim)]
    if names:
        sim.kubectl("delete", "resourceslices", *names, "--wait=true")


def configure_kueue(sim: cluster.SimCluster, configuration: Mapping[str, Any] | None) -> None:
    """Merge a Configuration fragment's `resources` (the rendered
    `kueue/kueue-configuration-dra.yaml`) into the Kueue manager's Configuration and restart it;
    None removes it. No restart when nothing changes."""
    path = sim.run_dir / cluster.KUEUE_RESOURCES
    resources = (configuration or {}).get("resources")
    text = yaml.safe_dump(resources, sort_keys=True) if resources else ""
    if (path.read_text() if path.is_file() else "") == text:
        return
    if text:
        path.write_text(text)
    else:
        path.unlink()
    cluster.restart_kueue(sim)
