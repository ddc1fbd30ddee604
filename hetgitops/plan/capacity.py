"""What each pool offers and each quota claims, per extended resource.

Shared by the checks (quota vs capacity) and the compilers (Kueue quotas, Volcano queues), so
that both count MIG instances and time-slicing replicas the same way.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Literal

from hetgitops.model import mig, quantities
from hetgitops.model.policy import CardType, Fleet, Policy, Pool, Quota
from hetgitops.plan import dra


def main_resource(pool: Pool, card: CardType) -> str:
    """The resource a pool's whole (or time-sliced) cards are requested by: on the DRA claims
    path the Kueue quota resource its DeviceClass is mapped to (`plan.dra`)."""
    if dra.claims(pool):
        return dra.quota_resource(card)
    if pool.time_slicing_replicas and pool.rename_by_default:
        return f"{card.resource_name}.shared"
    return card.resource_name


def mig_strategy(fleet: Fleet | None) -> str:
    return fleet.mig_strategy if fleet else "mixed"


def mig_resource(pool: Pool, card: CardType, profile: str, fleet: Fleet | None) -> str:
    """The resource one MIG instance of `profile` is requested (and charged) by."""
    if dra.claims(pool):
        return dra.quota_resource(card, profile)
    return card.resource_name if mig_strategy(fleet) == "single" else mig.resource_name(profile)


def covered_gpus(pool: Pool, cards: int) -> dict[int, dict[str, int]]:
    """GPU index -> MIG profile counts on a node with `cards` GPUs; later entries win."""
    layout: dict[int, dict[str, int]] = {}
    for device in pool.mig:
        for index in device.gpus if device.gpus is not None else range(cards):
            if index < cards:
                layout[index] = dict(device.profiles)
    return layout


Replicas = Literal["advertised", "shared"]


def node_units(
    pool: Pool, card: CardType, fleet: Fleet | None, cards: int, *, replicas: Replicas
) -> Counter[str]:
    """Accelerator units one node of `pool` with `cards` cards offers per resource: whole
    cards times replicas per GPU, MIG instances by profile (the main resource always listed).

    `replicas` names which count a time-sliced or MPS pool's GPUs take, and they differ only
    during a staged sharing reduction (`retiringReplicas`): "advertised" is what the device
    plugin is configured with and the node holds (drift, explain's nodes); "shared" is the
    new count Kueue's quotas and the capacity checks count (docs/day2.md)."""
    strategy = mig_strategy(fleet)
    layout = covered_gpus(pool, cards) if pool.mig and strategy != "none" else {}
    per_gpu = pool.advertised_replicas if replicas == "advertised" else pool.shared_replicas
    units: Counter[str] = Counter()
    units[main_resource(pool, card)] += (cards - len(layout)) * per_gpu
    for profiles in layout.values():
        for profile, count in profiles.items():
            units[mig_resource(pool, card, profile, fleet)] += count
    return units


def pool_resources(
    pool: Pool, card: CardType, fleet: Fleet | None, *, replicas: Replicas = "shared"
) -> dict[str, int]:
    """Allocatable units per resource across the pool (`node_units` over its nodes; by
    default at the shared replicas quotas are checked against)."""
    total: Counter[str] = Counter()
    # Nodes of one size offer the same, so the layout is worked out once per size: callers run
    # this per team quota, and big pools have thousands of nodes but few sizes.
    for cards, nodes in Counter(node.cards for node in pool.nodes).items():
        for name, count in node_units(pool, card, fleet, cards, replicas=replicas).items():
            total[name] += count * nodes
    return {
        name: count
        for name, count in sorted(total.items())
        if count or name == main_resource(pool, card)
    }


def quota_cards(quota: Quota, card: CardType, performance: float | None = None) -> int:
    """Nominal whole-card quota; normalized units convert through the performance coefficient."""
    if quota.cards is not None:
        return quota.cards
    if quota.normalized is None:
        return 0
    coefficient = performance or (card.performance.coefficient if card.performance else None)
    if not coefficient:
        return 0
    # A tiny epsilon keeps 24.0 / 3.0 == 8 from becoming 7.999999.
    return math.floor(quota.normalized / coefficient + 1e-9)


def quota_resources(
    quota: Quota, pool: Pool, card: CardType, fleet: Fleet | None
) -> dict[str, int]:
    """Nominal quota per resource for one team in one pool."""
    claimed: Counter[str] = Counter()
    cards = quota_cards(quota, card)
    if cards or not quota.mig:
        claimed[main_resource(pool, card)] += cards
    for profile, count in quota.mig.items():
        claimed[mig_resource(pool, card, profile, fleet)] += count
    return dict(sorted(claimed.items()))


def pool_quota_total(policy: Policy, pool: Pool, resource: str) -> int:
    """What every team's nominal quota in `pool` adds up to in `resource` (what Kueue may
    admit there before any borrowing)."""
    card = policy.card_types.get(pool.card_type)
    if card is None:
        return 0
    return sum(
        quota_resources(quota, pool, card, policy.fleet).get(resource, 0)
        for team in policy.teams.values()
        for quota in team.quotas
        if quota.pool == pool.name
    )


def mig_profiles(pool: Pool, card: CardType, resource: str, fleet: Fleet | None) -> list[str]:
    """The MIG profiles one unit of `resource` may be; empty for whole cards and replicas."""
    if dra.claims(pool):
        profile = dra.mig_profile_of(card, resource)
        return [profile] if profile else []
    strategy = mig_strategy(fleet)
    if strategy == "single" and resource == card.resource_name:
        return [p for device in pool.mig for p in device.profiles] if pool.mig else []
    if not resource.startswith(mig.resource_name("")):
        return []
    table = mig.TABLES.get(card.mig_table or "")
    known = [p for p in table.profiles if mig.resource_name(p) == resource] if table else []
    return known or [resource]  # an unknown profile weighs a whole card (gpu_share below)


def is_mig(pool: Pool, card: CardType, resource: str, fleet: Fleet | None) -> bool:
    """Whether one unit of `resource` in `pool` is a MIG instance (under migStrategy single
    the card resource of a MIG pool is one)."""
    return bool(mig_profiles(pool, card, resource, fleet))


def unit_weight(
    pool: Pool,
    card: CardType,
    resource: str,
    fleet: Fleet | None,
    *,
    replicas: Replicas = "shared",
) -> Fraction:
    """Card-equivalent weight of one unit of `resource` in `pool`: a whole card 1, a
    time-sliced or MPS replica 1/replicas, a MIG instance its compute share (`mig.gpu_share`).
    `replicas` names which units are weighed, as in `node_units`: "shared" the units quotas
    count, "advertised" the units a node holds (during a staged reduction more per GPU).

    The one place that converts units into cards: the cpu/memory that go with a quota and the
    budget's cost both use it, so they never disagree. Under migStrategy single a mixed layout
    (reported by `mig-strategy-single-mixed`) weighs its largest profile, never under-counting.
    """
    profiles = mig_profiles(pool, card, resource, fleet)
    if not profiles:
        per_gpu = pool.advertised_replicas if replicas == "advertised" else pool.shared_replicas
        return Fraction(1, per_gpu)
    table = mig.TABLES.get(card.mig_table or "")
    return max(mig.gpu_share(table, p) for p in profiles) if table else Fraction(1)


def card_equivalents(
    counts: Mapping[str, int], *, pool: Pool, card: CardType, fleet: Fleet | None
) -> Fraction:
    """Σ units x unit_weight: how many physical cards `counts` of this pool's resources are."""
    return sum(
        (n * unit_weight(pool, card, r, fleet) for r, n in counts.items()), start=Fraction(0)
    )


HOURS_PER_MONTH = 730


def plugin_resources(policy: Policy, pool: Pool) -> dict[str, str]:
    """A claims pool still `migratingFrom: devicePlugin`: each mapped quota resource -> the
    device plugin's resource for the same devices (`nvidia.com/gpu`, `nvidia.com/mig-*`),
    which the work admitted before the move holds. Empty for any other pool."""
    card = policy.card_types.get(pool.card_type)
    if card is None or not dra.claims(pool) or pool.migrating_from != dra.DEVICE_PLUGIN:
        return {}
    plugin = dataclasses.replace(pool, allocation=dra.DEVICE_PLUGIN, migrating_from=None)
    fleet = policy.fleet
    found = {main_resource(pool, card): main_resource(plugin, card)}
    for profile in sorted({p for device in pool.mig for p in device.profiles}):
        found[mig_resource(pool, card, profile, fleet)] = mig_resource(plugin, card, profile, fleet)
    return found


def retiring_held(policy: Policy, pool: Pool, team: str, resource: str) -> str | None:
    """What a pool's retiring flavor holds of `resource` for `team` (`holds`; None: the whole
    quota). On a pool moving from the device plugin the work there holds the plugin's resource
    for the same cards, so `holds` given in that name (as `diff --kubeconfig` reads it off the
    live Workloads) cuts the mapped resource too."""
    retiring = pool.retiring_flavor
    if retiring is None:
        return None
    holds = retiring.holds.get(team, {})
    names = [resource, plugin_resources(policy, pool).get(resource, resource)]
    listed = [holds[n] for n in dict.fromkeys(names) if n in holds]
    if not listed:
        return None
    total = sum((quantities.value_of(str(v)) for v in listed), Decimal(0))
    return quantities.canonical(total, binary=resource == "memory")
