"""Model stage, unknown facts: what the policy cannot know because an earlier finding dropped
its input, each with that finding (a `Cause`).

Rules ask here before they report something that depends on such a fact: a reference to a name
that may be in a file that did not load, "no team allows tier x" while a Team document is lost,
the capacity of a pool whose node ranges did not expand. They then report the finding as a
consequence of the cause (`Diagnostic.because`) or, when the finding would be a number computed
from missing input, not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hetgitops.diagnostics import Cause
from hetgitops.load.losses import ANY_KIND, Loss


@dataclass(frozen=True)
class Unknowns:
    """`objects`: (kind, name) that were lost (kind `*`: of an unknown kind). `kinds`: kinds
    with some lost object (`*`: a loss whose kinds are unknown). `unnamed`: kinds with lost
    objects whose names are unknown (`*`: any kind). `pools`: pools whose capacity is unknown.

    From the policy's own unresolved names (`model.dangling`): `team_tiers`, teams that name
    a tier that does not exist; `team_pools`, teams with a quota in a pool that does not
    exist; `pool_cards`, pools whose card type does not exist."""

    objects: Mapping[tuple[str, str], Cause] = field(default_factory=dict)
    kinds: Mapping[str, Cause] = field(default_factory=dict)
    unnamed: Mapping[str, Cause] = field(default_factory=dict)
    pools: Mapping[str, Cause] = field(default_factory=dict)
    team_tiers: Mapping[str, Cause] = field(default_factory=dict)
    team_pools: Mapping[str, Cause] = field(default_factory=dict)
    pool_cards: Mapping[str, Cause] = field(default_factory=dict)

    def object(self, kind: str, name: str) -> Cause | None:
        """Why `kind` `name` may exist although the model lacks it; None if it simply does not."""
        return (
            self.objects.get((kind, name))
            or self.objects.get((ANY_KIND, name))
            or self.unnamed.get(kind)
            or self.unnamed.get(ANY_KIND)
        )

    def names(self, kind: str) -> set[str]:
        """Names of lost objects of `kind` (for "did you mean" hints)."""
        return {name for (k, name) in self.objects if k in (kind, ANY_KIND)}

    def kind(self, kind: str) -> Cause | None:
        """Why the model's objects of `kind` may be incomplete; None if they are all there."""
        return self.kinds.get(kind) or self.kinds.get(ANY_KIND)

    def allowed_tiers(self) -> Cause | None:
        """Why the set of tiers teams allow may be incomplete (a Team lost, or one naming a
        tier that does not exist: it may have meant any)."""
        return self.kind("Team") or _first(self.team_tiers)

    def team_reach(self) -> Cause | None:
        """Why what teams can hold may be incomplete (a Team or Pool lost, or a quota in a
        pool that does not exist)."""
        return self.kind("Team") or self.kind("Pool") or _first(self.team_pools)

    def pool_offers(self) -> Cause | None:
        """Why what pools offer may be incomplete (a Pool lost, or one whose card type does
        not exist: it may have been the pool a profile needs)."""
        return self.kind("Pool") or _first(self.pool_cards)


def _first(causes: Mapping[str, Cause]) -> Cause | None:
    return min(causes.values(), default=None)


def unknowns(
    losses: Iterable[Loss], loaded: Iterable[tuple[str, str]], pools: Mapping[str, Cause]
) -> Unknowns:
    """The unknown facts of `losses`, minus what `loaded` documents define after all (a file
    with a syntax error near its end still loaded the documents before it). The first loss in
    report order is the cause of each fact."""
    present = set(loaded)
    names = {name for _, name in present}
    objects: dict[tuple[str, str], Cause] = {}
    kinds: dict[str, Cause] = {}
    unnamed: dict[str, Cause] = {}
    for loss in sorted(losses, key=lambda loss: loss.cause):
        for kind, name in sorted(loss.definitions):
            if (kind, name) in present or (kind == ANY_KIND and name in names):
                continue
            objects.setdefault((kind, name), loss.cause)
            kinds.setdefault(kind, loss.cause)
        if not loss.complete:
            unnamed.setdefault(ANY_KIND, loss.cause)
            kinds.setdefault(ANY_KIND, loss.cause)
    return Unknowns(objects, kinds, unnamed, dict(pools))
