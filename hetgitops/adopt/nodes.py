"""Adopt stage: what a Node says about accelerators and card types matched to the catalogue
(node names become the ranges `Pool.spec.nodes` takes with `model.ranges.compact`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hetgitops.adopt.fields import ACCELERATOR_PREFIXES as ACCELERATOR_PREFIXES
from hetgitops.adopt.fields import count_of

PRODUCT_LABELS = ("nvidia.com/gpu.product", "amd.com/gpu.product-name", "huawei.com/npu.product")
MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB, from GPU feature discovery
PCI_LABEL = re.compile(r"^feature\.node\.kubernetes\.io/pci-[0-9a-f]{4}_?([0-9a-f]{4})?")
ZONE_LABEL = "topology.kubernetes.io/zone"


def labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((obj.get("metadata") or {}).get("labels") or {}).items()}


def accelerators(obj: Mapping[str, Any]) -> dict[str, int]:
    """Accelerator resources the node's kubelet advertises (allocatable, else capacity), read
    as Kubernetes quantities (`1k` is 1000); `fields` left out every node with a count that
    is not a whole, plausible number, with a finding."""
    status = obj.get("status") or {}
    found = status.get("allocatable") or status.get("capacity") or {}
    counts: dict[str, int] = {}
    for name, value in found.items():
        if str(name).startswith(ACCELERATOR_PREFIXES) and (number := count_of(value)):
            counts[str(name)] = number
    return counts


@dataclass(frozen=True)
class CardMatch:
    name: str  # a catalogue name, or a new one
    known: bool
    resource: str
    product: str


def match_card(
    obj: Mapping[str, Any], catalogue: Mapping[str, Mapping[str, Any]]
) -> CardMatch | None:
    """The card type of a node: by product name label, else PCI device id label, else the
    only catalogue entry with the node's accelerator resource name. Nodes of one kind say the
    same things, so the answer is memoized on what the match reads (5,000 nodes, few kinds)."""
    counts = accelerators(obj)
    whole = [r for r in counts if not r.startswith("nvidia.com/mig-")]
    resource = whole[0] if whole else ("nvidia.com/gpu" if counts else "")
    if not resource:
        return None
    node_labels = labels(obj)
    product = next((node_labels[k] for k in PRODUCT_LABELS if k in node_labels), "")
    pci = tuple(sorted(k for k in node_labels if _pci_device(k)))
    signature = (id(catalogue), resource, product, pci)
    if signature not in _MATCHES:
        _MATCHES[signature] = _match(resource, product, pci, catalogue)
    return _MATCHES[signature]


_MATCHES: dict[tuple[int, str, str, tuple[str, ...]], CardMatch] = {}


def _match(
    resource: str, product: str, pci: tuple[str, ...], catalogue: Mapping[str, Mapping[str, Any]]
) -> CardMatch:
    for name, doc in catalogue.items():
        spec = doc.get("spec") or {}
        names = {simple(p) for p in spec.get("productNames") or []}
        if product and simple(product) in names | {simple(str(spec.get("model", "")))}:
            return CardMatch(name, True, str(spec.get("resourceName", resource)), product)
    for name, doc in catalogue.items():
        ids = {str(i).lower()[2:6] for i in (doc.get("spec") or {}).get("pciDeviceIds") or []}
        if any(_pci_device(k) in ids for k in pci):
            return CardMatch(name, True, resource, product)
    same = [
        n for n, d in catalogue.items() if (d.get("spec") or {}).get("resourceName") == resource
    ]
    if not product and len(same) == 1:
        return CardMatch(same[0], True, resource, product)
    return CardMatch(_new_name(product or resource), False, resource, product)


def simple(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower().removeprefix("nvidia-").removeprefix("nvidia"))


def _pci_device(key: str) -> str:
    match = PCI_LABEL.match(key)
    return match.group(1) if match and match.group(1) else ""


def _new_name(text: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", text.lower().removeprefix("nvidia-")).strip("-")
    return (name or "unknown-card")[:63].strip("-")


def most_common(values: Iterable[Any]) -> Any:
    counted = Counter(values)
    return counted.most_common(1)[0][0] if counted else None
