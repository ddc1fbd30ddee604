"""Check stage, MIG family: layouts against the card's profile table and the MIG strategy."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from hetgitops.checks._common import (
    error_at,
    pools_with_cards,
    quota_uses,
    unknown_mig_profiles,
    warning_at,
)
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity
from hetgitops.model import mig
from hetgitops.model.policy import CardType, MigDevice, Origin, Policy, Pool
from hetgitops.plan import capacity


def _table(card: CardType) -> mig.ProfileTable | None:
    return mig.TABLES.get(card.mig_table) if card.mig_table else None


def _mig_pools(policy: Policy) -> Iterator[tuple[Pool, mig.ProfileTable]]:
    """Pools with a MIG layout on a MIG-capable card (the others are mig-not-supported)."""
    for pool, card in pools_with_cards(policy):
        table = _table(card)
        if pool.mig and table is not None:
            yield pool, table


def _gpus(device: MigDevice) -> str:
    if device.gpus is None:
        return "every GPU"
    return "GPU " + ", ".join(map(str, device.gpus))


@rule("mig-not-supported", Severity.ERROR)
def mig_not_supported(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A MIG layout needs a card type with a MIG profile table.

    Fails: `mig: {devices: [...]}` on a pool of `l40s-48gb` (no `spec.mig` on the card).
    Passes: the same layout on a pool of `h100-80gb` (`mig: {profileTable: H100-80GB}`).
    Fix: remove `spec.mig` from the pool, or, if the card does support MIG, add `spec.mig:
    {profileTable: TABLE}` to its card type (e.g. `H100-80GB`).
    """
    for pool, card in pools_with_cards(policy):
        if pool.mig and _table(card) is None:
            yield error_at(
                "mig-not-supported",
                f"pool '{pool.name}' has a MIG layout but card type '{card.name}' cannot be "
                "MIG-partitioned",
                pool.origin,
                "spec",
                "mig",
                key=True,
                hint=f"remove spec.mig, or add spec.mig.profileTable to CardType '{card.name}'",
            )


