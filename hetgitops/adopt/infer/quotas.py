"""Adopt stage, teams phase: a ClusterQueue's quotas on the imported pools, in whole cards or
MIG slices with their limits, and the cpu and memory per card that give its host quotas back
as the render rounds them. Reads the lent pools (last phase's facts): an isolated pool's
quotas carry no limits, and a pool-wide lending percentage leaves out the lendingLimits it
gives."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from functools import cache
from typing import Any

from hetgitops.adopt.infer.documents import whole
from hetgitops.adopt.infer.lending import HOST, LentPool
from hetgitops.compilers.kueue_queues import queue_flavors
from hetgitops.model import mig, quantities

# The render rounds a team's cpu up to whole CPUs and its memory to whole GiB (plan.quota_plan),
# counted here in integer base units: milli-cpus and bytes.
UNITS = {"cpu": 1000, "memory": 1}
STEPS = {"cpu": 1000, "memory": 1024**3}
# The grids a per-card amount is looked for on, coarsest first (base units).
GRIDS = {"cpu": (1000, 100, 10, 1), "memory": (1024**3, 1024**2, 1024, 1)}
LIMITS = ("borrowingLimit", "lendingLimit")
# (amount, card-equivalents as numerator and denominator), in base units.
Bound = tuple[int, int, int]


def quotas(
    spec: Mapping[str, Any], flavor_pool: Mapping[str, LentPool], *, keep_empty: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The team's `quotas` and its `cpuPerCard` / `memoryPerCard`; a pool whose cpu or memory
    no team-wide amount rounds to gets its own (`quotas[].cpuPerCard`). `keep_empty` (the
    team says its coveredResources): a flavor claiming nothing on a MIG pool stays, as
    `cards: 0` (the list leaves the card resource the render would add out)."""
    found: list[dict[str, Any]] = []
    per_unit: dict[str, list[Fraction]] = {"cpu": [], "memory": []}
    bounds: dict[str, list[Bound]] = {"cpu": [], "memory": []}
    # Per quota entry (its index in `found`), its own bounds: fitted alone when the team's fail.
    own: dict[int, dict[str, list[Bound]]] = {}
    for flavor in queue_flavors(spec):
        pool = flavor_pool.get(flavor.name)
        if pool is None:
            continue
        resources = pool.pool.resources(flavor.by_resource())
        entry = _entry(pool, resources)
        if entry is None and keep_empty:
            entry = {"pool": pool.pool.name, "cards": 0}
        if entry is None:
            continue
        # cpu and memory go with card-equivalents: a replica is 1/replicas of a card, a
        # MIG instance its compute share (plan.capacity.unit_weight), as the render counts.
        equivalents = Fraction(entry.get("cards", 0), pool.pool.replicas) + sum(
            (n * _share(pool.mig_table, p) for p, n in entry.get("mig", {}).items()),
            start=Fraction(0),
        )
        if equivalents:
            mine = own.setdefault(len(found), {"cpu": [], "memory": []})
            for name, into in per_unit.items():
                value = _nominal(resources.get(name))
                if value is not None:
                    into.append(Fraction(value) / equivalents)
                    mine[name].append(_bound(value, equivalents, name))
                    mine[name].extend(_limit_bounds(pool, resources, name))
                    bounds[name].extend(mine[name])
        if _gpu_only_limits(pool, resources):
            entry["hostLimits"] = False
        if _covers_all(pool, resources, entry):
            entry["limitsCoverAll"] = True
        found.append(entry)
    per_card: dict[str, Any] = {}
    for name, key in (("cpu", "cpuPerCard"), ("memory", "memoryPerCard")):
        if per_unit[name]:
            fitted = _per_card(bounds[name], name) if bounds[name] else None
            if fitted is None:
                fitted = _per_pool(found, own, name, key)
            chosen = fitted if fitted is not None else _decimal(per_unit[name][0])
            per_card[key] = quantities.canonical(chosen, binary=name == "memory")
    return found, per_card


def _per_pool(
    found: list[dict[str, Any]], own: Mapping[int, Mapping[str, list[Bound]]], host: str, key: str
) -> Decimal | None:
    """No one amount fits every pool: each pool's own (None when one fits none; the round trip
    reports it). The team gets the amount most pools fit (the first pool's on a tie), the
    others write theirs on their quota entry."""
    fits = {i: _per_card(b[host], host) for i, b in own.items() if b[host]}
    if not fits or None in fits.values():
        return None
    counts = Counter(fits.values())
    team = max(counts, key=lambda v: (counts[v], -min(i for i, f in fits.items() if f == v)))
    for index, value in sorted(fits.items()):
        if value != team and value is not None:
            found[index][key] = quantities.canonical(value, binary=host == "memory")
    return team


