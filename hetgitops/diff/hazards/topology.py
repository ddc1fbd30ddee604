"""Diff stage, day-2 hazards of the Fleet's Kueue Topology: its levels changed in place, or the
Topology replaced, and the two steps of the `spec.topology.retiring` transition."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import yaml

from hetgitops.diagnostics import listing
from hetgitops.diff.hazards.flavors import retiring
from hetgitops.diff.hazards.reading import by_kind, immutable_field, spec_of
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.output.manifests import Manifest


@hazard_rule(
    "kueue-topology-immutable",
    when="Topology.spec.levels changes; it is immutable.",
    fix="delete the Topology and let the sync recreate it.",
)
def topology_immutable(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Topology.spec.levels is immutable (Kueue CRD)."""
    yield from immutable_field(
        before, after, kind="Topology", field="levels", rule="kueue-topology-immutable"
    )


def _topology_users(manifests: Sequence[Manifest]) -> dict[str, tuple[set[str], set[str]]]:
    """Topology -> (current flavors, retiring flavors) that name it."""
    retired = retiring(manifests)
    found: dict[str, tuple[set[str], set[str]]] = {}
    for name, m in by_kind(manifests, "ResourceFlavor").items():
        topology = spec_of(m).get("topologyName")
        if topology:
            current, kept = found.setdefault(str(topology), (set(), set()))
            (kept if name in retired else current).add(name)
    return found


def topology_snippet(topology: Manifest) -> str:
    """The Fleet's `spec.topology.retiring` entry for `topology`, as the base render wrote it."""
    labels = [str(level.get("nodeLabel")) for level in spec_of(topology).get("levels") or []]
    entry = {"name": topology.name, "nodeLabels": labels}
    return str(yaml.safe_dump({"topology": {"retiring": entry}}, sort_keys=False))


def _listed_names(names: set[str]) -> str:
    return listing(sorted(names), 4)


@hazard_rule(
    "kueue-topology-renamed",
    when=(
        "A Topology the flavors name is replaced (levels changed): every topology-bound flavor "
        "is renamed and, once the old ones are pruned, Kueue forgets the work admitted on them "
        "and admits the new flavors' quota on the same nodes."
    ),
    fix=(
        "step 1, keep the old Topology (Fleet spec.topology.retiring, the snippet) and each "
        "pool's old flavor (spec.kueue.retiringFlavor); step 2, remove them once nothing is "
        "admitted on the retiring flavors."
    ),
)
@hazard_rule(
    "kueue-topology-transition",
    when=(
        "Step 1 of a Topology change: the old Topology stays for the retiring flavors that name "
        "it, so their ClusterQueues stay active."
    ),
    fix="none needed; remove it with the last retiring flavor, once drained.",
)
@hazard_rule(
    "kueue-topology-retired",
    when=(
        "Step 2 of a Topology change: the retiring Topology goes with its retiring flavors; work "
        "still admitted on them stops being counted."
    ),
    fix="merge only when every kueue-flavor-retired hazard says 'safe to remove now'.",
)
def topology_steps(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A Topology change, by step. Kueue holds a Topology with its resource-in-use finalizer
    while a TAS flavor names it (v0.19.2 pkg/controller/tas/topology_controller.go:108-124),
    a flavor while a ClusterQueue lists it (pkg/controller/core/resourceflavor_controller.go:
    106-120); once both are gone its TAS usage is dropped (pkg/cache/scheduler/cache.go:
    315-323) and a ClusterQueue listing a TAS flavor whose Topology is missing is inactive
    (clusterqueue.go:351-357). So the old Topology must stay as long as retiring flavors
    name it (the Fleet's `spec.topology.retiring`)."""
    old, new = by_kind(before, "Topology"), by_kind(after, "Topology")
    users_before, users_after = _topology_users(before), _topology_users(after)
    for name in sorted(old):
        current_before, kept_before = users_before.get(name, (set(), set()))
        current_after, kept_after = users_after.get(name, (set(), set()))
        if name not in new and current_before:
            yield Hazard(
                rule="kueue-topology-renamed",
                subject=f"Topology {name}",
                message=f"is replaced ({', '.join(sorted(set(new) - set(old))) or 'by none'}) "
                "while "
                f"{len(current_before)} flavor(s) name it ({_listed_names(current_before)}): "
                "those flavors are renamed, and once they and the Topology are pruned Kueue "
                "forgets the work admitted on them and admits the new flavors' full quota on "
                "the same nodes",
                action="add the Fleet's spec.topology.retiring entry below and each renamed pool's "
                "spec.kueue.retiringFlavor entry (kueue-flavor-renamed) in the same change "
                "(step 1: the old Topology and flavors stay, admit nothing new, keep their work "
                "counted); remove them together in a later change once `hetgitops diff "
                "--kubeconfig` shows nothing admitted on the retiring flavors (step 2)",
                span=old[name].origin,
                snippet=topology_snippet(old[name]),
            )
        elif name in new and current_before and not current_after and kept_after:
            yield Hazard(
                rule="kueue-topology-transition",
                subject=f"Topology {name}",
                message=f"is kept as the Fleet's retiring Topology for {len(kept_after)} retiring "
                f"flavor(s) ({_listed_names(kept_after)}): step 1 of a Topology change; their "
                "ClusterQueues stay active and their running work stays counted",
                action="remove spec.topology.retiring with the last retiring flavor naming it, "
                "once "
                "`hetgitops diff --kubeconfig` shows nothing admitted on those flavors",
                span=new[name].origin,
            )
        elif name not in new and kept_before and not current_before:
            yield Hazard(
                rule="kueue-topology-retired",
                subject=f"Topology {name}",
                message=f"ends the Topology change (step 2): it goes with the retiring flavor(s) "
                f"{_listed_names(kept_before - set(by_kind(after, 'ResourceFlavor')))} that "
                "named it; whatever is still admitted on them stops being counted",
                action="merge only when `hetgitops diff --kubeconfig` says 'safe to remove now' on "
                "every kueue-flavor-retired hazard of this change",
                span=old[name].origin,
            )
