"""Diff stage, day-2 hazards: the base and head manifests (and the MIG drain plan) -> the
updates the target systems refuse or handle badly, each with what to do.

Judged from the two sides' manifests alone, so they stay right when the compilers change.
Sources: Kueue v0.19 CRD transition rules (ResourceFlavor, LocalQueue, Topology), Volcano's
queue webhook (child <= parent on every update), Koordinator's quota webhook (key sets, deletes,
is-parent, tree ids), Kueue's resource-in-use finalizer, the
Prune=false Namespace hetgitops writes and the immutable PriorityClass value. One module per
kind of object; each rule's user text is registered with `@hazard_rule` (`registry`), and
docs/diff.md's table is generated from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from hetgitops.diff.drains import Drain
from hetgitops.diff.hazards import coowned as _coowned  # noqa: F401 (field-co-owned, live)
from hetgitops.diff.hazards import (
    dra,
    flavor_transitions,
    flavors,
    koordinator,
    mig,
    mig_strategy,
    namespaces,
    nodes,
    priorities,
    queue_stop,
    queues,
    sharing,
    topology,
    volcano_layout,
    volcano_prune,
)
from hetgitops.diff.hazards import jobs as _jobs  # noqa: F401 (registers jobs-unmatched)
from hetgitops.diff.hazards import terminating as _terminating  # noqa: F401 (live)
from hetgitops.diff.hazards.reading import Indexed
from hetgitops.diff.hazards.registry import HAZARDS, Hazard, HazardRule, hazard_rule
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest

__all__ = [
    "HAZARDS",
    "HAZARD_RULES",
    "Hazard",
    "HazardRule",
    "hazard_rule",
    "hazards",
    "policy_hazards",
]

# Every hazard id (public API, like rule ids): schemas/diff.schema.json lists them.
HAZARD_RULES = tuple(HAZARDS)


def hazards(
    before: Sequence[Manifest],
    after: Sequence[Manifest],
    drains: Sequence[Drain],
    *,
    volcano: tuple[int, ...] | None = None,
) -> list[Hazard]:
    """The hazards of the manifests and drain plan of one cluster (`jobs-unmatched` and the
    sharing steps, which read the policies, are added by diff/run.py); `volcano` is the
    Volcano version the policy declares (what its webhook refuses depends on it)."""
    before, after = Indexed(before), Indexed(after)
    found = [
        *nodes.node_removed(before, after),
        *nodes.node_moved(before, after),
        *sharing.sharing_reduced(before, after),
        *flavor_transitions.flavor_renamed(before, after),
        *flavor_transitions.flavor_transition(before, after),
        *flavor_transitions.flavor_retired(before, after),
        *topology.topology_steps(before, after),
        *nodes.taint_evicts(before, after),
        *queues.localqueue_removed(before, after),
        *queue_stop.queue_stopped(before, after),
        *queues.clusterqueue_removed(before, after),
        *priorities.priority_class_removed(before, after),
        *queues.resource_uncovered(before, after),
        *flavors.flavor_immutable(before, after),
        *queues.localqueue_immutable(before, after),
        *topology.topology_immutable(before, after),
        *queues.volcano_shrink_order(before, after),
        *flavors.flavor_removed(before, after),
        *queues.namespace_removed(before, after),
        *namespaces.namespace_unselected(before, after),
        *mig.mig_mode_flips(drains),
        *mig.mig_repartitions(drains),
        *priorities.priority_class_recreated(before, after),
        *koordinator.key_set_changed(before, after),
        *koordinator.quota_removed(before, after),
        *koordinator.is_parent_flipped(before, after),
        *koordinator.tree_changed(before, after),
        *volcano_prune.queue_pruned(before, after, volcano),
        *volcano_layout.layout_switched(before, after),
        *dra.dra_mappings_changed(before, after),
        *dra.dra_pool_moved(before, after),
    ]
    return sorted(found, key=lambda h: (h.rule, h.subject))


def policy_hazards(old: Policy | None, new: Policy | None) -> list[Hazard]:
    """The hazards read from the two policies rather than their manifests (a fleet setting
    whose effect the manifests do not spell)."""
    return [*mig_strategy.strategy_single(old, new)]
