"""Diff stage, day-2 hazards of queues and the namespaces that hold them: a LocalQueue moved to
another ClusterQueue or removed, a ClusterQueue removed or covering less, a team namespace
removed, a Volcano parent queue shrunk before its children."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from hetgitops.compilers.kueue_queues import covered_resources
from hetgitops.diff.hazards.reading import by_kind, immutable_field, kept, of_kind, spec_of
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.model import quantities
from hetgitops.output.manifests import Manifest

SYNC_WAVE = "argocd.argoproj.io/sync-wave"


SYNC_OPTIONS = "argocd.argoproj.io/sync-options"


FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"


@hazard_rule(
    "kueue-localqueue-immutable",
    when="LocalQueue.spec.clusterQueue changes; it is immutable.",
    fix="delete the LocalQueue and let the sync recreate it.",
)
def localqueue_immutable(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """LocalQueue.spec.clusterQueue is immutable (Kueue CRD)."""
    yield from immutable_field(
        before, after, kind="LocalQueue", field="clusterQueue", rule="kueue-localqueue-immutable"
    )


@hazard_rule(
    "localqueue-removed",
    when=(
        "A LocalQueue leaves the policy while its namespace stays: workloads that name it stay "
        "pending (Kueue: LocalQueue doesn't exist), and pods that controllers recreate with its "
        "queue-name label are never admitted."
    ),
    fix="point the namespace's jobs and Deployments at the new queue first.",
)
def localqueue_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A LocalQueue whose namespace stays (a namespace removed is namespace-removed's case)."""
    old, new = by_kind(before, "LocalQueue"), by_kind(after, "LocalQueue")
    namespaces = {m.name for m in of_kind(after, "Namespace")}
    kept = {f"{m.namespace}/{m.name}" for m in of_kind(after, "LocalQueue")}
    for key in sorted(set(old) - set(new)):
        namespace, name = key.split("/", 1)
        if namespace not in namespaces:
            continue
        others = sorted(k.split("/", 1)[1] for k in kept if k.startswith(f"{namespace}/"))
        instead = f" (it now has {', '.join(others)})" if others else " (it has no queue now)"
        yield Hazard(
            rule="localqueue-removed",
            subject=f"LocalQueue {key}",
            message=f"leaves the policy while namespace {namespace} stays{instead}: workloads "
            "that name "
            f"queue {name} stay pending forever (Kueue: LocalQueue {name} doesn't exist), and "
            "pods that Deployments or Jobs recreate with that queue-name label are never admitted",
            action=f"change the kueue.x-k8s.io/queue-name of namespace {namespace}'s jobs and "
            "Deployments to the new queue before the sync",
            span=old[key].origin,
            scope=(("localqueue", key),),
        )


@hazard_rule(
    "clusterqueue-removed",
    when=(
        "A ClusterQueue leaves the policy: Kueue's resource-in-use finalizer keeps it "
        "Terminating while it has admitted workloads, and its quota stays counted in the cohort "
        "until they finish."
    ),
    fix="drain it first (stopPolicy: HoldAndDrain), or let its workloads finish.",
)
def clusterqueue_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Kueue's resource-in-use finalizer keeps a deleted ClusterQueue while it has admitted
    workloads; until then its quota still counts in its cohort."""
    old, new = by_kind(before, "ClusterQueue"), by_kind(after, "ClusterQueue")
    for name in sorted(set(old) - set(new)):
        cohort = spec_of(old[name]).get("cohortName")
        counted = f", and its quota still counts in cohort {cohort}" if cohort else ""
        yield Hazard(
            rule="clusterqueue-removed",
            subject=f"ClusterQueue {name}",
            message="leaves the policy: Kueue keeps it Terminating (resource-in-use finalizer) "
            "while it "
            f"has admitted workloads{counted}; its pending workloads are never admitted",
            action=f"drain it first: `kubectl patch clusterqueue {name} --type merge -p "
            '\'{"spec":{"stopPolicy":"HoldAndDrain"}}\'` and wait for its admitted '
            "workloads to finish, or move its teams' jobs to their new queue",
            span=old[name].origin,
            scope=(("clusterqueue", name),),
        )


@hazard_rule(
    "kueue-resource-uncovered",
    when=(
        "A ClusterQueue stops covering a resource it covered (a MIG strategy flip, a profile or "
        "card type removed): workloads requesting it are never admitted (resource unavailable in "
        "ClusterQueue)."
    ),
    fix="move such workloads to the new resource names before the sync.",
)
def resource_uncovered(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Kueue admits a workload only if its ClusterQueue covers every resource it requests
    (flavorassigner: "resource R unavailable in ClusterQueue")."""
    for name, old, new in kept(before, after, "ClusterQueue"):
        covered = covered_resources(spec_of(new))
        gone = sorted(covered_resources(spec_of(old)) - covered)
        if not gone:
            continue
        yield Hazard(
            rule="kueue-resource-uncovered",
            subject=f"ClusterQueue {name}",
            message=f"stops covering {', '.join(gone)}: workloads that request it are never "
            "admitted "
            f"(Kueue: resource {gone[0]} unavailable in ClusterQueue); admitted ones keep "
            "running uncounted, and their pods, once gone, cannot come back",
            action="move the team's jobs and Deployments to the resources the queue covers now "
            f"({', '.join(sorted(covered)) or 'none'}) before the sync",
            span=new.origin,
            scope=tuple(("resource", f"{name}|{r}") for r in gone),
        )


