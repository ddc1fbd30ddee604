"""Diff stage, day-2 hazards of a ResourceFlavor changed in place or removed, and what the
other flavor hazards read of one: its pool, whether it is retiring, which ClusterQueues list it
and with what quota."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal

from hetgitops.compilers.kueue_queues import queue_flavors, queue_quotas
from hetgitops.diff.hazards.reading import by_kind, kept, of_kind, spec_of
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.model import quantities
from hetgitops.output.manifests import Manifest
from hetgitops.plan.flavors import RETIRING_TAINT_SUFFIX
from hetgitops.plan.node_labels import pool_label


def retiring(manifests: Sequence[Manifest]) -> set[str]:
    """ResourceFlavors rendered as retiring: they carry the Kueue-side retiring taint."""
    return {
        m.name
        for m in of_kind(manifests, "ResourceFlavor")
        if any(
            str(t.get("key", "")).endswith(RETIRING_TAINT_SUFFIX)
            for t in spec_of(m).get("nodeTaints") or []
        )
    }


def flavor_pool(m: Manifest) -> str:
    """The pool a ResourceFlavor selects: its `<domain>/pool` node label (every hetgitops
    flavor has one), else its name."""
    return pool_label(spec_of(m).get("nodeLabels") or {}, m.name)


def flavor_users(manifests: Sequence[Manifest]) -> dict[str, list[str]]:
    users: dict[str, list[str]] = {}
    for m in of_kind(manifests, "ClusterQueue"):
        for flavor in queue_flavors(spec_of(m)):
            users.setdefault(flavor.name, []).append(m.name)
    return users


def nominal(manifests: Sequence[Manifest], flavor: str) -> dict[str, Decimal]:
    """Σ nominalQuota per resource the ClusterQueues give `flavor`: what Kueue may admit on it."""
    total: dict[str, Decimal] = {}
    for m in of_kind(manifests, "ClusterQueue"):
        for quota in queue_quotas(spec_of(m)):
            if quota.flavor != flavor:
                continue
            try:
                amount = quantities.value_of(0 if quota.nominal is None else quota.nominal)
            except quantities.QuantityError:
                continue
            total[quota.resource] = total.get(quota.resource, Decimal(0)) + amount
    return total


@hazard_rule(
    "kueue-flavor-immutable",
    when=(
        "A ResourceFlavor that has topologyName changes nodeLabels, tolerations or topologyName: "
        "Kueue v0.19's CRD (CEL transition rules) makes the API server refuse the update."
    ),
    fix="recreate the flavor (Replace=true) while nothing is admitted on it, or rename it.",
)
def flavor_immutable(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Kueue (v0.19 CRD, CEL on UPDATE): once a ResourceFlavor has `topologyName`, its
    `nodeLabels`, `tolerations` and `topologyName` cannot change; Argo CD's apply fails."""
    for name, old, new in kept(before, after, "ResourceFlavor"):
        was, now = spec_of(old), spec_of(new)
        if "topologyName" not in was:
            continue
        fields = [
            f for f in ("nodeLabels", "tolerations", "topologyName") if was.get(f) != now.get(f)
        ]
        if fields:
            yield Hazard(
                rule="kueue-flavor-immutable",
                subject=f"ResourceFlavor {name}",
                message=f"changes {', '.join(fields)}, which Kueue makes immutable once "
                "topologyName "
                "is set: the API server rejects the update",
                action="delete and recreate the flavor (Argo CD sync option Replace=true, or "
                "delete it "
                "by hand and sync) while no workload is admitted on it; or give the pool a new "
                "name so a new flavor is created",
                span=new.origin,
            )


@hazard_rule(
    "kueue-flavor-removed",
    when=(
        "A ResourceFlavor disappears: its deletion waits on Kueue's resource-in-use finalizer "
        "while a ClusterQueue names it."
    ),
    fix="drain or finish the workloads admitted on it; no ClusterQueue may list it.",
)
def flavor_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A removed ResourceFlavor: Kueue's resource-in-use finalizer holds the deletion while a
    ClusterQueue names it, and a ClusterQueue naming a missing flavor goes inactive."""
    old, new = by_kind(before, "ResourceFlavor"), by_kind(after, "ResourceFlavor")
    users_before = flavor_users(before)
    users_after = flavor_users(after)
    for name in sorted(set(old) - set(new) - retiring(before)):
        still = sorted(users_after.get(name, []))
        if still:
            message = (
                f"is removed but ClusterQueue(s) {', '.join(still)} still name it: they go inactive"
            )
            action = "remove the pool from those teams' quotas in the same change"
        else:
            queues = ", ".join(sorted(users_before.get(name, []))) or "none"
            message = (
                f"is removed (used before by ClusterQueue(s) {queues}); its deletion waits "
                "on Kueue's resource-in-use finalizer, and admitted workloads keep running"
            )
            action = (
                "drain or finish the workloads admitted on this flavor; if the deletion "
                "hangs, check no ClusterQueue still lists it"
            )
        yield Hazard(
            rule="kueue-flavor-removed",
            subject=f"ResourceFlavor {name}",
            message=message,
            action=action,
            span=old[name].origin,
            scope=(("flavor", name),),
        )
