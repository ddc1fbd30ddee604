"""Plan stage: the PriorityClass each tier gets under Koordinator, inside Koordinator's bands.

Koordinator reads a pod's priority *class* from its PriorityClass value: koord-prod 9000-9999,
koord-mid 7000-7999, koord-batch 5000-5999, koord-free 3000-3999; any other value is "none"
(GetPodPriorityClassByName), which its quota and colocation logic treat as neither prod nor batch.
The policy's tier values (100000, 10000, 100 in the bundled fleet) fall outside every band, so the
`koordinator` target writes one PriorityClass per tier with this stated mapping:

* a tier whose value already lies inside a band keeps it; * otherwise, by value from the highest:
the highest non-preemptible tier is prod, the other non-preemptible ones mid, preemptible tiers
batch; inside a band the values count down from the band's top in the tiers' order (9999, 9998,
...), so the order of the tiers is kept within a band.
"""

from __future__ import annotations

from dataclasses import dataclass

from hetgitops.model.policy import Policy, PriorityTier, derived

BANDS = {
    "koord-prod": (9000, 9999),
    "koord-mid": (7000, 7999),
    "koord-batch": (5000, 5999),
    "koord-free": (3000, 3999),
}
SUFFIX = "-koord"


@dataclass(frozen=True)
class KoordTier:
    tier: PriorityTier
    name: str  # the PriorityClass koord-scheduler jobs name
    band: str
    value: int


def band_of(value: int) -> str | None:
    """The Koordinator priority class of a PriorityClass value, None outside every band."""
    for band, (low, high) in BANDS.items():
        if low <= value <= high:
            return band
    return None


def class_name(tier: str) -> str:
    """Its own name: the `core` target's PriorityClass `<tier>` keeps the policy's value."""
    return f"{tier}{SUFFIX}"


def koord_tiers(policy: Policy) -> dict[str, KoordTier]:
    """Tier name -> its Koordinator PriorityClass, in the policy's tier order."""
    return dict(derived(policy, "koordinator_tiers", lambda: _tiers(policy)))


def _tiers(policy: Policy) -> dict[str, KoordTier]:
    ordered = sorted(policy.tiers.values(), key=lambda t: (-t.value, t.name))
    used: dict[str, int] = {}
    mapped: dict[str, KoordTier] = {}
    first_prod = next((t.name for t in ordered if not t.preemptible), None)
    for tier in ordered:
        kept = band_of(tier.value)
        if kept is not None:
            mapped[tier.name] = KoordTier(tier, class_name(tier.name), kept, tier.value)
            continue
        if tier.preemptible:
            band = "koord-batch"
        else:
            band = "koord-prod" if tier.name == first_prod else "koord-mid"
        value = BANDS[band][1] - used.get(band, 0)
        used[band] = used.get(band, 0) + 1
        mapped[tier.name] = KoordTier(tier, class_name(tier.name), band, value)
    return {name: mapped[name] for name in policy.tiers if name in mapped}