@rule("mig-profile-unknown", Severity.ERROR)
def mig_profile_unknown(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every MIG profile in a layout or a quota exists on the pool's card.

    Fails: `profiles: {1g.5gb: 7}` on an H100-80GB (its smallest profile is 1g.10gb).
    Passes: `profiles: {1g.10gb: 7}`.
    Fix: use a profile of the card's table (the hint lists them, e.g. `1g.10gb` on an H100-80GB) in
    the layout or the quota; if the pool's card type is wrong, fix `cardType`.
    """
    for pool, table in _mig_pools(policy):
        for device in pool.mig:
            for profile in device.profiles:
                if mig.gpu_instance_profile(profile) not in table.profiles:
                    yield _unknown(profile, table, device.origin.child("profiles"))
    for use in quota_uses(policy):
        own = _table(use.card)
        # The same profiles budget and capacity leave out, as consequences of this finding.
        for profile in unknown_mig_profiles(use):
            if own is not None:
                yield _unknown(profile, own, use.quota.origin.child("mig"))


def _unknown(profile: str, table: mig.ProfileTable, where: Origin) -> Diagnostic:
    return error_at(
        "mig-profile-unknown",
        f"MIG profile '{profile}' does not exist on {table.name}",
        where,
        profile,
        key=True,
        hint="profiles of " + table.name + ": " + ", ".join(table.profiles),
    )


@rule("mig-layout-invalid", Severity.ERROR)
def mig_layout_invalid(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A GPU's profile set fits the card's memory slots (a placement search, not a slice sum).

    Fails on an A100-80GB: `{3g.40gb: 2, 1g.10gb: 1}` (7 compute slices but 9 of 8 memory
    slices) and `{1g.20gb: 4, 1g.10gb: 1}`.
    Passes: `{1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}` and `{4g.40gb: 1, 3g.40gb: 1}`.
    Fix: pick a profile set the card's memory slices can hold, e.g. one of the GPU Operator's
    all-balanced layouts (on an A100-80GB `{1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}`); count memory
    slices, not only compute slices, and check the largest profile fits first.
    """
    for pool, table in _mig_pools(policy):
        for device in pool.mig:
            names = [mig.gpu_instance_profile(p) for p in device.profiles]
            if any(n not in table.profiles for n in names):
                continue  # mig-profile-unknown says why
            if not mig.fits(table, device.profiles):
                layout = ", ".join(f"{p}: {c}" for p, c in device.profiles.items())
                yield error_at(
                    "mig-layout-invalid",
                    f"{_gpus(device)}: {{{layout}}} does not fit one {table.name} GPU "
                    f"({_why(table, device.profiles)})",
                    device.origin,
                    "profiles",
                    hint="pick a set the GPU can hold, e.g. one of the GPU Operator's "
                    "all-balanced layouts",
                )


def _why(table: mig.ProfileTable, counts: Mapping[str, int]) -> str:
    family = table.family
    compute = memory = 0
    for name, count in counts.items():
        profile = table.profiles[mig.gpu_instance_profile(name)]
        if count > profile.max_count:
            return f"a GPU holds at most {profile.max_count} x {name}"
        slot = family.kinds[profile.kind]
        compute, memory = compute + slot.compute * count, memory + slot.mem_slices * count
    if compute > family.compute_slices:
        return f"needs {compute} of {family.compute_slices} compute slices"
    if memory > family.memory_slots:
        return f"needs {memory} of {family.memory_slots} memory slices"
    return "no placement puts every instance at a legal offset without overlap"


@rule("mig-gpu-index", Severity.ERROR)
def mig_gpu_index(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A MIG device entry names GPU indexes every node of the pool has.

    Fails: `gpus: [8]` in a pool of 8-card nodes (indexes 0-7).
    Passes: `gpus: [7]`.
    Fix: use indexes 0 to cardsPerNode-1 of the pool's nodes in `gpus` (PCI bus order), or `gpus:
    all`; if the nodes have more cards than the pool says, fix the node entries' `cardsPerNode`.
    """
    for pool in policy.pools.values():
        if not pool.mig or not pool.nodes:
            continue
        smallest = min(pool.nodes, key=lambda n: n.cards)
        for device in pool.mig:
            for position, index in enumerate(device.gpus or ()):
                if index >= smallest.cards:
                    yield error_at(
                        "mig-gpu-index",
                        f"GPU index {index} does not exist on node '{smallest.name}', which has "
                        f"{smallest.cards} card(s) (indexes 0-{smallest.cards - 1})",
                        device.origin,
                        "gpus",
                        position,
                        hint="GPU indexes count from 0 in PCI bus order",
                    )


@rule("mig-gpu-overlap", Severity.ERROR)
def mig_gpu_overlap(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A GPU gets its MIG layout from one `spec.mig.devices` entry of the pool.

    Two entries naming one GPU leave it to the later one, silently; `gpus: all` names every GPU.
    Fails: `{gpus: [0, 1], ...}` and `{gpus: [1], ...}`, or `{gpus: all, ...}` next to any
    other entry.
    Passes: `{gpus: [0, 1], ...}` and `{gpus: [2, 3], ...}`.
    Fix: list each GPU index in one `spec.mig.devices` entry: remove the index from one of the two
    entries, or replace `gpus: all` by explicit indexes when GPUs get different layouts.
    """
    for pool in policy.pools.values():
        owner: dict[int, MigDevice] = {}
        every: MigDevice | None = None  # the first `gpus: all` entry
        for position, device in enumerate(pool.mig):
            if device.gpus is None:
                if position:
                    yield _overlap("every GPU", device, ("gpus",), pool.mig[0])
                every = every or device
                continue
            for at, index in enumerate(device.gpus):
                earlier = every or owner.setdefault(index, device)
                if earlier is not device:
                    yield _overlap(f"GPU {index}", device, ("gpus", at), earlier)


def _overlap(
    what: str, device: MigDevice, path: tuple[str | int, ...], earlier: MigDevice
) -> Diagnostic:
    return error_at(
        "mig-gpu-overlap",
        f"{what} already has a MIG layout from an earlier devices entry; the later one would "
        "silently replace it",
        device.origin,
        *path,
        hint="list each GPU index in one devices entry",
        related=[Related(earlier.origin.at("gpus"), "the earlier devices entry")],
    )


@rule("mig-strategy-single-mixed", Severity.ERROR)
def mig_strategy_single_mixed(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Under migStrategy single, every GPU of a MIG node carries the same one profile.

    The device plugin fails to start otherwise (`more than one MIG device type present`).
    Fails: `migStrategy: single` and `gpus: [0]` with `{1g.10gb: 7}` on 8-card nodes.
    Passes: `gpus: all` with `{1g.10gb: 7}` (or `migStrategy: mixed`).
    Fix: give every GPU of the pool's nodes the same one-profile layout (`gpus: all` with one
    profile), or set Fleet.spec.gpuOperator.migStrategy to `mixed` for per-GPU layouts.
    """
    if capacity.mig_strategy(policy.fleet) != "single":
        return
    for pool in policy.pools.values():
        problem = _single_problem(pool)
        if problem:
            yield error_at(
                "mig-strategy-single-mixed",
                f"migStrategy is single but {problem} on nodes of pool '{pool.name}'",
                pool.origin,
                "spec",
                "mig",
                key=True,
                hint="give every GPU the same single-profile layout, or use migStrategy mixed",
            )


def _single_problem(pool: Pool) -> str:
    for cards in sorted({node.cards for node in pool.nodes}):
        layout = capacity.covered_gpus(pool, cards)
        if not layout:
            continue
        profiles = sorted({p for counts in layout.values() for p in counts})
        if len(profiles) > 1:
            return "MIG profiles " + ", ".join(profiles) + " share a node"
        if len(layout) < cards:
            return f"{cards - len(layout)} of {cards} GPUs stay whole next to MIG GPUs"
    return ""


@rule("mig-single-card-quota", Severity.ERROR)
def mig_single_card_quota(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Under migStrategy single, a quota in a MIG pool is written in slices (`mig:`), not cards.

    The device plugin's single strategy advertises each MIG instance as one `nvidia.com/gpu`,
    so `cards: 8` (or a `normalized:` amount converted to cards) would quietly mean eight
    slices, not eight GPUs: with `3g.40gb: 2` per GPU that is 4 H100s' worth of slices, not 8.
    `mig: {3g.40gb: 16}` says what the quota is and renders `nvidia.com/gpu: "16"`.
    Fails: `migStrategy: single`, a pool with `{3g.40gb: 2}` per GPU and `cards: 8` in it.
    Passes: `mig: {3g.40gb: 16}` in that pool (or `migStrategy: mixed`).
    Fix: write the quota as `mig: {PROFILE: SLICES}`, or use migStrategy mixed.
    """
    if capacity.mig_strategy(policy.fleet) != "single":
        return
    for use in quota_uses(policy):
        slices = _slices_per_gpu(use.pool)
        field = "cards" if use.quota.cards else "normalized" if use.quota.normalized else ""
        if not slices or not field:
            continue
        profile, per_gpu = slices
        yield error_at(
            "mig-single-card-quota",
            f"pool '{use.pool.name}' advertises {profile} MIG slices as {use.card.resource_name} "
            f"({per_gpu} per GPU) under migStrategy single; `{field}` would count slices, "
            "not cards",
            use.quota.origin,
            field,
            key=True,
            hint=f"write `mig: {{{profile}: N}}` for N slices, or use migStrategy mixed",
        )


def _slices_per_gpu(pool: Pool) -> tuple[str, int] | None:
    """The one profile and its count per GPU of a MIG pool (the first, for a mixed layout that
    mig-strategy-single-mixed reports); None without a layout."""
    for cards in sorted({node.cards for node in pool.nodes}):
        for profiles in capacity.covered_gpus(pool, cards).values():
            for profile, count in sorted(profiles.items()):
                return profile, count
    return None


@rule("mig-compute-instance", Severity.ERROR)
def mig_compute_instance(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Compute-instance profiles (`1c.3g.40gb`) cannot be exposed under migStrategy mixed.

    Fails: `migStrategy: mixed` and `profiles: {1c.3g.40gb: 2}`.
    Passes: `profiles: {3g.40gb: 2}`.
    Fix: use the GPU instance profile the hint names (`3g.40gb` for `1c.3g.40gb`): the mixed
    strategy exposes whole GPU instances only. Compute-instance sharing needs migStrategy single.
    """
    if capacity.mig_strategy(policy.fleet) != "mixed":
        return
    for pool in policy.pools.values():
        for device in pool.mig:
            for profile in device.profiles:
                if mig.is_compute_instance(profile):
                    yield error_at(
                        "mig-compute-instance",
                        f"'{profile}' is a compute-instance profile; the device plugin's mixed "
                        "strategy has no resource for it",
                        device.origin,
                        "profiles",
                        profile,
                        key=True,
                        hint=f"use the GPU instance profile '{mig.gpu_instance_profile(profile)}'",
                    )


@rule("mig-strategy-none", Severity.WARNING)
def mig_strategy_none(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Under migStrategy none a MIG layout is invisible to the scheduler.

    Fails: `migStrategy: none` and a pool with `spec.mig`.
    Passes: `migStrategy: mixed` (the default).
    Fix: set Fleet.spec.gpuOperator.migStrategy to `mixed` (one resource per profile) or `single`,
    or remove `spec.mig` from the pools if MIG is not meant to be used.
    """
    if capacity.mig_strategy(policy.fleet) != "none":
        return
    for pool in policy.pools.values():
        if pool.mig:
            yield warning_at(
                "mig-strategy-none",
                f"pool '{pool.name}' has a MIG layout but migStrategy none exposes whole GPUs only",
                pool.origin,
                "spec",
                "mig",
                key=True,
                hint="set Fleet.spec.gpuOperator.migStrategy to mixed or single",
            )
