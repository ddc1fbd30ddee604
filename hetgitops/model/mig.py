"""MIG catalogue: profile tables per GPU model and a real placement search over memory slots.

Facts from NVML placement data and the GPU Operator's default mig-parted config: a GPU instance
occupies a contiguous run of memory slots starting at one of a few legal offsets, so whether a
set of profiles fits is a packing question, not a slice sum (2x1g + 1x2g + 1x3g fits only with
the 3g at offset 4).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Slot:
    """How one profile kind sits on the memory axis."""

    compute: int
    mem_slices: int
    starts: tuple[int, ...]


@dataclass(frozen=True)
class Family:
    memory_slots: int
    compute_slices: int
    kinds: Mapping[str, Slot]


SEVEN_SLICE = Family(
    8,
    7,
    {
        "1g": Slot(1, 1, (0, 1, 2, 3, 4, 5, 6)),
        "1g+me": Slot(1, 1, (0, 1, 2, 3, 4, 5, 6)),
        "1g-2x": Slot(1, 2, (0, 2, 4, 6)),
        "2g": Slot(2, 2, (0, 2, 4)),
        "3g": Slot(3, 4, (0, 4)),
        "4g": Slot(4, 4, (0,)),
        "7g": Slot(7, 8, (0,)),
    },
)
FOUR_SLICE = Family(
    4,
    4,
    {
        "1g": Slot(1, 1, (0, 1, 2, 3)),
        "1g+me": Slot(1, 1, (0, 1, 2, 3)),
        "2g": Slot(2, 2, (0, 2)),
        "2g+me": Slot(2, 2, (0, 2)),
        "4g": Slot(4, 4, (0,)),
    },
)


@dataclass(frozen=True)
class Profile:
    name: str
    kind: str
    max_count: int


@dataclass(frozen=True)
class ProfileTable:
    name: str
    family: Family
    profiles: Mapping[str, Profile]


def _seven(name: str, mem: tuple[int, int, int, int, int]) -> ProfileTable:
    """The seven-slice layout shared by A100/H100/H200-class parts; only memory sizes differ."""
    one, two, three, four, seven = mem
    rows = [
        (f"1g.{one}gb", "1g", 7),
        (f"1g.{one}gb+me", "1g+me", 1),
        (f"1g.{two}gb", "1g-2x", 4),
        (f"2g.{two}gb", "2g", 3),
        (f"3g.{three}gb", "3g", 2),
        (f"4g.{four}gb", "4g", 1),
        (f"7g.{seven}gb", "7g", 1),
    ]
    return ProfileTable(name, SEVEN_SLICE, {n: Profile(n, k, m) for n, k, m in rows})


TABLES: Mapping[str, ProfileTable] = {
    t.name: t
    for t in (
        _seven("A100-40GB", (5, 10, 20, 20, 40)),
        _seven("A100-80GB", (10, 20, 40, 40, 80)),
        _seven("H100-80GB", (10, 20, 40, 40, 80)),
        _seven("H100-94GB", (12, 24, 47, 47, 94)),
        _seven("H100-96GB", (12, 24, 48, 48, 96)),
        _seven("H200-141GB", (18, 35, 71, 71, 141)),
        _seven("GH200-144GB", (18, 36, 72, 72, 144)),
        # Blackwell (GPU Operator default mig-parted config; placements as the H100 family's).
        _seven("B200-180GB", (23, 45, 90, 90, 180)),
        _seven("GB200-186GB", (23, 47, 93, 93, 186)),
        _seven("B300-269GB", (34, 67, 135, 135, 269)),
        _seven("GB300-278GB", (35, 70, 139, 139, 278)),
        ProfileTable(
            "A30-24GB",
            FOUR_SLICE,
            {
                p.name: p
                for p in (
                    Profile("1g.6gb", "1g", 4),
                    Profile("1g.6gb+me", "1g+me", 1),
                    Profile("2g.12gb", "2g", 2),
                    Profile("2g.12gb+me", "2g+me", 1),
                    Profile("4g.24gb", "4g", 1),
                )
            },
        ),
    )
}

_COMPUTE_INSTANCE = re.compile(r"^[0-9]+c\.")


def is_compute_instance(profile: str) -> bool:
    """`1c.3g.20gb`-style names carve compute instances; the mixed strategy cannot expose them."""
    return bool(_COMPUTE_INSTANCE.match(profile))


def gpu_instance_profile(profile: str) -> str:
    return _COMPUTE_INSTANCE.sub("", profile)


def resource_name(profile: str) -> str:
    """Mixed-strategy extended resource, as the device plugin names it (`+` becomes `.`)."""
    return "nvidia.com/mig-" + gpu_instance_profile(profile).replace("+", ".")


def gpu_share(table: ProfileTable, profile: str) -> Fraction:
    """The share of one GPU an instance holds, by compute slices (1g of 7 = 1/7); unknown
    profiles count as a whole GPU, which never under-prices them. Exact, so that 7 x 1/7 is
    one card and not a hair more (quotas round up)."""
    known = table.profiles.get(gpu_instance_profile(profile))
    if known is None:
        return Fraction(1)
    return Fraction(table.family.kinds[known.kind].compute, table.family.compute_slices)


def fits(table: ProfileTable, counts: Mapping[str, int]) -> bool:
    """True when some placement gives every instance a legal start without overlap."""
    family = table.family
    slots: list[Slot] = []
    for name, count in counts.items():
        profile = table.profiles.get(gpu_instance_profile(name))
        if profile is None or count > profile.max_count:
            return False
        slots.extend([family.kinds[profile.kind]] * count)
    if sum(s.compute for s in slots) > family.compute_slices:
        return False
    # Largest first prunes the search early; the biggest sets have at most 7 instances.
    slots.sort(key=lambda s: (-s.mem_slices, len(s.starts)))
    return _place(slots, 0, [False] * family.memory_slots)


def _place(slots: list[Slot], index: int, used: list[bool]) -> bool:
    if index == len(slots):
        return True
    slot = slots[index]
    for start in slot.starts:
        span = range(start, start + slot.mem_slices)
        if span.stop > len(used) or any(used[i] for i in span):
            continue
        for i in span:
            used[i] = True
        if _place(slots, index + 1, used):
            return True
        for i in span:
            used[i] = False
    return False
