"""Adopt stage, second phase: the card types of the pools. A card in hetgitops' catalogue is
written as the catalogue has it; any other becomes a new CardType with placeholders the reader
fills in, and the MIG profile table that says what one slice of it is worth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hetgitops.adopt import nodes as nodeinfo
from hetgitops.adopt.fields import count_of
from hetgitops.adopt.findings import finding
from hetgitops.adopt.infer.documents import Inferred, document
from hetgitops.adopt.infer.pools import Catalogue, Pool, Pools
from hetgitops.diagnostics import Span
from hetgitops.model import mig

VENDORS = ("nvidia", "amd", "huawei", "cambricon", "intel")


@dataclass(frozen=True)
class CardedPool:
    """A pool with what one unit of its card resource is worth settled: the card's MIG
    profile table (the catalogue's, or the one chosen here for a new card) and the MIG
    strategy the card resource counts under."""

    pool: Pool
    mig_table: str
    strategy: str


@dataclass(frozen=True)
class Cards:
    """The second phase's result: the pools in order, carded, and each card's lifecycle
    stage (a team on a card outside the Fleet's default stages must name its stage)."""

    pools: tuple[CardedPool, ...]
    lifecycles: Mapping[str, Any]


def card_types(found: Pools, catalogue: Catalogue, inferred: Inferred) -> Cards:
    pools = found.pools
    tables: dict[str, str] = {}
    lifecycles: dict[str, Any] = {}
    for name in sorted({p.card.name for p in pools}):
        members = [p for p in pools if p.card.name == name]
        if members[0].card.known:
            spec = _known_card(name, members, catalogue, inferred)
        else:
            spec = _new_card(name, members, inferred)
        inferred.cards.append(document("CardType", name, spec))
        lifecycles[name] = spec.get("lifecycle")
        tables[name] = str((spec.get("mig") or {}).get("profileTable") or "")
    return Cards(
        tuple(
            CardedPool(
                p, tables[p.card.name] or _catalogue_table(catalogue, p), found.strategy or "mixed"
            )
            for p in pools
        ),
        lifecycles,
    )


def _known_card(
    name: str, members: Sequence[Pool], catalogue: Catalogue, inferred: Inferred
) -> dict[str, Any]:
    """The catalogue's spec; without pciDeviceIds when every MIG pool of the card runs a
    mig-parted config without device-filter (the render would add one from them)."""
    spec = dict(catalogue[name]["spec"])
    mig_pools = [p for p in members if "mig" in p.spec]
    if "pciDeviceIds" in spec and mig_pools and all(p.mig_unfiltered for p in mig_pools):
        del spec["pciDeviceIds"]
        inferred.note(
            "CardType",
            name,
            "pciDeviceIds left out: the cluster's MIG configs for it name no device-filter.",
        )
    return spec


def _catalogue_table(catalogue: Catalogue, pool: Pool) -> str:
    spec = (catalogue.get(pool.card.name) or {}).get("spec") or {}
    return str((spec.get("mig") or {}).get("profileTable") or "")


def _new_card(name: str, members: Sequence[Pool], inferred: Inferred) -> dict[str, Any]:
    """A card not in the catalogue, from what its first pool's nodes say."""
    pool = members[0]
    vendor = pool.card.resource.split("/")[0].split(".")[0]
    spec: dict[str, Any] = {
        "vendor": vendor if vendor in VENDORS else "nvidia",
        "model": pool.card.product or name,
        "resourceName": pool.card.resource,
        "memoryGiB": _memory_gib(pool),
        "lifecycle": "production",
    }
    if pool.card.product:
        spec["productNames"] = [pool.card.product]
    table = _profile_table([m for p in members for m in p.mig_profiles])
    if table:  # the card's nodes run MIG: the first table with every profile they use
        spec["mig"] = {"profileTable": table}
    # A placeholder the reader must replace: quota in normalized units would be wrong.
    spec["performance"] = {
        "coefficient": 1.0,
        "reference": name,
        "benchmark": "TODO",
        "coefficientSet": "TODO",
    }
    inferred.note(
        "CardType",
        name,
        "TODO: not in hetgitops' catalogue. Measure the card "
        "and add spec.performance (coefficient against the fleet's reference); "
        "check vendor, memoryGiB and the MIG profile table (the first with every "
        "profile its nodes use).",
    )
    span = (
        pool.nodes[0].span
        if pool.nodes
        else (pool.flavor.span if pool.flavor else Span("<import>"))
    )
    inferred.diagnostics.append(
        finding(
            "import-unknown-card",
            f"card {pool.card.product or pool.card.resource} of pool {pool.name} is not in the "
            f"catalogue: written as new CardType {name} without a performance coefficient",
            span,
        )
    )
    return spec


def _profile_table(profiles: Sequence[str]) -> str:
    if not profiles:
        return ""
    wanted = {mig.gpu_instance_profile(p) for p in profiles}
    return next((n for n, t in mig.TABLES.items() if wanted <= set(t.profiles)), "")


def _memory_gib(pool: Pool) -> int:
    for node in pool.nodes:
        mib = count_of(node.labels.get(nodeinfo.MEMORY_LABEL, ""), most=2**40)
        if mib is not None:
            return max(1, round(mib / 1024))
    return 16
