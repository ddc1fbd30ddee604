"""Check stage, shared helpers: locating findings and walking resolved team quotas.

Not a rule family (nothing here registers a rule); the leading underscore keeps it out of
FAMILIES.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from functools import partial
from typing import NamedTuple, Protocol, TypeVar

from hetgitops.diagnostics import Cause, Diagnostic, Related, Severity, Span, listing
from hetgitops.diagnostics import related as as_related
from hetgitops.load.documents import format_path
from hetgitops.model import mig
from hetgitops.model.policy import CardType, Node, Origin, Policy, Pool, Quota, Team

PathPart = str | int
MIG_PROFILE_UNKNOWN = "mig-profile-unknown"


def _located(origin: Origin, path: Sequence[PathPart], key: bool) -> tuple[Span, str]:
    span = origin.key_at(*path) if key else origin.at(*path)
    return span, format_path((*origin.base, *path))


def finding_at(
    severity: Severity,
    rule: str,
    message: str,
    origin: Origin,
    *path: PathPart,
    hint: str = "",
    key: bool = False,
    related: Iterable[Span | Related] = (),
) -> Diagnostic:
    """A finding at `origin` narrowed to `path` (the key itself when `key`)."""
    span, where = _located(origin, path, key)
    return Diagnostic(
        rule=rule,
        severity=severity,
        message=message,
        span=span,
        path=where,
        hint=hint,
        related=as_related(*related),
    )


def note(message: str, origin: Origin, *path: PathPart, key: bool = False) -> Related:
    """A related location of a finding, with what it contributes (a `note:` line)."""
    span, where = _located(origin, path, key)
    return Related(span, message, where)


error_at = partial(finding_at, Severity.ERROR)
warning_at = partial(finding_at, Severity.WARNING)


K = TypeVar("K")
V = TypeVar("V")


def repeats(items: Iterable[V], key: Callable[[V], K]) -> Iterator[tuple[V, V]]:
    """(first, repeat) for every item whose key an earlier item already had, in order."""
    first: dict[K, V] = {}
    for item in items:
        seen = first.setdefault(key(item), item)
        if seen is not item:
            yield seen, item


def written(origin: Origin, *path: PathPart) -> bool:
    """Whether `path` was written in the document (not just defaulted by the model)."""
    return (*origin.base, *path) in origin.source.values


class _Located(Protocol):
    @property
    def origin(self) -> Origin: ...


_T = TypeVar("_T", bound=_Located)


def in_file_order(items: Iterable[_T]) -> list[_T]:
    """Objects in the order they are written (file, line), so "first" means what a reader
    sees first, not the first name alphabetically."""
    return sorted(items, key=lambda item: item.origin.span)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """A hint listing the closest known names, or all of them when there are few."""
    names = sorted(known)
    close = difflib.get_close_matches(name, names, n=3)
    if close:
        return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    if not names:
        return "none is defined yet"
    return "known: " + listing(names)


def node_group(node: Node) -> Origin:
    """The `spec.nodes[i]` entry a node came from (zone, rack and cardsPerNode live there)."""
    base = node.origin.base
    cut = base.index("names") if "names" in base else len(base)
    return Origin(node.origin.source, base[:cut])


class QuotaUse(NamedTuple):
    """One team quota entry whose pool and card type both resolve."""

    team: Team
    quota: Quota
    pool: Pool
    card: CardType


def quota_uses(policy: Policy) -> Iterator[QuotaUse]:
    """Resolved quotas in team-name, then quota order; unresolved ones are another rule's job."""
    for team in policy.teams.values():
        for quota in team.quotas:
            pool = policy.pools.get(quota.pool)
            card = policy.card_type_of(pool) if pool else None
            if pool is not None and card is not None:
                yield QuotaUse(team, quota, pool, card)


def unknown_mig_profiles(use: QuotaUse) -> dict[str, Cause]:
    """The quota's MIG profiles its card does not have, each with the mig-profile-unknown
    finding that reports it. What such a profile costs or claims is unknown (it is no fraction
    of a GPU anyone knows): budget and capacity totals leave it out rather than guess."""
    table = mig.TABLES.get(use.card.mig_table) if use.card.mig_table else None
    if table is None:
        return {}  # MIG quota on a card without MIG: quota-resource-unavailable
    where = use.quota.origin.child("mig")
    return {
        profile: Cause(where.key_at(profile), MIG_PROFILE_UNKNOWN)
        for profile in use.quota.mig
        if profile not in table.profiles
    }


def amount_path(quota: Quota) -> tuple[PathPart, ...]:
    """The field of a quota entry that says how much it claims (for notes on its line)."""
    if quota.cards is not None:
        return ("cards",)
    return ("normalized",) if quota.normalized is not None else ("mig",)


def known_part(use: QuotaUse) -> Quota:
    """The quota without its unknown MIG profiles (`unknown_mig_profiles`)."""
    unknown = unknown_mig_profiles(use)
    if not unknown:
        return use.quota
    kept = {profile: count for profile, count in use.quota.mig.items() if profile not in unknown}
    return replace(use.quota, mig=kept)


def pools_with_cards(policy: Policy) -> Iterator[tuple[Pool, CardType]]:
    """Pools whose card type resolves; capacity problems of the others would be cascades."""
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        if card is not None:
            yield pool, card
