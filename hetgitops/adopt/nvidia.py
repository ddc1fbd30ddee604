"""Adopt stage: the GPU Operator's MIG layouts and device-plugin sharing into the pools.

A node's `nvidia.com/mig.config` label names a mig-parted config, and its
`nvidia.com/device-plugin.config` label (else the ClusterPolicy's default) a device-plugin
config; both live in ConfigMaps (the ClusterPolicy names them, or any ConfigMap whose data
reads as one). The config a pool's nodes use becomes `spec.mig` (the entries for the pool's
card, by PCI device filter) or `spec.timeSlicing` / `spec.mps`, keeping the config's name
(`configName`) so the first sync relabels no node. The GPU Operator's own
`default-mig-parted-config` is the operator's: its configs are copied into the policy's
ConfigMap; a custom ConfigMap becomes the Fleet's and is compared by the round trip.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hetgitops.adopt import fields
from hetgitops.adopt import nodes as nodeinfo
from hetgitops.adopt.fields import count_of
from hetgitops.adopt.findings import finding
from hetgitops.adopt.sources import Imported, read_live
from hetgitops.diagnostics import Diagnostic

MIG_LABEL = "nvidia.com/mig.config"
SHARING_LABEL = "nvidia.com/device-plugin.config"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"  # physical GPUs, from GPU feature discovery
MIG_KEY = "config.yaml"
OPERATOR_MIG_CONFIG = "default-mig-parted-config"
ALL_DISABLED = "all-disabled"


@dataclass
class GpuConfigs:
    """What the cluster's GPU Operator configuration says, by config name."""

    mig: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    sharing: dict[str, dict[str, Any]] = field(default_factory=dict)
    mig_map: Imported | None = None  # a custom mig-parted ConfigMap (not the operator's)
    sharing_map: Imported | None = None
    default_sharing: str = ""
    strategy: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)  # configs it could not read

    def used(self) -> bool:
        return self.mig_map is not None or self.sharing_map is not None


def _load(item: Imported, key: str, shape: Any, marks: tuple[str, ...], found: GpuConfigs) -> Any:
    """One data value, read by the bounded loader and typed; a value that reads as the config
    (it carries one of `marks`) but cannot be read so is a finding at the ConfigMap."""
    text = (item.obj.get("data") or {}).get(key)
    data, problem = fields.embedded(f"{item.span.file}#data.{key}", text, shape)
    if problem and isinstance(text, str) and any(m in text for m in marks):
        found.diagnostics.append(
            finding(
                "import-unreadable",
                f"ConfigMap {item.namespace}/{item.name} data.{key}: {problem}; "
                "import reads nothing from it",
                item.span,
                path=f"data.{key}",
            )
        )
    return data


def read(by_kind: Mapping[str, Sequence[Imported]]) -> GpuConfigs:
    found = GpuConfigs()
    policy = next(iter(by_kind.get("ClusterPolicy", [])), None)
    spec = (policy.obj.get("spec") or {}) if policy is not None else {}
    mig_name = str(((spec.get("migManager") or {}).get("config") or {}).get("name") or "")
    plugin = (spec.get("devicePlugin") or {}).get("config") or {}
    sharing_name = str(plugin.get("name") or "")
    found.default_sharing = str(plugin.get("default") or "")
    found.strategy = str((spec.get("mig") or {}).get("strategy") or "")
    for item in sorted(by_kind.get("ConfigMap", []), key=lambda c: c.name == OPERATOR_MIG_CONFIG):
        data = item.obj.get("data") or {}
        if not isinstance(data, Mapping):
            continue
        document = (
            _load(item, MIG_KEY, fields.MIG_CONFIG, ("mig-configs",), found)
            if MIG_KEY in data
            else None
        )
        if isinstance(document, Mapping) and isinstance(document.get("mig-configs"), Mapping):
            if mig_name and item.name != mig_name and item.name != OPERATOR_MIG_CONFIG:
                continue
            for name, entries in document["mig-configs"].items():
                if isinstance(entries, list):
                    found.mig.setdefault(str(name), entries)
            if item.name != OPERATOR_MIG_CONFIG and found.mig_map is None:
                found.mig_map = item
            continue
        if sharing_name and item.name != sharing_name:
            continue
        configs = {
            k: _load(item, str(k), fields.SHARING_CONFIG, ("sharing:", "flags:"), found)
            for k in data
        }
        configs = {
            k: v
            for k, v in configs.items()
            if isinstance(v, Mapping) and v.get("version") and ("sharing" in v or "flags" in v)
        }
        if configs and found.sharing_map is None:
            found.sharing.update(configs)
            found.sharing_map = item
    if not found.strategy:  # every device-plugin config carries the strategy in its flags
        strategies = [
            str((c.get("flags") or {}).get("migStrategy") or "") for c in found.sharing.values()
        ]
        found.strategy = nodeinfo.most_common(s for s in strategies if s) or ""
    return found


