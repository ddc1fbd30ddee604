"""Drift stage: the devices NVIDIA's DRA driver publishes (live ResourceSlices,
resource.k8s.io/v1) against what a DRA pool's policy counts: per node, whole GPUs and MIG
devices of the card type that the pool's DeviceClass would select. One finding per pool, its
nodes as ranges, a line per node in `details` (as `drift-accelerators` for the device plugin).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hetgitops.diagnostics import Diagnostic
from hetgitops.drift.findings import finding
from hetgitops.model.policy import CardType, Policy, Pool
from hetgitops.model.ranges import compact
from hetgitops.plan import dra, dra_devices

SHOWN = 3


def devices_by_node(slices: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The driver's devices per node (slices of other drivers, or not bound to one node by
    `spec.nodeName`, are not a node's GPUs)."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    for item in slices:
        spec = item.get("spec") or {}
        node = spec.get("nodeName")
        if spec.get("driver") != dra.DRIVER or not isinstance(node, str):
            continue
        found.setdefault(node, []).extend(
            d for d in spec.get("devices") or [] if isinstance(d, dict)
        )
    return found


def check(policy: Policy, slices: Sequence[Mapping[str, Any]]) -> list[Diagnostic]:
    by_node = devices_by_node(slices)
    found: list[Diagnostic] = []
    for pool in policy.pools.values():
        card = policy.card_types.get(pool.card_type)
        if card is None or not dra.on_dra(pool):
            continue
        lines = [
            line
            for node in pool.nodes
            for line in _node(pool, card, node.name, node.cards, by_node)
        ]
        if lines:
            found.append(_finding(pool, lines))
    return found


def _node(
    pool: Pool,
    card: CardType,
    name: str,
    cards: int,
    by_node: Mapping[str, list[Mapping[str, Any]]],
) -> Iterator[tuple[str, str]]:
    """(node, what is off) for one node: no slice, fewer devices, devices not selected."""
    devices = by_node.get(name)
    if devices is None:
        yield name, f"publishes no {dra.DRIVER} ResourceSlice"
        return
    for profile, wanted in sorted(
        dra_devices.published(pool, cards).items(), key=lambda i: i[0] or ""
    ):
        if not wanted:
            continue
        kind = f"MIG {profile}" if profile else "GPU"
        mine = [
            d for d in devices if _kind_of(d) == (("mig", profile) if profile else ("gpu", None))
        ]
        reasons = [(d, dra_devices.unselected(card, profile, d)) for d in mine]
        for device, why in reasons:
            if why:
                yield name, f"device {device.get('name', '?')} ({kind}): {why}"
        selected = sum(1 for _, why in reasons if not why)
        if selected < wanted:
            yield (
                name,
                f"{selected} {kind} device(s) of {card.name} published, the policy counts {wanted}",
            )


def _kind_of(device: Mapping[str, Any]) -> tuple[Any, Any]:
    """(type, MIG profile) a device says it is; a whole GPU's profile is None."""
    attributes = device.get("attributes") or {}
    kind = dra_devices.attribute(attributes, "type")
    return kind, dra_devices.attribute(attributes, "profile") if kind == "mig" else None


def _finding(pool: Pool, lines: list[tuple[str, str]]) -> Diagnostic:
    nodes = sorted({node for node, _ in lines})
    shown = "; ".join(f"{n}: {what}" for n, what in lines[:SHOWN])
    ranges = ", ".join(compact(nodes, sort=True))
    more = f" (+{len(lines) - SHOWN} more)" if len(lines) > SHOWN else ""
    return finding(
        "drift-dra-devices",
        f"pool '{pool.name}': {len(nodes)} node(s) ({ranges}) publish "
        f"fewer {dra.DRIVER} devices than the policy counts, or devices its DeviceClass would "
        f"not select: {shown}{more}",
        pool.origin.at("spec", "devices"),
        details=tuple(f"{n}: {what}" for n, what in lines),
    )
