"""What NVIDIA's DRA driver publishes for a policy's DRA pools: one ResourceSlice per node, as
k8s-dra-driver-gpu v25.12.0 writes them (attribute names: cmd/gpu-kubelet-plugin/deviceinfo.go:
159-265; an unqualified name is the driver's domain), with NVML's values for the cards
(productName with spaces, memory in bytes: 81559 MiB for an H100 80GB HBM3, 46068 MiB for an
L40S). Shared by drift's unit tests and the e2e control plane, where no driver runs."""

from __future__ import annotations

from typing import Any

from hetgitops.model.policy import Policy
from hetgitops.plan import dra, dra_devices

NVML = {
    "h100-80gb": ("NVIDIA H100 80GB HBM3", "Hopper", 81559),
    "l40s-48gb": ("NVIDIA L40S", "Ada Lovelace", 46068),
}


def device(name: str, card: str, profile: str | None = None) -> dict[str, Any]:
    product, arch, mib = NVML[card]
    attributes: dict[str, Any] = {
        "type": {"string": "mig" if profile else "gpu"},
        "productName": {"string": product},
        "architecture": {"string": arch},
        "uuid": {"string": f"GPU-{name}"},
    }
    if profile:
        attributes["profile"] = {"string": profile}
        mib = int(profile.split("g.")[1].removesuffix("gb")) * 1024
    return {"name": name, "attributes": attributes, "capacity": {"memory": {"value": f"{mib}Mi"}}}


def slices(policy: Policy) -> list[dict[str, Any]]:
    """One slice per node of each DRA pool, with what the driver would publish there (device
    names are DNS labels, as the API requires: a MIG profile's dot becomes a dash)."""
    found = []
    for pool in policy.pools.values():
        if not dra.on_dra(pool):
            continue
        for node in pool.nodes:
            devices = []
            for profile, count in dra_devices.published(pool, node.cards).items():
                label = (profile or "gpu").replace(".", "-")
                devices += [
                    device(f"{node.name}-{label}-{i}", pool.card_type, profile)
                    for i in range(count)
                ]
            spec = {
                "driver": dra.DRIVER,
                "nodeName": node.name,
                "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            }
            found.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{node.name}-gpu"},
                    "spec": spec,
                }
            )
    return found
