"""Diff stage, day-2 hazards of Dynamic Resource Allocation (compilers/dra.py, docs/targets/
dra.md): Kueue's deviceClassMappings changing (read once at start-up) and a pool's GPUs moving
from the device plugin to the DRA driver (a DeviceClass appears)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hetgitops.diff.hazards.flavors import flavor_pool, nominal, retiring
from hetgitops.diff.hazards.reading import of_kind
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.output.manifests import Manifest


def _mappings(manifests: Sequence[Manifest]) -> tuple[Manifest | None, dict[str, list[str]]]:
    """The Kueue Configuration fragment and its mappings: name -> device class names."""
    found = of_kind(manifests, "Configuration")
    if not found:
        return None, {}
    resources: Mapping[str, Any] = found[0].obj.get("resources") or {}
    return found[0], {
        str(m.get("name")): sorted(m.get("deviceClassNames") or [])
        for m in resources.get("deviceClassMappings") or []
    }


@hazard_rule(
    "dra-mappings-changed",
    when=(
        "Kueue's resources.deviceClassMappings change (a pool joins or leaves the DRA claims "
        "path, a MIG profile is added): Kueue reads them once at start-up, so until its "
        "manager restarts, workloads claiming a new class are inadmissible and a removed one "
        "keeps being charged."
    ),
    fix="merge kueue/kueue-configuration-dra.yaml into Kueue's Configuration and restart "
    "kueue-controller-manager, then sync the templates that claim the new classes.",
)
def dra_mappings_changed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Kueue v0.19.2 builds its DRA ResourceMapper from the Configuration once
    (pkg/dra/mapper.go:44-45, cmd/kueue/main.go:330); a class missing from it makes a claiming
    workload inadmissible (pkg/dra/claims.go:212-219)."""
    _, old = _mappings(before)
    config, new = _mappings(after)
    if old == new:
        return
    changed = sorted(n for n in old.keys() | new.keys() if old.get(n) != new.get(n))
    where = config if config is not None else of_kind(before, "Configuration")[0]
    yield Hazard(
        rule="dra-mappings-changed",
        subject="Kueue Configuration deviceClassMappings",
        message=f"change for {', '.join(changed)}: Kueue reads the mappings only at start-up, so "
        'workloads claiming a newly mapped class stay inadmissible ("DeviceClass ... is not '
        'mapped in DRA configuration") and a removed mapping keeps charging until it restarts',
        action="restart Kueue: merge kueue/kueue-configuration-dra.yaml into its Configuration "
        "(Helm managerConfig.controllerManagerConfigYaml), `kubectl -n kueue-system rollout "
        "restart deployment/kueue-controller-manager`, then sync the job templates",
        span=where.origin,
    )


def _quota_resources(manifests: Sequence[Manifest], pool: str) -> set[str]:
    """The resources the ClusterQueues give quota on `pool`'s flavors (retiring ones aside)."""
    gone = retiring(manifests)
    return {
        resource
        for f in of_kind(manifests, "ResourceFlavor")
        if flavor_pool(f) == pool and f.name not in gone
        for resource, amount in nominal(manifests, f.name).items()
        if amount > 0
    }


def _moved_pools(
    before: Sequence[Manifest], after: Sequence[Manifest], resource: str
) -> dict[str, list[str]]:
    """Pools with a flavor (a retiring one too) that now gives quota in the mapped `resource`
    -> the accelerator resources their flavor gave quota in before and no flavor that admits
    gives now (the device plugin's names: work pending on them there is never admitted)."""
    pools = sorted(
        {
            flavor_pool(f)
            for f in of_kind(after, "ResourceFlavor")
            if nominal(after, f.name).get(resource, 0) > 0
        }
    )
    found = {}
    for pool in pools:
        lost = _quota_resources(before, pool) - _quota_resources(after, pool)
        found[pool] = sorted(r for r in lost if "/" in r)
    return found


@hazard_rule(
    "dra-pool-moved",
    when=(
        "A card type (or MIG profile) gets its DRA DeviceClass: its pools move from the device "
        "plugin to the DRA driver. Job templates switch from extended resources to claims, "
        "running pods keep their devices, and the ClusterQueues charge the new resource."
    ),
    fix="follow docs/targets/dra.md's migration sequence: DeviceClasses, Kueue mappings and "
    "restart, templates, then node by node drained, device plugin off, driver on.",
)
def dra_pool_moved(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """The order matters: a template claiming a class the scheduler has no DeviceClass or
    ResourceSlice for stays Pending, and one Kueue has no mapping for is inadmissible. Work
    already pending on the pool with the device plugin's resource stays pending for good: no
    flavor of the pool gives that resource quota any more (Kueue v0.19.2 leaves it "insufficient
    quota", pkg/scheduler/flavorassigner/flavorassigner.go:1069-1072 for an uncovered one)."""
    old = {m.name for m in of_kind(before, "DeviceClass")}
    _, mapped = _mappings(after)
    for m in of_kind(after, "DeviceClass"):
        if m.name in old:
            continue
        names = [n for n, classes in mapped.items() if m.name in classes]
        moved = _moved_pools(before, after, names[0]) if names else {}
        lost = ", ".join(f"on pool {pool} ({', '.join(rs)})" for pool, rs in moved.items() if rs)
        left = (
            f" (work pending with the device plugin's resources {lost} is never admitted: "
            "re-render it with `hetgitops jobs` and resubmit)"
            if lost
            else ""
        )
        yield Hazard(
            rule="dra-pool-moved",
            subject=f"DeviceClass {m.name}",
            message="is new: the pools of its card type take their GPUs from the DRA driver. Jobs "
            "rendered from the new templates claim devices instead of requesting extended "
            "resources; running pods keep the devices the device plugin gave them; the "
            "ClusterQueues charge the mapped resource, so plain extended-resource jobs for "
            f"these pools are no longer admitted{left}",
            scope=tuple(("plain", f"{pool}|{r}") for pool, rs in sorted(moved.items()) for r in rs),
            action="1. sync the DeviceClasses; 2. merge the mappings and restart Kueue; 3. sync "
            "the ClusterQueues, claim templates and job templates (new jobs claim and wait for "
            "moved nodes; running pods keep their devices); 4. node by node: cordon, drain, "
            "label it nvidia.com/gpu.deploy.device-plugin=false, start NVIDIA's DRA driver "
            "there (its ResourceSlice published), uncordon; never the driver beside a running "
            "device plugin: kube-scheduler counts the two apart and gives a GPU a plugin pod "
            "holds to a claim too; 5. when every node has moved, remove devices.migratingFrom",
            span=m.origin,
        )
