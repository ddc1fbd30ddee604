"""Diff stage, day-2 hazards of team Namespaces' labels: a namespace whose labels or whose
queue's namespaceSelector change so that the ClusterQueue of its LocalQueue no longer selects
it (`plan.namespace_labels.selects`, the one reading of a selector)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hetgitops.diff.hazards.reading import by_kind, kept, spec_of
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.output.manifests import Manifest
from hetgitops.plan.namespace_labels import selects


def _labels(m: Manifest) -> dict[str, str]:
    labels = (m.obj.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def _selector(queue: Manifest | None) -> Mapping[str, Any] | None:
    selector = spec_of(queue).get("namespaceSelector") if queue is not None else None
    return selector if isinstance(selector, Mapping) else None


@hazard_rule(
    "namespace-unselected",
    when=(
        "A team namespace's labels, or its ClusterQueue's namespaceSelector, change so that the "
        "ClusterQueue no longer selects the namespace. Kueue checks the selector only when it "
        "admits: new workloads there stay pending (\"workload namespace doesn't match "
        'ClusterQueue selector"), admitted ones keep running and keep their quota.'
    ),
    fix="keep the labels the selector matches in the team's spec.namespaceLabels (or widen "
    "the selector); if the namespace is meant to leave the queue, drain it first.",
)
def namespace_unselected(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """For each namespace on both sides and each ClusterQueue its LocalQueues point at on both
    sides: selected before, not after."""
    old_cqs, new_cqs = by_kind(before, "ClusterQueue"), by_kind(after, "ClusterQueue")
    queues: dict[str, set[str]] = {}
    for m in [*by_kind(before, "LocalQueue").values(), *by_kind(after, "LocalQueue").values()]:
        queues.setdefault(m.namespace or "", set()).add(str(spec_of(m).get("clusterQueue")))
    for name, was, now in kept(before, after, "Namespace"):
        for cq in sorted(queues.get(name, ())):
            if cq not in old_cqs or cq not in new_cqs:
                continue  # a queue added or removed has hazards of its own
            if not selects(_selector(old_cqs[cq]), _labels(was)):
                continue
            if selects(_selector(new_cqs[cq]), _labels(now)):
                continue
            yield Hazard(
                rule="namespace-unselected",
                subject=f"Namespace {name}",
                message=(
                    f"ClusterQueue {cq}'s namespaceSelector no longer selects it: Kueue admits "
                    "no new workload from it (they stay pending: \"workload namespace doesn't "
                    'match ClusterQueue selector"); admitted ones keep running'
                ),
                action=f"keep the labels ClusterQueue {cq} selects in the team's "
                "spec.namespaceLabels, or drain the namespace first if it is to leave the queue",
                span=now.origin,
                scope=(("namespace", name),),
            )