def _gpu_only_limits(lent: LentPool, resources: Mapping[str, Mapping[str, Any]]) -> bool:
    """cpu and memory without a borrowingLimit or lendingLimit where every accelerator
    resource of the pool has one: the render would limit cpu and memory too (it limits them
    when all the pool's resources are limited, plan.quota_plan.FlavorPlan.cards), so the
    entry says `hostLimits: false`. An isolated pool limits everything to 0."""
    if lent.isolated or any(resources.get(h, {}).get(k) is not None for h in HOST for k in LIMITS):
        return False
    pool = lent.pool
    own = {pool.main_resource, *(mig.resource_name(p) for p in pool.mig_profiles)}
    limited = [resources[n] for n in sorted(own) if n in resources]
    return any(limited and all(r.get(k) is not None for r in limited) for k in LIMITS)


def _covers_all(
    lent: LentPool, resources: Mapping[str, Mapping[str, Any]], entry: Mapping[str, Any]
) -> bool:
    """Every accelerator resource the flavor lists at 0 has a borrowingLimit of 0 where the
    entry sets one (`limitsCoverAll`; the render bounds them so). An isolated pool has them
    anyway."""
    if lent.isolated or lent.pool.aliases:
        return False
    if "borrowingLimit" not in entry and "migBorrowingLimits" not in entry:
        return False
    zeros = [r for n, r in resources.items() if n not in HOST and not whole(r.get("nominalQuota"))]
    limits = [r.get("borrowingLimit") for r in zeros]
    return bool(zeros) and all(v is not None and not whole(v) for v in limits)


def _nominal(resource: Mapping[str, Any] | None) -> Decimal | None:
    """A live quota's nominalQuota, None when absent or no quantity (the round trip then
    reports the ClusterQueue's field; no per-card amount is guessed from it)."""
    quota = (resource or {}).get("nominalQuota")
    try:
        return None if quota is None else quantities.value_of(str(quota))
    except quantities.QuantityError:
        return None


