"""Check stage, sharing family: MIG, time-slicing and MPS on one pool and one card vendor."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, pools_with_cards, warning_at
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


def _sharing_field(pool: Pool) -> str:
    return "timeSlicing" if pool.time_slicing_replicas else "mps"


def _staged(policy: Policy) -> Iterator[tuple[Pool, int]]:
    for pool in policy.pools.values():
        if pool.retiring_replicas is not None and (pool.time_slicing_replicas or pool.mps_replicas):
            yield pool, pool.retiring_replicas


def _capacity(policy: Policy, pool: Pool) -> tuple[str, int]:
    card = policy.card_types[pool.card_type]
    resource = capacity.main_resource(pool, card)
    return resource, capacity.pool_resources(pool, card, policy.fleet).get(resource, 0)


STEP_2 = (
    "when `hetgitops diff --kubeconfig` on the change that removes retiringReplicas says "
    "'safe now' (no more replicas in use on the pool's nodes than the new count gives), remove "
    "it in a change of its own; until then new work waits in Kueue instead of overbooking"
)


@rule("sharing-retiring", Severity.WARNING)
def sharing_retiring(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A pool is half-way through a staged reduction of its time-slicing or MPS replicas: the
    device plugin still advertises `retiringReplicas` per GPU, so the work admitted under the
    old count keeps fitting on the nodes, while Kueue's quotas (and every capacity check) count
    the new `replicas`. Reported for as long as the field stays.

    Fails: `timeSlicing: {replicas: 2, retiringReplicas: 4}` left in place.
    Passes: `timeSlicing: {replicas: 2}` (step 2 done).
    Fix: once `hetgitops diff --kubeconfig` says no more replicas are in use on the pool's
    nodes than the new count gives, remove `retiringReplicas` in a change of its own.
    """
    for pool, retiring in _staged(policy):
        if retiring <= pool.shared_replicas:
            continue  # sharing-retiring-not-higher's case
        resource, held = _capacity(policy, pool)
        whole = held // pool.shared_replicas
        yield warning_at(
            "sharing-retiring",
            f"pool '{pool.name}' is in a staged reduction: the device plugin keeps advertising "
            f"{retiring} {resource} per GPU ({whole * retiring} on the pool) while Kueue's "
            f"quotas count {pool.shared_replicas} ({held}); work admitted above {held} keeps "
            "running, new work waits until it fits",
            pool.origin,
            "spec",
            _sharing_field(pool),
            "retiringReplicas",
            hint=STEP_2,
        )


@rule("sharing-retiring-not-higher")
def sharing_retiring_not_higher(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """`retiringReplicas` is not above `replicas`: there is nothing to stage (raising the
    replicas is safe in one step; the device plugin advertises more, nothing runs over).

    Fails: `timeSlicing: {replicas: 4, retiringReplicas: 4}`.
    Passes: `timeSlicing: {replicas: 2, retiringReplicas: 4}` (4 -> 2 in two steps).
    Fix: remove `retiringReplicas`, or set it to the replicas the device plugin runs with now
    (the old, higher count).
    """
    for pool, retiring in _staged(policy):
        if retiring > pool.shared_replicas:
            continue
        yield error_at(
            "sharing-retiring-not-higher",
            f"pool '{pool.name}': retiringReplicas {retiring} is not above replicas "
            f"{pool.shared_replicas}, so there is no reduction to stage",
            pool.origin,
            "spec",
            _sharing_field(pool),
            "retiringReplicas",
            hint="remove retiringReplicas, or set it to the higher count the device plugin "
            "runs with now",
        )
