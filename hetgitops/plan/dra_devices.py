"""Plan stage: the devices NVIDIA's DRA driver publishes (ResourceSlice devices,
resource.k8s.io/v1) as `plan/dra.py`'s facts see them: which a DeviceClass `dra.selector`
writes would select, and how many whole GPUs and MIG devices a DRA pool's node publishes.
Drift reads live ResourceSlices through these."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hetgitops.model import quantities
from hetgitops.model.policy import CardType, Pool
from hetgitops.plan.dra import ARCHITECTURES, DRIVER, MEMORY_TOLERANCE


def attribute(attributes: Mapping[str, Any], name: str) -> Any:
    """A published attribute's value (ResourceSlice attributes are `{string|int|bool|version:
    v}`, by a name the driver's domain qualifies when it carries none)."""
    found = attributes.get(name, attributes.get(f"{DRIVER}/{name}"))
    if not isinstance(found, Mapping):
        return None
    return next((found[k] for k in ("string", "int", "bool", "version") if k in found), None)


def unselected(card: CardType, profile: str | None, device: Mapping[str, Any]) -> str:
    """Why the DeviceClass `selector(card, profile)` would not select a ResourceSlice device
    (resource.k8s.io/v1 Device: `attributes`, `capacity`), '' when it would: the facts the
    selector is written from, compared in Python (the API server's CEL decides in the
    cluster; the two agree on the driver's published values)."""
    attributes = device.get("attributes") or {}
    kind = "mig" if profile else "gpu"
    if attribute(attributes, "type") != kind:
        return f"type is {attribute(attributes, 'type')!r}, not {kind!r}"
    product = str(attribute(attributes, "productName") or "").replace(" ", "-")
    if card.product_names and product not in card.product_names:
        return f"productName {product or 'absent'!r} is not {'/'.join(card.product_names)}"
    arch = ARCHITECTURES.get(card.architecture, "")
    if attribute(attributes, "architecture") != arch:
        return f"architecture {attribute(attributes, 'architecture')!r} is not {arch!r}"
    if profile:
        found = attribute(attributes, "profile")
        return "" if found == profile else f"profile {found!r} is not {profile!r}"
    return _memory_problem(card, device.get("capacity") or {})


def _memory_problem(card: CardType, capacity: Mapping[str, Any]) -> str:
    memory = capacity.get("memory", capacity.get(f"{DRIVER}/memory"))
    value = memory.get("value") if isinstance(memory, Mapping) else None
    try:
        gib = quantities.value_of(str(value)) / (1 << 30) if value is not None else None
    except quantities.QuantityError:
        gib = None
    low = math.floor(card.memory_gib * (1 - MEMORY_TOLERANCE))
    high = math.ceil(card.memory_gib * (1 + MEMORY_TOLERANCE))
    if gib is None or not low <= gib <= high:
        return f"memory {value or 'absent'} is outside {low}Gi-{high}Gi"
    return ""


def published(pool: Pool, cards: int) -> dict[str | None, int]:
    """The devices the driver publishes on a node of `cards` GPUs: whole GPUs (key None) and
    MIG devices per profile, as the pool's MIG layout partitions them."""
    found: dict[str | None, int] = {}
    partitioned = 0
    for device in pool.mig:
        gpus = cards if device.gpus is None else len(device.gpus)
        partitioned += gpus
        for profile, count in device.profiles.items():
            found[profile] = found.get(profile, 0) + gpus * count
    found[None] = max(0, cards - partitioned)
    return found
