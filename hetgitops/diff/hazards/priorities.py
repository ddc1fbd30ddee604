"""Diff stage, day-2 hazards of PriorityClasses: one removed (pods naming it are refused) or
one whose immutable value or preemption policy changes (the sync recreates it)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from hetgitops.diff.hazards.reading import by_kind, kept
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.output.manifests import Manifest


@hazard_rule(
    "priority-class-removed",
    when=(
        "A PriorityClass leaves the policy (a tier renamed or removed): pods that controllers "
        "(Deployments, Jobs, JobSets) recreate with its name are refused by the Priority "
        "admission plugin."
    ),
    fix="move the workloads to the new tier's class before the sync.",
)
def priority_class_removed(
    before: Sequence[Manifest], after: Sequence[Manifest]
) -> Iterator[Hazard]:
    """Pods name their PriorityClass; the Priority admission plugin refuses a pod whose class
    does not exist (plugin/pkg/admission/priority/admission.go:363), so controllers that
    recreate pods of a removed tier fail until their template changes."""
    old, new = by_kind(before, "PriorityClass"), by_kind(after, "PriorityClass")
    workload_classes = set(by_kind(before, "WorkloadPriorityClass")) - set(
        by_kind(after, "WorkloadPriorityClass")
    )
    for name in sorted(set(old) - set(new)):
        # Kueue v0.19.2 pkg/controller/jobframework/reconciler.go:1716-1718: a job labelled
        # with a missing WorkloadPriorityClass gets no Workload (the lookup fails), so it stays
        # suspended.
        kueue = (
            f"; Kueue cannot build a Workload for a job labelled kueue.x-k8s.io/priority-class: "
            f"{name} (WorkloadPriorityClass {name} is removed too), so such jobs stay suspended"
            if name in workload_classes
            else ""
        )
        yield Hazard(
            rule="priority-class-removed",
            subject=f"PriorityClass {name}",
            message="leaves the policy: running pods keep their priority, but every pod a "
            "Deployment, "
            f"Job or JobSet creates with priorityClassName {name} from then on is refused "
            f'("no PriorityClass with name {name} was found"), so replicas and retries fail'
            f"{kueue}",
            action=f"change priorityClassName {name} (and kueue.x-k8s.io/priority-class) in the "
            "templates of running Deployments and jobs to the new tier before the sync",
            span=old[name].origin,
            scope=(("priorityclass", name),),
        )


def _tier_fields(m: Manifest) -> dict[str, Any]:
    return {f: m.obj.get(f) for f in ("value", "preemptionPolicy")}


@hazard_rule(
    "priority-class-recreated",
    when=(
        "A tier's value or preemptionPolicy changes; both are immutable on a PriorityClass, so "
        "the sync deletes and recreates it (Argo CD Force=true,Replace=true; Flux force). "
        "Running pods keep the old priority; pods created while the class is gone are rejected "
        "and retried."
    ),
    fix="sync when few of the tier's pods are being created; recreate long-running pods.",
)
def priority_class_recreated(
    before: Sequence[Manifest], after: Sequence[Manifest]
) -> Iterator[Hazard]:
    """PriorityClass `value` and `preemptionPolicy` cannot be updated (Kubernetes
    pkg/apis/scheduling/validation/validation.go:62-73); the render asks Argo CD
    (Force=true,Replace=true) and Flux (kustomize.toolkit.fluxcd.io/force) to delete and
    recreate the class. What that does: a pod's priority is copied from its class when the pod
    is created and never changes, so running pods keep the old value (kube-scheduler and
    Volcano's task order use it) while Kueue moves the tier's Workloads to the new
    WorkloadPriorityClass value at once (v0.19.2 pkg/controller/core/
    workloadpriorityclass_controller.go:70-118); between delete and create the Priority
    admission plugin rejects new pods naming the class (plugin/pkg/admission/priority/
    admission.go:363) and Volcano gives the tier's PodGroups the default priority
    (pkg/scheduler/cache/cache.go:1537-1543, v1.15.1)."""
    for name, old, new in kept(before, after, "PriorityClass"):
        was, now = _tier_fields(old), _tier_fields(new)
        changed = [f"{f} {was[f]} -> {now[f]}" for f in was if was[f] != now[f]]
        if not changed:
            continue
        yield Hazard(
            rule="priority-class-recreated",
            subject=f"PriorityClass {name}",
            message=f"changes {', '.join(changed)}, which the API server never updates: the sync "
            "deletes and recreates the class (Argo CD Force=true,Replace=true; Flux "
            "kustomize.toolkit.fluxcd.io/force). Running pods keep the old priority until "
            "they are recreated, while Kueue re-ranks the tier's workloads at once; pods "
            "created while the class is gone are rejected (their controllers retry)",
            action="sync when few pods of the tier are being created; recreate long-running pods "
            "(serving Deployments) to take the new priority; with plain kubectl run "
            f"`kubectl replace --force -f core/priorityclass-{name}.yaml` (apply cannot change it)",
            span=new.origin,
            # diff --kubeconfig counts the tier's controller-owned pods: what a controller
            # recreates (a retry, a rollout, a reschedule) is what the gap can refuse.
            scope=(("priorityclass", name),),
        )