def cards_per_node(node: Imported, replicas: int, layout: Mapping[str, Any] | None = None) -> int:
    """Physical GPUs of a node: GFD's count label, else what it advertises over replicas plus
    the GPUs its MIG `layout` partitions. Under the mixed strategy a GPU in MIG mode shows only
    as its slices' resources, never in `nvidia.com/gpu`: without GFD, counting the whole ones
    alone made a pool with GPUs 0-3 in MIG mode and 4-7 whole a 4-GPU pool whose quota of
    whole cards nothing could hold."""
    count = count_of(node.labels.get(GPU_COUNT_LABEL, ""))
    if count:
        return count
    advertised = nodeinfo.accelerators(node.obj)
    whole = sum(v for k, v in advertised.items() if not k.startswith("nvidia.com/mig-"))
    return max(1, whole // max(1, replicas) + _mig_gpus(advertised, layout))


def _mig_gpus(advertised: Mapping[str, int], layout: Mapping[str, Any] | None) -> int:
    """How many of a node's GPUs its MIG layout partitions: the GPUs an entry lists, or for
    an `all` entry as many as the node's slices of one of its profiles fill."""
    if layout is None:
        return 0
    found = 0
    for device in layout.get("devices") or []:
        gpus = device.get("gpus")
        if isinstance(gpus, list):
            found += len(gpus)
            continue
        profiles = (device.get("profiles") or {}).items()
        per_gpu = {str(p): n for p, n in profiles if isinstance(n, int) and n > 0}
        found += max(
            (advertised.get(f"nvidia.com/mig-{p}", 0) // n for p, n in per_gpu.items()),
            default=0,
        )
    return found


def mig_layout(
    configs: GpuConfigs, members: Sequence[Imported], pci_ids: Sequence[str]
) -> dict[str, Any] | None:
    """`Pool.spec.mig` for the config the members' label names (the entries for the pool's
    card), or None when MIG is off (all-disabled, no label, no enabled entry)."""
    name = nodeinfo.most_common(
        n.labels.get(MIG_LABEL, "") for n in members if MIG_LABEL in n.labels
    )
    if not name or name == ALL_DISABLED or name not in configs.mig:
        return None
    devices: list[dict[str, Any]] = []
    ids = {i.lower() for i in pci_ids}
    for entry in configs.mig[name]:
        if not isinstance(entry, Mapping):
            continue
        wanted = entry.get("device-filter")
        filters = [wanted] if isinstance(wanted, str) else list(wanted or [])
        if filters and ids and not ids & {str(f).lower() for f in filters}:
            continue
        profiles = entry.get("mig-devices") or {}
        if not entry.get("mig-enabled") or not profiles:
            continue
        gpus = entry.get("devices", "all")
        devices.append(
            {
                "gpus": "all" if gpus == "all" else [int(g) for g in gpus],
                "profiles": {str(p): count_of(n) or 0 for p, n in profiles.items()},
            }
        )
    if not devices:
        return None
    return {"configName": name, "devices": devices}


def mig_unfiltered(configs: GpuConfigs, members: Sequence[Imported]) -> bool:
    """Whether the mig-parted config the members' label names has MIG entries and none of
    them carries a `device-filter` (the render writes one per entry from the card type's
    pciDeviceIds, so such a pool's card type must be written without them)."""
    name = nodeinfo.most_common(
        n.labels.get(MIG_LABEL, "") for n in members if MIG_LABEL in n.labels
    )
    entries = [e for e in configs.mig.get(str(name or ""), []) if isinstance(e, Mapping)]
    enabled = [e for e in entries if e.get("mig-enabled")]
    return bool(enabled) and not any(e.get("device-filter") for e in entries)


def sharing(configs: GpuConfigs, members: Sequence[Imported]) -> tuple[str, dict[str, Any]] | None:
    """('timeSlicing' | 'mps', the pool's setting) for the device-plugin config its nodes use."""
    name = nodeinfo.most_common(
        n.labels.get(SHARING_LABEL, configs.default_sharing) for n in members
    )
    config = configs.sharing.get(str(name or ""))
    shared = (config or {}).get("sharing") or {}
    for kind in ("timeSlicing", "mps"):
        setting = shared.get(kind) if isinstance(shared, Mapping) else None
        if not isinstance(setting, Mapping):
            continue
        resources = setting.get("resources") or []
        if not resources or not isinstance(resources[0], Mapping):
            continue
        replicas = count_of(resources[0].get("replicas") or 0) or 0
        if replicas < 2:
            continue
        found: dict[str, Any] = {"replicas": replicas}
        if kind == "timeSlicing":
            for key in ("renameByDefault", "failRequestsGreaterThanOne"):
                if setting.get(key):
                    found[key] = True
        found["configName"] = str(name)
        return kind, found
    return None


def missing(configs: GpuConfigs, nodes: Sequence[Imported]) -> Iterator[Diagnostic]:
    """One finding per config name the nodes' labels use that the input does not hold (a dump
    without ConfigMaps), at the first node naming it: the pool's MIG layout or replicas are
    then unknown, and that, not the cluster, is why its quotas cannot be kept."""
    seen: set[tuple[str, str]] = set()
    for node in nodes:
        for label, known, what in (
            (MIG_LABEL, configs.mig, "mig-parted"),
            (SHARING_LABEL, configs.sharing, "device-plugin"),
        ):
            name = node.labels.get(label, "")
            if not name or name == ALL_DISABLED or name in known or (label, name) in seen:
                continue
            seen.add((label, name))
            unknown = "MIG layout" if label == MIG_LABEL else "sharing replicas"
            if read_live(node):
                # Read from the cluster itself: the config is missing there, not from a dump,
                # and the GPU Operator cannot apply it either.
                yield finding(
                    "import-config-missing",
                    f"Node {node.name}: its {label} label names the {what} config {name!r}, "
                    "which no ConfigMap in the cluster holds, so the GPU Operator cannot apply "
                    f"it either; the pool is written without its {unknown}, so its quotas "
                    "cannot be kept as the cluster has them",
                    node.span,
                    hint="create the ConfigMap the ClusterPolicy names with that config, or "
                    "label the node with a config it holds; then import again.",
                )
                continue
            yield finding(
                "import-config-missing",
                f"Node {node.name}: its {label} label names the {what} config {name!r}, which "
                f"no ConfigMap of the input holds; the pool is written without its {unknown}, "
                "so its quotas cannot be kept as the cluster has them",
                node.span,
            )
