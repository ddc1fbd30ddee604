"""Adopt stage, third phase: pool-wide lending, from what every queue on a pool's flavor
says. It comes after the cards (a pool's main resource and slices are settled) and before the
teams, whose quotas leave out the limits the pool-wide setting already gives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hetgitops.adopt.infer.cards import CardedPool, Cards
from hetgitops.adopt.infer.documents import document, whole
from hetgitops.adopt.infer.pools import Pool, pool_refs
from hetgitops.adopt.sources import Imported
from hetgitops.adopt.volcano import VOLCANO, leaf_pools
from hetgitops.compilers.kueue_queues import queue_flavors
from hetgitops.model import mig

HOST = ("cpu", "memory")
QUANTITY_LIMITS = ("borrowingLimit", "lendingLimit")
# A flavor's entry in one ClusterQueue: resource name -> its quota entry.
Entry = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class LentPool:
    """A carded pool with the lending its queues agree on: `isolated` (every quota on it
    borrows and lends 0) or `lend_percent` (Pool.spec.lending.maxPercent), or neither."""

    pool: Pool
    mig_table: str
    strategy: str
    isolated: bool
    lend_percent: int | None


@dataclass(frozen=True)
class Lending:
    """The third phase's result: the pools in order, lent, and what each Pool document's
    spec gains (by pool name)."""

    pools: tuple[LentPool, ...]
    spec: Mapping[str, Mapping[str, Any]]

    def documents(self) -> list[dict[str, Any]]:
        """The Pool documents: the first phase's spec, then what this one adds (on the last
        pool of a name, as a lookup by name finds it)."""
        last = {p.pool.name: i for i, p in enumerate(self.pools)}
        return [
            document(
                "Pool",
                p.pool.name,
                {
                    **p.pool.spec,
                    **(self.spec.get(p.pool.name, {}) if last[p.pool.name] == i else {}),
                },
            )
            for i, p in enumerate(self.pools)
        ]


def pool_lending(by_kind: Mapping[str, list[Imported]], cards: Cards) -> Lending:
    """`isolated` when every resource of every cohort member's entry (cpu, memory, the card
    resources, the zero entries of resources the pool lacks) borrows and lends 0 and every
    Volcano queue bound to the pool is not reclaimable (or, with no cohort member there,
    when every such queue is not reclaimable); else `lending.maxPercent` when one
    percentage gives every lendingLimit of the resources no quota limit bounds (a MIG pool's
    other profiles and whole cards), as the render computes them: floor(nominal x p / 100)."""
    flavor_pool = {p.pool.flavor.name: p for p in cards.pools if p.pool.flavor is not None}
    entries = _entries(by_kind, flavor_pool)
    reclaimable = _reclaimable_by_pool(by_kind, [p.pool for p in flavor_pool.values()])
    isolated: set[str] = set()
    percents: dict[str, int] = {}
    spec: dict[str, dict[str, Any]] = {}
    for flavor, found in sorted(entries.items()):
        pool = flavor_pool[flavor].pool
        limits = [r.get(k) for e in found for r in e.values() for k in QUANTITY_LIMITS]
        if all(v is not None and whole(v) == 0 for v in limits) and True not in reclaimable.get(
            pool.name, set()
        ):
            isolated.add(flavor)
            spec.setdefault(pool.name, {})["isolated"] = True
            continue
        percent = _lend_percent(pool, found)
        if percent is not None:
            percents[flavor] = percent
            spec.setdefault(pool.name, {})["lending"] = {"maxPercent": percent}
    for flavor, carded in sorted(flavor_pool.items()):
        # No team there is in a cohort, so no Kueue limit tells: the Volcano queues do (an
        # isolated pool's are not reclaimable, volcano_quota._leaf).
        if flavor not in entries and reclaimable.get(carded.pool.name) == {False}:
            isolated.add(flavor)
            spec.setdefault(carded.pool.name, {})["isolated"] = True
    return Lending(tuple(_lent(p, isolated, percents) for p in cards.pools), spec)


def _lent(carded: CardedPool, isolated: set[str], percents: Mapping[str, int]) -> LentPool:
    flavor = carded.pool.flavor.name if carded.pool.flavor is not None else None
    return LentPool(
        carded.pool,
        carded.mig_table,
        carded.strategy,
        flavor in isolated,
        percents.get(flavor) if flavor is not None else None,
    )


def _entries(
    by_kind: Mapping[str, list[Imported]], flavor_pool: Mapping[str, CardedPool]
) -> dict[str, list[Entry]]:
    """Each pool flavor's entries over the ClusterQueues in a cohort (Kueue allows no limit
    without one: the others say nothing)."""
    entries: dict[str, list[Entry]] = {}
    for queue in by_kind.get("ClusterQueue", []):
        spec = queue.obj.get("spec") or {}
        if not (spec.get("cohortName") or spec.get("cohort")):
            continue
        for flavor in queue_flavors(spec):
            if flavor.name in flavor_pool:
                pool = flavor_pool[flavor.name].pool
                entries.setdefault(flavor.name, []).append(pool.resources(flavor.by_resource()))
    return entries


def _lend_percent(pool: Pool, entries: Sequence[Entry]) -> int | None:
    """The one percentage (round ones first) that gives the lendingLimit of every claimed
    accelerator resource a quota limit does not bound; None when one of them has none or
    there is no such resource. When the only such resources are the pool's own with a
    nominal quota of 0 and a lendingLimit (0: what any percentage gives them), the pool has
    a percentage the objects cannot tell apart: 100."""
    seen: list[tuple[int, int]] = []
    own = {pool.main_resource, *(mig.resource_name(p) for p in pool.mig_profiles)}
    zero_lent = False
    for resources in entries:
        accelerators = {n: r for n, r in resources.items() if n not in HOST}
        bound = _quota_bound(pool, accelerators)
        for name, entry in accelerators.items():
            nominal, limit = whole(entry.get("nominalQuota")), entry.get("lendingLimit")
            if name in bound:
                continue
            if nominal and limit is None:
                return None
            if nominal:
                seen.append((nominal, whole(limit)))
            zero_lent = zero_lent or (name in own and limit is not None)
    if not seen:
        return 100 if zero_lent else None
    fits = [p for p in range(101) if all(n * p // 100 == lent for n, lent in seen)]
    for grain in (25, 10, 5, 1):
        round_ones = [p for p in fits if p % grain == 0]
        if round_ones:
            return max(round_ones)
    return None


def _quota_bound(pool: Pool, accelerators: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The claimed resources a quota's own lendingLimit may bound: its card resource; for a
    MIG-only quota each profile it claims, when they all say one lendingLimit (a quota's
    limit is one number: profiles lending unlike amounts follow the pool's percentage)."""
    claimed = {n for n, r in accelerators.items() if whole(r.get("nominalQuota"))}
    if pool.main_resource in claimed:
        return {pool.main_resource}
    limits = {str(accelerators[n].get("lendingLimit")) for n in claimed}
    return claimed if len(limits) == 1 else set()


def _reclaimable_by_pool(
    by_kind: Mapping[str, list[Imported]], pools: Sequence[Pool]
) -> dict[str, set[bool]]:
    """Per pool, whether the Volcano queues bound to it are reclaimable."""
    queues = [
        q for q in by_kind.get("Queue", []) if str(q.obj.get("apiVersion")).startswith(VOLCANO)
    ]
    found: dict[str, set[bool]] = {}
    for queue, pool in leaf_pools(queues, pool_refs(pools)):
        found.setdefault(pool.name, set()).add(
            (queue.obj.get("spec") or {}).get("reclaimable") is not False
        )
    return found
