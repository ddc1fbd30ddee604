"""Diff stage, MIG drain plan: the nodes whose GPU partitioning changes, from the two sides'
node plans (`nvidia.com/mig.config` per node) and mig-parted ConfigMaps.

mig-manager reconfigures a node when its label or config changes and does not judge whether
that is safe: GPU pods on the GPUs that change must be drained first, and a MIG-mode flip
stops the node's GPU stack (NVIDIA/gpu-operator#262, NVIDIA/mig-parted#19).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from hetgitops.diagnostics import NOWHERE, Span
from hetgitops.output.manifests import Manifest

# libyaml's safe loader when PyYAML has it: the mig-parted files of a large fleet are long.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
ALL = -1  # a mig-parted entry with `devices: all`

Layout = dict[int, tuple[bool, tuple[tuple[str, int], ...]]]


@dataclass(frozen=True)
class Drain:
    """A node to drain of GPU pods before the new config applies. `gpus` are the indices
    whose layout changes (empty = every GPU); `mode_flip` when MIG turns on or off."""

    node: str
    pool: str
    before: str
    after: str
    gpus: tuple[int, ...]
    mode_flip: bool
    span: Span = NOWHERE


def _configs(manifests: Sequence[Manifest]) -> dict[str, list[Any]]:
    """Config name -> mig-parted entries from every ConfigMap holding a mig-configs file."""
    found: dict[str, list[Any]] = {}
    for m in manifests:
        if m.kind != "ConfigMap":
            continue
        for text in (m.obj.get("data") or {}).values():
            if "mig-configs" not in text:
                continue
            document = yaml.load(text, Loader=_LOADER)
            if isinstance(document, dict) and isinstance(document.get("mig-configs"), dict):
                found.update(document["mig-configs"])
    return found


def _node_labels(manifests: Sequence[Manifest]) -> dict[str, tuple[Mapping[str, str], Span]]:
    return {
        m.name: (m.obj.get("metadata", {}).get("labels") or {}, m.origin)
        for m in manifests
        if m.kind == "Node"
    }


def _layout(entries: list[Any]) -> Layout:
    layout: Layout = {}
    for entry in entries:
        devices = entry.get("devices")
        indices = [ALL] if devices == "all" else [int(d) for d in devices or []]
        profiles = tuple(sorted((entry.get("mig-devices") or {}).items()))
        for index in indices:
            layout[index] = (bool(entry.get("mig-enabled")), profiles)
    return layout


def _at(layout: Layout, index: int) -> tuple[bool, tuple[tuple[str, int], ...]] | None:
    return layout.get(index, layout.get(ALL))


def _changed(old: Layout, new: Layout) -> tuple[tuple[int, ...], bool]:
    indices = sorted({*old, *new} - {ALL}) or [ALL]
    changed = [i for i in indices if _at(old, i) != _at(new, i)]
    flip = any((_at(old, i) or (False, ()))[0] != (_at(new, i) or (False, ()))[0] for i in changed)
    return tuple(i for i in changed if i != ALL), flip


def drain_plan(
    before: Sequence[Manifest], after: Sequence[Manifest], pools: Mapping[str, str]
) -> list[Drain]:
    """Nodes on both sides whose MIG layout changes; `pools` maps node -> pool for display.
    A node only added or removed has nothing running to drain."""
    old_nodes, new_nodes = _node_labels(before), _node_labels(after)
    old_configs, new_configs = _configs(before), _configs(after)
    # A layout per config name, not per node: thousands of nodes share a few configs.
    old_layouts: dict[str, Layout] = {}
    new_layouts: dict[str, Layout] = {}
    drains = []
    for name in sorted(set(old_nodes) & set(new_nodes)):
        old_name = old_nodes[name][0].get(MIG_CONFIG_LABEL)
        new_name, span = new_nodes[name][0].get(MIG_CONFIG_LABEL), new_nodes[name][1]
        if old_name is None or new_name is None:
            continue  # not a MIG-managed node on one side: mig-manager leaves it alone
        if old_name not in old_layouts:
            old_layouts[old_name] = _layout(old_configs.get(old_name, []))
        if new_name not in new_layouts:
            new_layouts[new_name] = _layout(new_configs.get(new_name, []))
        old_layout, new_layout = old_layouts[old_name], new_layouts[new_name]
        if old_name == new_name and old_layout == new_layout:
            continue
        gpus, flip = _changed(old_layout, new_layout)
        if gpus or flip or old_layout != new_layout:
            drains.append(Drain(name, pools.get(name, ""), old_name, new_name, gpus, flip, span))
    return drains
