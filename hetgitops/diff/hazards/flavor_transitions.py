"""Diff stage, day-2 hazards of a pool's flavor renamed: the rename itself (double booking) and
the two steps of the `spec.kueue.retiringFlavor` transition that avoids it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

import yaml

from hetgitops.diff.hazards.flavors import flavor_pool, flavor_users, nominal, retiring
from hetgitops.diff.hazards.nodes import pool_nodes
from hetgitops.diff.hazards.reading import by_kind, spec_of
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.model import quantities
from hetgitops.output.manifests import Manifest

FROZEN_FLAVOR_FIELDS = ("nodeLabels", "tolerations", "topologyName")


def retiring_snippet(flavor: Manifest) -> str:
    """The `spec.kueue.retiringFlavor` entry for `flavor`, its frozen fields exactly as the
    base render wrote them (as live, once that render was synced)."""
    spec = spec_of(flavor)
    entry: dict[str, Any] = {"name": flavor.name}
    entry.update({f: spec[f] for f in FROZEN_FLAVOR_FIELDS if f in spec})
    text = yaml.safe_dump({"kueue": {"retiringFlavor": entry}}, sort_keys=False)
    return str(text)


def _accelerators(amounts: Mapping[str, Decimal]) -> str:
    shown = [
        f"{quantities.canonical(v)} {r}"
        for r, v in sorted(amounts.items())
        if "/" in r and v > 0  # vendor resources: the cards and slices, not cpu / memory
    ]
    return ", ".join(shown)


def _quota_text(amounts: Mapping[str, Decimal], *others: Mapping[str, Decimal]) -> str:
    """Σ nominal of the vendor resources that `amounts` or `others` give some quota, zeros
    included (a held-back flavor shows 0)."""
    keys = {r for m in (amounts, *others) for r, v in m.items() if "/" in r and v > 0}
    shown = [f"{quantities.canonical(amounts.get(r, Decimal(0)))} {r}" for r in sorted(keys)]
    return ", ".join(shown) or "no accelerator quota"


@hazard_rule(
    "kueue-flavor-renamed",
    when=(
        "A pool's ResourceFlavor gets a new name (a taint, label, topology or taxonomy change of "
        "a topology-bound flavor, or the pool renamed: a new flavor selects the same nodes). "
        "Kueue keeps usage per flavor name: once no ClusterQueue names the old flavor, the "
        "workloads admitted on it are no longer counted, nothing is evicted, and the new flavor "
        "admits its full quota on top of the pods still running on the same nodes (double "
        "booking)."
    ),
    fix=(
        "add the spec.kueue.retiringFlavor entry diff prints to the pool in the same change (the "
        "old flavor stays, admits nothing new and keeps its work counted; the new flavor's quota "
        "is cut by what it holds); or let the pool's workloads finish or stop them (ClusterQueue "
        "stopPolicy: HoldAndDrain) before the sync, or sync when it is idle."
    ),
)
def flavor_renamed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A pool whose flavor is replaced by one of another name. Kueue v0.19.2 counts a
    workload's usage under the (flavor, resource) pairs of its admission
    (pkg/cache/scheduler/clusterqueue.go:596-606, FlavorResourceUsage) and checks a request
    only against the quota of the flavor it tries: a workload admitted on the old flavor uses
    none of the new flavor's quota, and nothing evicts it. The new flavor starts empty, so
    Kueue admits its full quota on the same nodes. The way through is a transition
    (`spec.kueue.retiringFlavor`, whose snippet the hazard carries); a retiring flavor removed
    is `kueue-flavor-retired`'s case."""
    old, new = by_kind(before, "ResourceFlavor"), by_kind(after, "ResourceFlavor")
    retiring_before, retiring_after = retiring(before), retiring(after)
    # Found once, not once per flavor (each pass walks every manifest of the render).
    new_by_pool = {flavor_pool(m): name for name, m in new.items() if name not in retiring_after}
    old_nodes, new_nodes = pool_nodes(before), pool_nodes(after)
    topologies_after = set(by_kind(after, "Topology"))
    for name in sorted(set(old) - set(new) - retiring_before):
        pool = flavor_pool(old[name])
        successor = new_by_pool.get(pool)
        if successor is None:
            # A renamed pool: a new flavor selects the same nodes under another pool label
            # (found on the busy simulated fleet: rename-pool double-booked l40s).
            nodes = old_nodes.get(pool, set())
            successor = next(
                (
                    n
                    for n, m in sorted(new.items())
                    if n not in old
                    and n not in retiring_after
                    and nodes & new_nodes.get(flavor_pool(m), set())
                ),
                None,
            )
        if successor is None:
            continue
        held = _accelerators(nominal(before, name))
        amount = f" (up to {held})" if held else ""
        same_topology = spec_of(old[name]).get("topologyName") == spec_of(new[successor]).get(
            "topologyName"
        )
        drain = (
            f"let pool {pool}'s workloads finish or stop them (set the ClusterQueues' "
            f"stopPolicy: HoldAndDrain and wait for their admitted count on {name} to reach "
            "0), or sync when the pool is idle"
        )
        old_topology = spec_of(old[name]).get("topologyName")
        keep_topology = (
            ""
            if same_topology or old_topology in topologies_after
            else f", together with the Fleet's spec.topology.retiring entry of "
            f"kueue-topology-renamed (Topology {old_topology}, which {name} names: without it "
            "Kueue deactivates the ClusterQueues listing the flavor)"
        )
        action = (
            f"add the spec.kueue.retiringFlavor entry below to Pool {pool} in the same change "
            f"(kueue: retiringFlavor: name: {name} and its spec as live){keep_topology}, so it "
            "stays, admits nothing new and keeps its work counted while the new flavor's quota "
            f"is cut by what it holds (remove it once nothing is admitted on {name}); or, "
            f"before the sync, {drain}"
        )
        yield Hazard(
            rule="kueue-flavor-renamed",
            subject=f"ResourceFlavor {name}",
            message=f"is replaced by {successor} for pool {pool}: Kueue stops counting the "
            "workloads "
            f"admitted on {name} once no ClusterQueue names it, evicts none of them, and admits "
            f"the full quota of {successor} on the same nodes, so the pool is double-booked"
            f"{amount} until they finish; pods the scheduler cannot place then stay Pending",
            action=action,
            span=new[successor].origin,
            scope=(("flavor", name),),
            snippet=retiring_snippet(old[name]),
        )


