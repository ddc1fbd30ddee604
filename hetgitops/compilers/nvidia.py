"""Compile stage, NVIDIA side: mig-parted configs and device-plugin sharing configs per node.

Shared by the `gpu-operator` target (which ships the configs in ConfigMaps) and the `nodes`
target (which points each node at one of them with a label), so both sides always agree on a
config's name.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hetgitops.model.policy import CardType, Node, Policy, Pool, derived
from hetgitops.output.manifests import FlowList
from hetgitops.plan.capacity import covered_gpus, mig_strategy

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"
# The operator seeds this name on every node without a label; a custom config must contain it.
ALL_DISABLED = "all-disabled"
# The device-plugin config nodes without a sharing label fall back to (ClusterPolicy default).
DEFAULT_SHARING = "default"
MAX_LABEL_VALUE = 63
DIGEST_CHARS = 10


def is_nvidia(card: CardType | None) -> bool:
    return card is not None and card.resource_name.startswith("nvidia.com/")


def nvidia_pools(policy: Policy) -> list[tuple[Pool, CardType]]:
    """Pools whose card type is known and served by NVIDIA's device plugin, by name."""
    found = []
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        if card is not None and is_nvidia(card):
            found.append((pool, card))
    return found


def _device_filter(card: CardType) -> str | list[str] | None:
    ids = list(card.pci_device_ids)
    if not ids:
        return None
    return ids[0] if len(ids) == 1 else ids


def mig_entries(pool: Pool, card: CardType, cards: int) -> list[dict[str, Any]]:
    """mig-parted entries covering every GPU index of a node with `cards` GPUs.

    `assert` (run by mig-manager on every restart) fails unless each GPU matches an entry,
    so whole GPUs get an explicit `mig-enabled: false` entry instead of being left out."""
    layout = covered_gpus(pool, cards)
    groups: dict[str, tuple[list[int], dict[str, int]]] = {}
    for index in range(cards):
        profiles = dict(sorted(layout.get(index, {}).items()))
        key = json.dumps(profiles, sort_keys=True)
        groups.setdefault(key, ([], profiles))[0].append(index)
    entries = [_entry(card, indexes, profiles) for indexes, profiles in groups.values()]
    if pool.mig_config_name and len(entries) == 1 and all(d.gpus is None for d in pool.mig):
        entries[0]["devices"] = "all"  # an adopted config keeps its spelling for every GPU
    return entries


def _entry(card: CardType, indexes: list[int], profiles: dict[str, int]) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    device_filter = _device_filter(card)
    if device_filter is not None:
        entry["device-filter"] = device_filter
    entry["devices"] = FlowList(indexes)
    entry["mig-enabled"] = bool(profiles)
    if profiles:
        entry["mig-devices"] = profiles
    return entry


def content_digest(content: Any) -> str:
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def mig_config_name(card: CardType, entries: list[dict[str, Any]]) -> str:
    """`<card-type>-<digest of the entries>`: a geometry change is a new name (and a label
    flip that mig-manager acts on), never an in-place edit it would ignore."""
    digest = content_digest(entries)
    prefix = card.name[: MAX_LABEL_VALUE - DIGEST_CHARS - 1]
    return f"{prefix}-{digest}"


def node_mig_config(policy: Policy, pool: Pool, node: Node) -> tuple[str, list[Any]] | None:
    """The named mig-parted config a node of `pool` needs, or None when MIG stays untouched.

    MIG-capable cards without a layout get `all-disabled` written out rather than left to the
    operator's seeding, so removing a layout from the policy really turns MIG off."""
    card = policy.card_type_of(pool)
    if card is None or not is_nvidia(card):
        return None
    if pool.mig:
        # The config depends on the pool and the node's GPU count only: built once per size.
        # (The name digests the entries: also once per size, not per node.)
        key = ("mig_config", pool.name, node.cards)
        return derived(policy, key, lambda: _named_config(pool, card, node.cards))
    if card.mig_table is not None:
        return ALL_DISABLED, []
    return None


def _named_config(pool: Pool, card: CardType, cards: int) -> tuple[str, list[Any]]:
    entries = mig_entries(pool, card, cards)
    return pool.mig_config_name or mig_config_name(card, entries), entries


def sharing_config_name(pool: Pool) -> str | None:
    """Device-plugin config key for a shared pool; every setting is spelled in the name, so
    a changed setting is a new key and a label flip (the operator does not watch the
    ConfigMap, so an in-place edit would wait for a DaemonSet restart). An adopted cluster's
    own key (`configName`) is kept as it is. During a staged reduction (`retiringReplicas`)
    the key, and so the device plugin, stay at the old count."""
    if pool.sharing_config_name and (pool.time_slicing_replicas or pool.mps_replicas):
        return pool.sharing_config_name
    if pool.time_slicing_replicas:
        name = f"time-slicing-{pool.advertised_replicas}"
        if pool.rename_by_default:
            name += "-renamed"
        if pool.fail_requests_greater_than_one:
            name += "-strict"
        return name
    if pool.mps_replicas:
        return f"mps-{pool.advertised_replicas}"
    return None


def _flags(policy: Policy) -> dict[str, Any]:
    return {"migStrategy": mig_strategy(policy.fleet)}


def default_sharing_config(policy: Policy) -> dict[str, Any]:
    return {"version": "v1", "flags": _flags(policy)}


def sharing_config(policy: Policy, pool: Pool, card: CardType) -> dict[str, Any] | None:
    """The device-plugin config file for a time-sliced or MPS pool (time-slicing first,
    as `Pool.shared_replicas` counts it), with the replicas the plugin advertises (the old
    count while `retiringReplicas` stages a reduction)."""
    config = default_sharing_config(policy)
    if pool.time_slicing_replicas:
        resources = [{"name": card.resource_name, "replicas": pool.advertised_replicas}]
        config["sharing"] = {
            "timeSlicing": {
                "renameByDefault": pool.rename_by_default,
                "failRequestsGreaterThanOne": pool.fail_requests_greater_than_one,
                "resources": resources,
            }
        }
    elif pool.mps_replicas:
        resources = [{"name": card.resource_name, "replicas": pool.advertised_replicas}]
        config["sharing"] = {"mps": {"renameByDefault": False, "resources": resources}}
    else:
        return None
    return config


def node_nvidia_labels(policy: Policy, pool: Pool, node: Node) -> dict[str, str]:
    """The only `nvidia.com/` labels hetgitops writes: which MIG and sharing config to use."""
    labels: dict[str, str] = {}
    mig_config = node_mig_config(policy, pool, node)
    if mig_config is not None:
        labels[MIG_CONFIG_LABEL] = mig_config[0]
    if is_nvidia(policy.card_type_of(pool)):
        sharing = sharing_config_name(pool)
        if sharing is not None:
            labels[DEVICE_PLUGIN_LABEL] = sharing
    return labels
