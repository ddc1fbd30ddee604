"""Check stage, coefficients family: normalized performance coefficients for cards in use."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, note, quota_uses
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity, listing
from hetgitops.model.policy import Policy
from hetgitops.plan import routing
from hetgitops.plan.routing import iter_cards

RULE = "coefficient-missing"


@rule(RULE, Severity.ERROR)
def coefficient_missing(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A card type in use has a performance coefficient (normalized capacity depends on it).

    In use: a pool of it holds team quota, or a WorkloadProfile routes to it without its own
    `performance` override. A `normalized` quota on such a card cannot be converted at all.
    Reported at the card type, with a note at every use.
    Fails: a team quota in a pool of a card type without `spec.performance`.
    Passes: the card type has `performance: {coefficient: 0.75, reference: A100-SXM4-80GB,
    coefficientSet: "2026.2"}`.
    Fix: measure the card against the fleet's reference card on a representative workload and add
    `spec.performance: {coefficient: X, reference: CARD, coefficientSet: NAME}` to the card type.
    Until then write the team's quota in that pool as `cards` instead of `normalized`, and give
    profiles that route to it their own `performance` entry.
    """
    uses: dict[str, list[str]] = {}
    where: dict[str, list[Related]] = {}  # every use, as a note (an aggregate finding)
    for use in quota_uses(policy):
        if use.card.performance is not None:
            continue
        uses.setdefault(use.card.name, []).append(f"pool '{use.pool.name}' has team quota")
        where.setdefault(use.card.name, []).append(
            note(
                f"team '{use.team.name}' has quota in pool '{use.pool.name}'",
                use.quota.origin,
                "pool",
            )
        )
        if use.quota.normalized is not None and use.quota.cards is None:
            yield error_at(
                RULE,
                f"normalized quota needs a coefficient, and card type '{use.card.name}' has none",
                use.quota.origin,
                "normalized",
                hint=f"add spec.performance to CardType '{use.card.name}', or use cards",
            )
    router = routing.router(policy)
    for profile in policy.profiles.values():
        for card in iter_cards(router.routes(profile)):
            if card.performance is None and card.name not in profile.performance:
                uses.setdefault(card.name, []).append(f"profile '{profile.name}' runs on it")
                where.setdefault(card.name, []).append(
                    note(f"profile '{profile.name}' runs on it", profile.origin, "metadata", "name")
                )
    for name, reasons in uses.items():
        card = policy.card_types[name]
        yield error_at(
            RULE,
            f"card type '{name}' has no performance coefficient but is in use: "
            + listing(sorted(set(reasons)), 3),
            card.origin,
            "spec",
            "performance",
            hint="measure it against the reference card and add spec.performance",
            related=where[name],
        )