@hazard_rule(
    "namespace-removed",
    when=(
        "A team namespace leaves the policy. hetgitops writes Namespaces with Argo CD's "
        "Prune=false,Delete=false and Flux's prune: disabled, so neither tool deletes it; its "
        "LocalQueue and ResourceQuota are pruned, so pending workloads there are stranded and "
        "running ones hold nodes outside every quota."
    ),
    fix="move or finish its workloads and copy its data, then delete it by hand.",
)
def namespace_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A Namespace that leaves the tree: what each GitOps tool does with it depends on the
    annotations its last render carried (compilers/argocd.py NEVER_PRUNE). Either way the
    LocalQueues and ResourceQuota inside it are pruned, so what still runs there is outside
    every queue and quota, and what waits there waits on a queue that is gone."""
    old, new = by_kind(before, "Namespace"), by_kind(after, "Namespace")
    gone_queues = set(by_kind(before, "LocalQueue")) - set(by_kind(after, "LocalQueue"))
    for name in sorted(set(old) - set(new)):
        annotations = old[name].obj.get("metadata", {}).get("annotations") or {}
        argo = "Prune=false" in str(annotations.get(SYNC_OPTIONS, "")).replace(" ", "")
        flux = annotations.get(FLUX_PRUNE) == "disabled"
        kept = {
            (True, True): "Argo CD (Prune=false) and Flux (prune: disabled) both leave it in the "
            "cluster with everything in it",
            (True, False): "Argo CD (Prune=false) leaves it, but Flux deletes it with every pod, "
            "PVC and Secret in it",
            (False, True): "Flux (prune: disabled) leaves it, but Argo CD deletes it with every "
            "pod, PVC and Secret in it",
            (False, False): "both Argo CD and Flux delete it with every pod, PVC and Secret in it",
        }[(argo, flux)]
        queues = sorted(q.split("/", 1)[1] for q in gone_queues if q.startswith(f"{name}/"))
        stranded = (
            f"; its LocalQueue {', '.join(queues)} is pruned, so workloads still pending there "
            "wait forever and running ones keep their nodes outside any team's quota"
            if queues
            else ""
        )
        yield Hazard(
            rule="namespace-removed",
            subject=f"Namespace {name}",
            message=f"leaves the policy: {kept}{stranded}",
            action="first move or finish its workloads (or point them at another team's "
            "LocalQueue) and "
            f"copy its data, then `kubectl delete namespace {name}`",
            span=old[name].origin,
            scope=(("namespace", name),),
        )


def _amounts(spec: Mapping[str, Any], field: str) -> dict[str, Decimal]:
    values = spec.get(field) or {}
    if field == "guarantee":
        values = values.get("resource") or {}
    found: dict[str, Decimal] = {}
    for resource, value in values.items():
        try:
            found[resource] = quantities.value_of(value)
        except quantities.QuantityError:
            continue
    return found


@hazard_rule(
    "volcano-shrink-order",
    when=(
        "A Volcano parent Queue shrinks below what its children hold before they are updated, "
        "and the children do not sync first: the queue webhook refuses the parent."
    ),
    fix="land or sync the children's cut first.",
)
def volcano_shrink_order(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Volcano's queue webhook checks a parent against its children on every update: a
    parent shrunk below what its (not yet updated) children hold is refused. Sync waves apply
    parents first, which is right when growing and wrong when shrinking."""
    old, new = by_kind(before, "Queue"), by_kind(after, "Queue")
    children: dict[str, list[str]] = {}
    for name, m in old.items():
        children.setdefault(str(spec_of(m).get("parent", "")), []).append(name)
    for name in sorted(set(old) & set(new)):
        kids = [k for k in children.get(name, []) if k in new]
        if not kids or all(_wave(new[k]) < _wave(new[name]) for k in kids):
            continue  # no children, or they are synced before the parent anyway
        short = _parent_short(old, new[name], kids)
        if short:
            yield Hazard(
                rule="volcano-shrink-order",
                subject=f"Queue {name}",
                message=f"shrinks {', '.join(short)} below what its children "
                f"({', '.join(sorted(kids))}) hold until they are updated; Volcano's webhook "
                "refuses the parent update when it is applied first (sync waves put parents "
                "first)",
                action="land the children's cut first (or sync the child queues before the "
                "parent), "
                "then the parent's",
                span=new[name].origin,
            )


def _wave(m: Manifest) -> int:
    annotations = m.obj.get("metadata", {}).get("annotations") or {}
    try:
        return int(annotations.get(SYNC_WAVE, 0))
    except ValueError:
        return 0


def _parent_short(old: Mapping[str, Manifest], parent: Manifest, kids: list[str]) -> list[str]:
    spec = spec_of(parent)
    short: list[str] = []
    capability = _amounts(spec, "capability")
    for resource, limit in capability.items():
        if any(
            _amounts(spec_of(old[k]), "capability").get(resource, Decimal(0)) > limit for k in kids
        ):
            short.append(f"capability {resource}")
    for field in ("deserved", "guarantee"):
        for resource, limit in _amounts(spec, field).items():
            total = sum(
                (_amounts(spec_of(old[k]), field).get(resource, Decimal(0)) for k in kids),
                start=Decimal(0),
            )
            if total > limit:
                short.append(f"{field} {resource}")
    return short
