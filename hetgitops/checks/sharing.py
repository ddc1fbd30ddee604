"""Check stage, sharing family: MIG, time-slicing and MPS on one pool and one card vendor."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, pools_with_cards
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import CardType, Fleet, Policy, Pool
from hetgitops.plan import capacity

RULE = "sharing-conflict"


@rule(RULE, Severity.ERROR)
def sharing_conflict(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A pool shares its GPUs one way, and only NVIDIA's device plugin time-slices or runs MPS.

    Also: MPS is rejected by the device plugin under migStrategy mixed.
    Fails: a pool with both `mig` and `timeSlicing`; `timeSlicing` on an Ascend pool.
    Passes: `timeSlicing: {replicas: 4}` on an RTX 4090 pool without `mig`.
    Fix: keep one sharing mode per pool (`mig`, `timeSlicing` or `mps`), put the other on its own
    pool, and share non-NVIDIA cards only through their vendor's own means; MPS needs migStrategy
    single or none, otherwise use timeSlicing.
    """
    for pool, card in pools_with_cards(policy):
        problem = _problem(pool, card, policy.fleet)
        if problem:
            field, message, hint = problem
            yield error_at(
                RULE,
                f"pool '{pool.name}': {message}",
                pool.origin,
                "spec",
                field,
                key=True,
                hint=hint,
            )


def _problem(pool: Pool, card: CardType, fleet: Fleet | None) -> tuple[str, str, str] | None:
    """(field, message, hint) of the first conflict, so one pool gives one finding."""
    shared = "timeSlicing" if pool.time_slicing_replicas else "mps" if pool.mps_replicas else None
    if shared is None:
        return None
    if pool.time_slicing_replicas and pool.mps_replicas:
        return "mps", "timeSlicing and mps cannot both be set", "keep one sharing mode"
    if pool.mig:
        return shared, f"{shared} and a MIG layout cannot be combined", "keep one of the two"
    if card.vendor != "nvidia":
        return (
            shared,
            f"{shared} needs NVIDIA's device plugin but '{card.name}' is a {card.vendor} card",
            f"remove spec.{shared}",
        )
    if shared == "mps" and capacity.mig_strategy(fleet) == "mixed":
        return (
            "mps",
            "the device plugin rejects MPS under migStrategy mixed",
            "use timeSlicing, or migStrategy single/none",
        )
    return None