def _entry(lent: LentPool, resources: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """One flavor's quota (None when it claims nothing on the pool)."""
    pool = lent.pool
    card = resources.get(pool.main_resource)
    slices = {
        k.removeprefix("nvidia.com/mig-"): r
        for k, r in resources.items()
        if k.startswith("nvidia.com/mig-")
    }
    entry: dict[str, Any] = {"pool": pool.name}
    cards = whole(card.get("nominalQuota")) if card else 0
    # Covered resources the pool lacks are listed with 0 (Kueue's webhook wants every
    # covered resource in every flavor): they are no quota.
    if not pool.mig_profiles:
        slices = {}
    elif lent.strategy == "single" and len(pool.mig_profiles) == 1:
        # Under migStrategy single the card resource counts the one profile's slices.
        slices = {pool.mig_profiles[0]: card} if card is not None and cards else {}
        card = None if slices else card
        cards = 0 if slices else cards
    else:
        slices = {p: r for p, r in slices.items() if whole(r.get("nominalQuota"))}
    if card is not None and (cards or not slices):
        entry["cards"] = cards
        entry.update(_limits(lent, [card]))
    if slices:
        entry["mig"] = {p: whole(r.get("nominalQuota")) for p, r in sorted(slices.items())}
        if "cards" not in entry:  # a MIG-only quota's limits bound each profile it claims
            entry.update(_limits(lent, list(slices.values())))
        entry.update(_profile_limits(lent, slices, entry))
    if card is None and not slices:
        return None
    return entry


def _limits(pool: LentPool, resources: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """A quota's borrowingLimit / lendingLimit from the resources it bounds (its card
    resource, or each MIG profile it claims), when they all say one value; none on an
    isolated pool (it borrows and lends nothing), and no lendingLimit where the pool's
    lending.maxPercent gives exactly the cluster's."""
    found: dict[str, int] = {}
    if pool.isolated:
        return found
    for key in ("borrowingLimit", "lendingLimit"):
        values = [r.get(key) for r in resources]
        if any(v is None for v in values):
            continue
        numbers = {whole(v) for v in values}
        if key == "lendingLimit" and pool.lend_percent is not None:
            floors = [whole(r.get("nominalQuota")) * pool.lend_percent // 100 for r in resources]
            if [whole(v) for v in values] == floors:
                continue
        if len(numbers) == 1:
            found[key] = numbers.pop()
    return found


def _profile_limits(
    lent: LentPool, slices: Mapping[str, Mapping[str, Any]], entry: Mapping[str, Any]
) -> dict[str, dict[str, int]]:
    """The limits the entry's one borrowingLimit / lendingLimit cannot say (profiles limited
    unlike amounts, or beside a card quota), per profile: `migBorrowingLimits` /
    `migLendingLimits`. Under migStrategy single there are no profile resources; a
    lendingLimit the pool's lending percentage gives is left to it."""
    found: dict[str, dict[str, int]] = {}
    if lent.isolated or lent.strategy == "single":
        return found
    for key, field in (
        ("borrowingLimit", "migBorrowingLimits"),
        ("lendingLimit", "migLendingLimits"),
    ):
        if key in entry and "cards" not in entry:
            continue  # the entry's own limit says every profile's
        limits = {p: whole(r.get(key)) for p, r in slices.items() if r.get(key) is not None}
        if key == "lendingLimit" and lent.lend_percent is not None:
            percent = lent.lend_percent
            limits = {
                p: n
                for p, n in limits.items()
                if n != whole(slices[p].get("nominalQuota")) * percent // 100
            }
        if limits:
            found[field] = dict(sorted(limits.items()))
    return found


def _bound(amount: Decimal, equivalents: Fraction, host: str) -> Bound:
    return int(amount * UNITS[host]), equivalents.numerator, equivalents.denominator


def _per_card(bounds: Sequence[Bound], host: str) -> Decimal | None:
    """The per-card amount every flavor's quota of the team rounds up to exactly: each
    (amount, card-equivalents p/q) says ceil(x * p/q / step) * step == amount, so x lies in
    ((amount - step) * q/p, amount * q/p]. The largest value on the coarsest grid (whole
    cpus or GiB, then finer) inside every interval, or None when they do not meet (the
    round trip reports the difference). Integer arithmetic: 1,000 teams, a dozen bounds each."""
    step = STEPS[host]
    if any(amount % step for amount, _, _ in bounds):
        return None  # not rounded as the render rounds: no per-card amount gives it
    for grid in GRIDS[host]:
        most = min(amount * q // (grid * p) for amount, p, q in bounds)
        if most > 0 and all(most * grid * p > (amount - step) * q for amount, p, q in bounds):
            return Decimal(most * grid) / UNITS[host]
    return None


def _limit_bounds(
    pool: LentPool, resources: Mapping[str, Mapping[str, Any]], host: str
) -> list[Bound]:
    """cpu / memory limits go with the card-equivalents of the accelerator limits (every
    accelerator resource of the flavor bounded, as the render counts them)."""
    found = []
    # By key, not the entry's own name: a DRA claims pool's quota resources are read under
    # the device-plugin names they count as (adopt.infer.pools.Pool.resources).
    names = [n for n in resources if n not in HOST]
    accelerators = [resources[n] for n in names]
    for key in ("borrowingLimit", "lendingLimit"):
        limit = resources[host].get(key)
        values = [r.get(key) for r in accelerators]
        if limit is None or not values or any(v is None for v in values):
            continue
        cards, parts = 0, Fraction(0)  # whole cards add as ints (the common case, fast)
        for value, name in zip(values, names, strict=True):
            weight = _unit(pool, name)
            if weight == 1:
                cards += whole(value)
            else:
                parts += whole(value) * weight
        equivalents = parts + cards
        if equivalents:
            found.append(_bound(quantities.value_of(str(limit)), equivalents, host))
    return found


def _unit(pool: LentPool, resource: str) -> Fraction:
    """Card-equivalents of one unit of `resource` on this pool: under migStrategy single a
    MIG pool's card resource counts its profile's instances (the largest profile's, as
    plan.capacity.unit_weight weighs a layout of several)."""
    profiles = pool.pool.mig_profiles
    if pool.strategy == "single" and profiles and resource == pool.pool.card.resource:
        return max(_share(pool.mig_table, p) for p in profiles)
    return _weight(pool.mig_table, pool.pool.replicas, resource)


@cache  # pure, and asked once per accelerator limit of every team: 1,000 teams
def _weight(mig_table: str, replicas: int, resource: str) -> Fraction:
    """Card-equivalents of one unit of `resource` on a pool."""
    if resource.startswith("nvidia.com/mig-"):
        return _share(mig_table, resource.removeprefix("nvidia.com/mig-"))
    return Fraction(1, replicas)


def _share(mig_table: str, profile: str) -> Fraction:
    table = mig.TABLES.get(mig_table)
    return mig.gpu_share(table, profile) if table is not None else Fraction(1)


def _decimal(value: Fraction) -> Decimal:
    return Decimal(value.numerator) / Decimal(value.denominator)
