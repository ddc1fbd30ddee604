"""Scaffold stage: the MIG layouts `init` offers (`--mig POOL=LAYOUT`) as Pool.spec.mig."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hetgitops.model import mig
from hetgitops.scaffold.answers import BadAnswer, PoolAnswer

MIG_LAYOUTS = "all-<profile> (e.g. all-1g.10gb, all-3g.40gb) or mixed"


def with_mig(pools: tuple[PoolAnswer, ...], layouts: Iterable[str]) -> tuple[PoolAnswer, ...]:
    """`pools` with each `POOL=LAYOUT` of `init --mig` set on its pool."""
    chosen: dict[str, str] = {}
    for text in layouts:
        name, _, layout = text.partition("=")
        if not layout or name not in {p.name for p in pools}:
            raise BadAnswer(f"--mig {text!r}: expected POOL=LAYOUT for a pool given by --card "
                            f"or --pool, LAYOUT {MIG_LAYOUTS}")  # fmt: skip
        chosen[name] = layout
    return tuple(
        PoolAnswer(p.name, p.card_type, p.nodes, p.cards_per_node, p.node_names, chosen[p.name])
        if p.name in chosen
        else p
        for p in pools
    )


def _usable_profiles(card: Mapping[str, Any]) -> dict[str, mig.Profile]:
    """The card's MIG profiles a whole-GPU layout can repeat ({} when it cannot be carved)."""
    table_name = card["spec"].get("mig", {}).get("profileTable")
    table = mig.TABLES.get(table_name) if table_name else None
    if table is None:
        return {}
    return {n: p for n, p in table.profiles.items() if "+" not in n}  # +me: one per GPU


def mig_choices(card: Mapping[str, Any]) -> list[str]:
    """What `init` offers for a pool of `card`: no MIG, each `all-<profile>`, `mixed`."""
    usable = _usable_profiles(card)
    return ["none", *(f"all-{p}" for p in usable), "mixed"] if usable else []


def mig_devices(pool: PoolAnswer, card: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pool's `spec.mig.devices`, as the policy spells them: `all-<profile>` carves every GPU
    into as many instances of the profile as fit; `mixed` carves the first half of each node's
    GPUs into the smallest slices and the rest into the mid-size ones (like the bundled fleet's
    inference pool), so small and large jobs both find slices."""
    usable = _usable_profiles(card)
    if not usable:
        raise BadAnswer(
            f"--mig {pool.name}: card type {pool.card_type!r} cannot be MIG-partitioned"
        )
    if pool.mig_layout == "mixed":
        if pool.cards_per_node < 2:
            raise BadAnswer(f"--mig {pool.name}=mixed needs 2 or more cards per node")
        kinds = {p.kind: n for n, p in reversed(usable.items())}  # the first profile of a kind
        small, large = kinds["1g"], kinds.get("3g", kinds["2g"])  # A30s have no 3g
        half = pool.cards_per_node // 2
        return [
            {"gpus": list(range(half)), "profiles": {small: usable[small].max_count}},
            {"gpus": list(range(half, pool.cards_per_node)),
             "profiles": {large: usable[large].max_count}},
        ]  # fmt: skip
    profile = (pool.mig_layout or "").removeprefix("all-")
    if not (pool.mig_layout or "").startswith("all-") or profile not in usable:
        raise BadAnswer(
            f"--mig {pool.name}={pool.mig_layout}: LAYOUT is {MIG_LAYOUTS}; "
            f"{pool.card_type} carves {', '.join(usable)}"
        )
    return [{"gpus": "all", "profiles": {profile: usable[profile].max_count}}]


def mig_slices(pool: PoolAnswer, card: Mapping[str, Any]) -> dict[str, int]:
    """MIG instances per profile the whole pool offers."""
    slices: dict[str, int] = {}
    for device in mig_devices(pool, card):
        gpus = pool.cards_per_node if device["gpus"] == "all" else len(device["gpus"])
        for profile, count in device["profiles"].items():
            slices[profile] = slices.get(profile, 0) + count * gpus * pool.nodes
    return slices