@hazard_rule(
    "kueue-flavor-transition",
    when=(
        "A pool's renamed flavor starts a transition (spec.kueue.retiringFlavor): the old "
        "ResourceFlavor stays in the ClusterQueues with its quota and a Kueue-side nodeTaint, so "
        "Kueue admits nothing new on it and keeps the work admitted there counted; the new "
        "flavor gets the team quotas less what the old one holds, so new work on the pool pends "
        "instead of double-booking its nodes."
    ),
    fix=(
        "nothing to fix; once `hetgitops diff --kubeconfig` shows nothing admitted on the old "
        "flavor, remove the entry in a change of its own (or lower `holds` as it drains)."
    ),
)
def flavor_transition(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """The change that starts a transition: the old flavor is kept and newly tainted. What
    stays counted: Kueue adds usage per (flavor, resource) whatever the quota
    (pkg/cache/scheduler/resource_node.go:144-152 addUsage), and a flavor's nodeTaints only
    decide new assignments (pkg/scheduler/flavorassigner/flavorassigner.go:1239-1244); a
    ResourceFlavor update evicts nothing, it only requeues inadmissible workloads
    (pkg/controller/core/resourceflavor_controller.go:167-195)."""
    old, new = by_kind(before, "ResourceFlavor"), by_kind(after, "ResourceFlavor")
    retiring_after = retiring(after)
    new_by_pool = {flavor_pool(m): name for name, m in new.items() if name not in retiring_after}
    for name in sorted(retiring_after - retiring(before)):
        pool = flavor_pool(new[name])
        successor = new_by_pool.get(pool, "?")
        queues = ", ".join(sorted(flavor_users(after).get(name, []))) or "none"
        known = "" if name in old else f" ({name} is not in the base render: check it is live)"
        full = _quota_text(nominal(after, name))
        kept = _quota_text(nominal(after, successor), nominal(after, name))
        yield Hazard(
            rule="kueue-flavor-transition",
            subject=f"ResourceFlavor {name}",
            message=f"retires for pool {pool}{known}: it stays in ClusterQueue(s) {queues} with "
            "its "
            f"quota ({full}) and a Kueue-side nodeTaint, so Kueue admits nothing new on it "
            f"while every workload admitted there stays counted; {successor} gets {kept} "
            f"until the entry goes, so new work on the pool pends instead of double-booking",
            action=f"when `hetgitops diff --kubeconfig` shows nothing admitted on {name}, remove "
            f"Pool {pool}'s spec.kueue.retiringFlavor in a change of its own (lower its "
            "`holds` to the usage diff shows to let new work in sooner)",
            span=new[name].origin,
            scope=(("flavor", name),),
        )


@hazard_rule(
    "kueue-flavor-retired",
    when=(
        "A retiring flavor (spec.kueue.retiringFlavor) is removed: the new flavor gets its full "
        "quota back, and whatever is still admitted on the old one stops being counted, so its "
        "nodes are double-booked by that much."
    ),
    fix=(
        "merge the removal only when `hetgitops diff --kubeconfig` shows 0 workloads admitted on "
        "the old flavor; until then keep the entry (lower `holds` to let work in)."
    ),
)
def flavor_retired(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """The change that ends a transition: safe only at 0 admitted usage on the old flavor."""
    old, new = by_kind(before, "ResourceFlavor"), by_kind(after, "ResourceFlavor")
    for name in sorted(retiring(before) - set(new)):
        pool = flavor_pool(old[name])
        successors = [n for n, m in new.items() if flavor_pool(m) == pool]
        successor = successors[0] if successors else "?"
        was_amounts, now_amounts = nominal(before, successor), nominal(after, successor)
        was = _quota_text(was_amounts, now_amounts)
        now = _quota_text(now_amounts, was_amounts)
        yield Hazard(
            rule="kueue-flavor-retired",
            subject=f"ResourceFlavor {name}",
            message=f"ends its transition for pool {pool}: {successor} goes from {was} to {now}, "
            "and "
            f"whatever is still admitted on {name} stops being counted, so the pool is "
            "double-booked by that much until it finishes",
            action="merge only when `hetgitops diff --kubeconfig` shows nothing admitted on "
            f"{name}; "
            "until then keep the entry",
            span=old[name].origin,
            scope=(("flavor", name),),
        )
