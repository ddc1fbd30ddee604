"""Diff stage, day-2 hazards: updates the target systems refuse or handle badly, judged from
the two sides' manifests alone (so they stay right when the compilers change).

Sources: Kueue v0.19 CRD transition rules (ResourceFlavor, LocalQueue, Topology), Volcano's
queue webhook (child <= parent on every update), Kueue's resource-in-use finalizer, the
Prune=false Namespace hetgitops writes and the immutable PriorityClass value; see
docs/diff.md for each rule and what to do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml

from hetgitops.diagnostics import NOWHERE, Severity, Span, register_rules
from hetgitops.diff.drains import Drain
from hetgitops.model import quantities
from hetgitops.output.manifests import Manifest


@dataclass(frozen=True)
class Hazard:
    """A change that needs a human: `rule` is a stable id, `action` what to do about it."""

    rule: str
    subject: str
    message: str
    action: str
    span: Span = NOWHERE
    # What live work the hazard reaches, for `diff --kubeconfig` (diff/blast.py): pairs of
    # (what, name) such as ("flavor", NAME), ("nodes", "n1,n2"), ("taint", KEY),
    # ("namespace", NS), ("localqueue", "NS/NAME"), ("clusterqueue", NAME),
    # ("priorityclass", NAME), ("resource", "CQ|RESOURCE").
    scope: tuple[tuple[str, str], ...] = ()
    # The live blast radius, filled in by diff/blast.py when a cluster was read.
    live: str = ""
    # Policy YAML the reviewer can paste to take the safe path (kueue-flavor-renamed).
    snippet: str = ""


SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
# Every hazard id (public API, like rule ids): schemas/diff.schema.json and docs/diff.md list them.
HAZARD_RULES = (
    "kueue-flavor-immutable",
    "kueue-localqueue-immutable",
    "kueue-topology-immutable",
    "volcano-shrink-order",
    "kueue-flavor-removed",
    "namespace-removed",
    "mig-mode-flip",
    "priority-class-recreated",
    "kueue-flavor-renamed",
    "taint-evicts",
    "localqueue-removed",
    "clusterqueue-removed",
    "priority-class-removed",
    "kueue-resource-uncovered",
    "node-removed",
    "sharing-reduced",
    "sharing-staged",
    "kueue-topology-renamed",
    "kueue-topology-transition",
    "kueue-topology-retired",
    "sharing-retired",
    "kueue-flavor-transition",
    "kueue-flavor-retired",
    "node-moved",
    "mig-repartition",
    "jobs-unmatched",
)
# Hazards become GitHub annotations (warnings) in `diff --format github`, so their ids are rule
# ids too: registered with their documentation (docs/diff.md gives the same table).
register_rules(
    "diff",
    {
        "kueue-flavor-immutable": "A ResourceFlavor that has topologyName changes nodeLabels, "
        "tolerations or topologyName: Kueue v0.19's CRD (CEL transition rules) makes the API "
        "server refuse the update.\n"
        "Fix: recreate the flavor (Replace=true) while nothing is admitted on it, or rename it.",
        "kueue-localqueue-immutable": "LocalQueue.spec.clusterQueue changes; it is immutable.\n"
        "Fix: delete the LocalQueue and let the sync recreate it.",
        "kueue-topology-immutable": "Topology.spec.levels changes; it is immutable.\n"
        "Fix: delete the Topology and let the sync recreate it.",
        "volcano-shrink-order": "A Volcano parent Queue shrinks below what its children hold "
        "before they are updated, and the children do not sync first: the queue webhook "
        "refuses the parent.\n"
        "Fix: land or sync the children's cut first.",
        "kueue-flavor-removed": "A ResourceFlavor disappears: its deletion waits on Kueue's "
        "resource-in-use finalizer while a ClusterQueue names it.\n"
        "Fix: drain or finish the workloads admitted on it; no ClusterQueue may list it.",
        "namespace-removed": "A team namespace leaves the policy. hetgitops writes Namespaces "
        "with Argo CD's Prune=false,Delete=false and Flux's prune: disabled, so neither tool "
        "deletes it; its LocalQueue and ResourceQuota are pruned, so pending workloads there "
        "are stranded and running ones hold nodes outside every quota.\n"
        "Fix: move or finish its workloads and copy its data, then delete it by hand.",
        "mig-mode-flip": "A node's MIG mode turns on or off on some GPU: the GPUs reset.\n"
        "Fix: one node at a time: cordon, drain GPU pods, wait for "
        "nvidia.com/mig.config.state=success, uncordon.",
        "jobs-unmatched": "Job templates `hetgitops jobs` rendered from the base policy "
        "select node labels the change takes away (a pool renamed or split, a card label "
        "changed): no flavor of their ClusterQueue matches their nodeSelector any more (Kueue "
        "keeps only the flavor's own label keys and compares them: flavor ... doesn't match "
        "node affinity), so jobs submitted from them, and workloads pending from them, are "
        "never admitted; Volcano jobs from them match no node.\n"
        "Fix: re-render the templates (`hetgitops jobs`) from the change, resubmit pending jobs "
        "from the new ones, or keep the pool's name and card labels until the old templates "
        "are out of use.",
        "mig-repartition": "A node's MIG layout changes on some GPUs (MIG mode stays on). "
        "mig-manager evicts no workload pod: it pauses the GPU Operator operands on the node "
        "(device plugin, gpu-feature-discovery, DCGM, DCGM exporter: their pods are deleted), "
        "then mig-parted destroys every GPU and compute instance on each changed GPU and "
        "creates the new ones. An instance a process still uses cannot be destroyed (NVML: in "
        "use): the apply fails and the node is left at nvidia.com/mig.config.state=failed; an "
        "instance no process holds is destroyed under the pod it was allocated to.\n"
        "Fix: one node at a time: cordon, drain the pods on the changed GPUs' MIG slices (or "
        "let them finish), wait for nvidia.com/mig.config.state=success, uncordon.",
        "priority-class-recreated": "A tier's value or preemptionPolicy changes; both are "
        "immutable on a PriorityClass, so the sync deletes and recreates it (Argo CD "
        "Force=true,Replace=true; Flux force). Running pods keep the old priority; pods created "
        "while the class is gone are rejected and retried.\n"
        "Fix: sync when few of the tier's pods are being created; recreate long-running pods.",
        "kueue-flavor-renamed": "A pool's ResourceFlavor gets a new name (a taint, label, "
        "topology or taxonomy change of a topology-bound flavor, or the pool renamed: a new "
        "flavor selects the same nodes). Kueue keeps usage per flavor "
        "name: once no ClusterQueue names the old flavor, the workloads admitted on it are no "
        "longer counted, nothing is evicted, and the new flavor admits its full quota on top of "
        "the pods still running on the same nodes (double booking).\n"
        "Fix: add the spec.kueue.retiringFlavor entry diff prints to the pool in the same "
        "change (the old flavor stays, admits nothing new and keeps its work counted; the new "
        "flavor's quota is cut by what it holds); or let the pool's workloads finish or stop "
        "them (ClusterQueue stopPolicy: HoldAndDrain) before the sync, or sync when it is idle.",
        "taint-evicts": "A NoExecute taint reaches a pool's nodes (nfd-master applies it): "
        "the kubelet evicts every pod there that does not tolerate it.\n"
        "Fix: NoSchedule first, drain, then NoExecute; upgrade the node agents first.",
        "localqueue-removed": "A LocalQueue leaves the policy while its namespace stays: "
        "workloads that name it stay pending (Kueue: LocalQueue doesn't exist), and pods that "
        "controllers recreate with its queue-name label are never admitted.\n"
        "Fix: point the namespace's jobs and Deployments at the new queue first.",
        "clusterqueue-removed": "A ClusterQueue leaves the policy: Kueue's resource-in-use "
        "finalizer keeps it Terminating while it has admitted workloads, and its quota stays "
        "counted in the cohort until they finish.\n"
        "Fix: drain it first (stopPolicy: HoldAndDrain), or let its workloads finish.",
        "priority-class-removed": "A PriorityClass leaves the policy (a tier renamed or "
        "removed): pods that controllers (Deployments, Jobs, JobSets) recreate with its name "
        "are refused by the Priority admission plugin.\n"
        "Fix: move the workloads to the new tier's class before the sync.",
        "kueue-resource-uncovered": "A ClusterQueue stops covering a resource it covered "
        "(a MIG strategy flip, a profile or card type removed): workloads requesting it are "
        "never admitted (resource unavailable in ClusterQueue).\n"
        "Fix: move such workloads to the new resource names before the sync.",
        "node-removed": "Nodes leave a pool (the NodeFeatureRule no longer matches them): "
        "nfd-master removes the pool's labels, so Kueue no longer counts them while the pods "
        "running there keep running, outside the pool's accounting.\n"
        "Fix: cordon and drain the nodes before the change.",
        "sharing-reduced": "A pool's time-slicing or MPS replicas per GPU go down: the device "
        "plugin advertises fewer replicas while the pods already sharing each GPU keep running, "
        "so the nodes are over-allocated until they finish and new pods wait.\n"
        "Fix: reduce in two steps: first `retiringReplicas` (the old count) next to the new "
        "`replicas` and lowered quotas, then remove it once `diff --kubeconfig` says 'safe now'; "
        "or drain the nodes before the sync.",
        "kueue-topology-renamed": "A Topology the flavors name is replaced (levels changed): "
        "every topology-bound flavor is renamed and, once the old ones are pruned, Kueue "
        "forgets the work admitted on them and admits the new flavors' quota on the same nodes.\n"
        "Fix: step 1, keep the old Topology (Fleet spec.topology.retiring, the snippet) and "
        "each pool's old flavor (spec.kueue.retiringFlavor); step 2, remove them once nothing "
        "is admitted on the retiring flavors.",
        "kueue-topology-transition": "Step 1 of a Topology change: the old Topology stays for "
        "the retiring flavors that name it, so their ClusterQueues stay active.\n"
        "Fix: none needed; remove it with the last retiring flavor, once drained.",
        "kueue-topology-retired": "Step 2 of a Topology change: the retiring Topology goes with "
        "its retiring flavors; work still admitted on them stops being counted.\n"
        "Fix: merge only when every kueue-flavor-retired hazard says 'safe to remove now'.",
        "sharing-staged": "Step 1 of a staged sharing reduction (`retiringReplicas`): the device "
        "plugin keeps the old replicas per GPU while Kueue's quotas fit the new count; nothing "
        "is evicted and new work waits until what runs fits.\n"
        "Fix: none needed; remove `retiringReplicas` in its own change once `diff --kubeconfig` "
        "on that change says 'safe now'.",
        "sharing-retired": "Step 2 of a staged sharing reduction (`retiringReplicas` removed): the "
        "device plugin drops to the new replicas per GPU; replicas still in use above what the "
        "nodes then hold overbook them until they finish.\n"
        "Fix: merge only when `diff --kubeconfig` says 'safe now'; until then keep "
        "`retiringReplicas`.",
        "node-moved": "Nodes move from one pool to another (a pool split or a node entry moved): "
        "nfd-master relabels them, so the new pool's flavor admits its quota there while the "
        "pods admitted on the old pool's flavor keep running on them (double booking until they "
        "finish), and queues that no longer list the old flavor stop counting that work.\n"
        "Fix: cordon and drain the moving nodes (or let their work finish) before the sync.",
        "kueue-flavor-transition": "A pool's renamed flavor starts a transition "
        "(spec.kueue.retiringFlavor): the old ResourceFlavor stays in the ClusterQueues with "
        "its quota and a Kueue-side nodeTaint, so Kueue admits nothing new on it and keeps "
        "the work admitted there counted; the new flavor gets the team quotas less what the "
        "old one holds, so new work on the pool pends instead of double-booking its nodes.\n"
        "Fix: nothing to fix; once `hetgitops diff --kubeconfig` shows nothing admitted on the "
        "old flavor, remove the entry in a change of its own (or lower `holds` as it drains).",
        "kueue-flavor-retired": "A retiring flavor (spec.kueue.retiringFlavor) is removed: the "
        "new flavor gets its full quota back, and whatever is still admitted on the old one "
        "stops being counted, so its nodes are double-booked by that much.\n"
        "Fix: merge the removal only when `hetgitops diff --kubeconfig` shows 0 workloads "
        "admitted on the old flavor; until then keep the entry (lower `holds` to let work in).",
    },
    dict.fromkeys(HAZARD_RULES, Severity.WARNING),
)


class _Indexed(list[Manifest]):
    """One side's manifests and their index by kind: the hazards ask for a kind ~30 times per
    side, and a walk of ~8,300 objects each time was a third of diff's day-2 stage."""

    def __init__(self, manifests: Sequence[Manifest]) -> None:
        super().__init__(manifests)
        self.kinds: dict[str, list[Manifest]] = {}
        for m in self:
            self.kinds.setdefault(m.kind, []).append(m)


def _of_kind(manifests: Sequence[Manifest], kind: str) -> Sequence[Manifest]:
    if isinstance(manifests, _Indexed):
        return manifests.kinds.get(kind, [])
    return [m for m in manifests if m.kind == kind]


def _by_kind(manifests: Sequence[Manifest], kind: str) -> dict[str, Manifest]:
    return {
        f"{m.namespace}/{m.name}" if m.namespace else m.name: m for m in _of_kind(manifests, kind)
    }


def _spec(m: Manifest) -> Mapping[str, Any]:
    spec = m.obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def flavor_immutable(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Kueue (v0.19 CRD, CEL on UPDATE): once a ResourceFlavor has `topologyName`, its
    `nodeLabels`, `tolerations` and `topologyName` cannot change; Argo CD's apply fails."""
    old, new = _by_kind(before, "ResourceFlavor"), _by_kind(after, "ResourceFlavor")
    for name in sorted(set(old) & set(new)):
        was, now = _spec(old[name]), _spec(new[name])
        if "topologyName" not in was:
            continue
        fields = [
            f for f in ("nodeLabels", "tolerations", "topologyName") if was.get(f) != now.get(f)
        ]
        if fields:
            yield Hazard(
                "kueue-flavor-immutable",
                f"ResourceFlavor {name}",
                f"changes {', '.join(fields)}, which Kueue makes immutable once topologyName "
                "is set: the API server rejects the update",
                "delete and recreate the flavor (Argo CD sync option Replace=true, or delete it "
                "by hand and sync) while no workload is admitted on it; or give the pool a new "
                "name so a new flavor is created",
                new[name].origin,
            )


def immutable_fields(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """LocalQueue.spec.clusterQueue and Topology.spec.levels are immutable (Kueue CRD)."""
    for kind, field in (("LocalQueue", "clusterQueue"), ("Topology", "levels")):
        old, new = _by_kind(before, kind), _by_kind(after, kind)
        for name in sorted(set(old) & set(new)):
            if _spec(old[name]).get(field) != _spec(new[name]).get(field):
                yield Hazard(
                    f"kueue-{kind.lower()}-immutable",
                    f"{kind} {name}",
                    f"changes spec.{field}, which Kueue's CRD makes immutable",
                    f"delete the {kind} and let the sync recreate it (Replace=true)",
                    new[name].origin,
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


def volcano_shrink_order(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Volcano's queue webhook checks a parent against its children on every update: a
    parent shrunk below what its (not yet updated) children hold is refused. Sync waves apply
    parents first, which is right when growing and wrong when shrinking."""
    old, new = _by_kind(before, "Queue"), _by_kind(after, "Queue")
    children: dict[str, list[str]] = {}
    for name, m in old.items():
        children.setdefault(str(_spec(m).get("parent", "")), []).append(name)
    for name in sorted(set(old) & set(new)):
        kids = [k for k in children.get(name, []) if k in new]
        if not kids or all(_wave(new[k]) < _wave(new[name]) for k in kids):
            continue  # no children, or they are synced before the parent anyway
        short = _parent_short(old, new[name], kids)
        if short:
            yield Hazard(
                "volcano-shrink-order",
                f"Queue {name}",
                f"shrinks {', '.join(short)} below what its children "
                f"({', '.join(sorted(kids))}) hold until they are updated; Volcano's webhook "
                "refuses the parent update when it is applied first (sync waves put parents "
                "first)",
                "land the children's cut first (or sync the child queues before the parent), "
                "then the parent's",
                new[name].origin,
            )


def _wave(m: Manifest) -> int:
    annotations = m.obj.get("metadata", {}).get("annotations") or {}
    try:
        return int(annotations.get(SYNC_WAVE, 0))
    except ValueError:
        return 0


def _parent_short(old: Mapping[str, Manifest], parent: Manifest, kids: list[str]) -> list[str]:
    spec = _spec(parent)
    short: list[str] = []
    capability = _amounts(spec, "capability")
    for resource, limit in capability.items():
        if any(
            _amounts(_spec(old[k]), "capability").get(resource, Decimal(0)) > limit for k in kids
        ):
            short.append(f"capability {resource}")
    for field in ("deserved", "guarantee"):
        for resource, limit in _amounts(spec, field).items():
            total = sum(
                (_amounts(_spec(old[k]), field).get(resource, Decimal(0)) for k in kids),
                start=Decimal(0),
            )
            if total > limit:
                short.append(f"{field} {resource}")
    return short


def flavor_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A removed ResourceFlavor: Kueue's resource-in-use finalizer holds the deletion while a
    ClusterQueue names it, and a ClusterQueue naming a missing flavor goes inactive."""
    old, new = _by_kind(before, "ResourceFlavor"), _by_kind(after, "ResourceFlavor")
    users_before = _flavor_users(before)
    users_after = _flavor_users(after)
    for name in sorted(set(old) - set(new) - _retiring(before)):
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
            "kueue-flavor-removed",
            f"ResourceFlavor {name}",
            message,
            action,
            old[name].origin,
            scope=(("flavor", name),),
        )


def _flavor_users(manifests: Sequence[Manifest]) -> dict[str, list[str]]:
    users: dict[str, list[str]] = {}
    for m in _of_kind(manifests, "ClusterQueue"):
        for group in _spec(m).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                users.setdefault(str(flavor.get("name")), []).append(m.name)
    return users


def namespace_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A Namespace that leaves the tree: what each GitOps tool does with it depends on the
    annotations its last render carried (compilers/argocd.py NEVER_PRUNE). Either way the
    LocalQueues and ResourceQuota inside it are pruned, so what still runs there is outside
    every queue and quota, and what waits there waits on a queue that is gone."""
    old, new = _by_kind(before, "Namespace"), _by_kind(after, "Namespace")
    gone_queues = set(_by_kind(before, "LocalQueue")) - set(_by_kind(after, "LocalQueue"))
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
            "namespace-removed",
            f"Namespace {name}",
            f"leaves the policy: {kept}{stranded}",
            "first move or finish its workloads (or point them at another team's LocalQueue) and "
            f"copy its data, then `kubectl delete namespace {name}`",
            old[name].origin,
            scope=(("namespace", name),),
        )


def mig_mode_flips(drains: Sequence[Drain]) -> Iterator[Hazard]:
    """One hazard per pool and config change: its nodes flip together."""
    groups: dict[tuple[str, str, str], list[Drain]] = {}
    for drain in drains:
        if drain.mode_flip:
            groups.setdefault((drain.pool, drain.before, drain.after), []).append(drain)
    for (pool, _, _), members in groups.items():
        nodes = ", ".join(d.node for d in members)
        yield Hazard(
            "mig-mode-flip",
            f"Pool {pool}" if pool else f"Node {members[0].node}",
            f"flips MIG mode on node(s) {nodes}: mig-manager stops each node's GPU stack "
            "(device plugin, DCGM, GPU clients) while it reconfigures",
            "one node at a time: cordon, drain its GPU pods, wait for "
            "nvidia.com/mig.config.state=success, uncordon",
            members[0].span,
            scope=(("nodes", ",".join(d.node for d in members)),),
        )


def mig_repartitions(drains: Sequence[Drain]) -> Iterator[Hazard]:
    """GPUs re-partitioned without a MIG-mode flip, one hazard per pool and config change.
    What the GPU Operator's mig-manager (NVIDIA/mig-parted bd7160f4, pkg/mig/reconfigure/
    reconfigure.go) does: it sets the operands' nvidia.com/gpu.deploy.* labels to
    paused-for-mig-change and waits for their pods to go (Run, lines 164-172;
    shutdownKubernetesGPUClients, 371-386; waitForPodsToBeDeleted, 389-427), runs
    `nvidia-mig-parted apply` (applyMigConfig, 471-481), which for each GPU whose layout
    differs clears every compute and GPU instance before creating the new ones
    (cmd/nvidia-mig-parted/apply/config.go:92-100; pkg/mig/config/config.go:125-148 and
    ClearMigConfig, 220-249), and restores the labels on exit, success or not (setState,
    538-573). Nothing in it evicts, drains or cordons a workload pod; NVML refuses to destroy
    a GPU instance a process uses (nvmlGpuInstanceDestroy: NVML_ERROR_IN_USE), so the apply
    fails then, with the node's nvidia.com/mig.config.state=failed."""
    groups: dict[tuple[str, str, str], list[Drain]] = {}
    for drain in drains:
        if not drain.mode_flip:
            groups.setdefault((drain.pool, drain.before, drain.after), []).append(drain)
    for (pool, before, after), members in groups.items():
        nodes = ", ".join(d.node for d in members)
        gpus = sorted({g for d in members for g in d.gpus})
        which = f"GPU(s) {', '.join(map(str, gpus))}" if gpus else "the GPUs"
        yield Hazard(
            "mig-repartition",
            f"Pool {pool}" if pool else f"Node {members[0].node}",
            f"re-partitions {which} on node(s) {nodes} ({before} -> {after}): mig-manager "
            "evicts no workload pod; it deletes the node's GPU Operator operand pods (device "
            "plugin, gpu-feature-discovery, DCGM, DCGM exporter) while it reconfigures, and "
            "mig-parted destroys every MIG instance on those GPUs: one a running pod still uses "
            "cannot be destroyed, so the apply fails (nvidia.com/mig.config.state=failed, the "
            "layout half applied); one no process holds is destroyed under its pod",
            "one node at a time: cordon, drain the pods on those GPUs' MIG slices (or let them "
            "finish), wait for nvidia.com/mig.config.state=success, uncordon",
            members[0].span,
            scope=(("nodes", ",".join(d.node for d in members)),),
        )


def _tier_fields(m: Manifest) -> dict[str, Any]:
    return {f: m.obj.get(f) for f in ("value", "preemptionPolicy")}


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
    old, new = _by_kind(before, "PriorityClass"), _by_kind(after, "PriorityClass")
    for name in sorted(set(old) & set(new)):
        was, now = _tier_fields(old[name]), _tier_fields(new[name])
        changed = [f"{f} {was[f]} -> {now[f]}" for f in was if was[f] != now[f]]
        if not changed:
            continue
        yield Hazard(
            "priority-class-recreated",
            f"PriorityClass {name}",
            f"changes {', '.join(changed)}, which the API server never updates: the sync "
            "deletes and recreates the class (Argo CD Force=true,Replace=true; Flux "
            "kustomize.toolkit.fluxcd.io/force). Running pods keep the old priority until "
            "they are recreated, while Kueue re-ranks the tier's workloads at once; pods "
            "created while the class is gone are rejected (their controllers retry)",
            "sync when few pods of the tier are being created; recreate long-running pods "
            "(serving Deployments) to take the new priority; with plain kubectl run "
            f"`kubectl replace --force -f core/priorityclass-{name}.yaml` (apply cannot change it)",
            new[name].origin,
        )


POOL_LABEL_SUFFIX = "/pool"


def _flavor_pool(m: Manifest) -> str:
    """The pool a ResourceFlavor selects: its `<domain>/pool` node label (every hetgitops
    flavor has one), else its name."""
    for key, value in (_spec(m).get("nodeLabels") or {}).items():
        if str(key).endswith(POOL_LABEL_SUFFIX):
            return str(value)
    return m.name


def _nominal(manifests: Sequence[Manifest], flavor: str) -> dict[str, Decimal]:
    """Σ nominalQuota per resource the ClusterQueues give `flavor`: what Kueue may admit on it."""
    total: dict[str, Decimal] = {}
    for m in _of_kind(manifests, "ClusterQueue"):
        for group in _spec(m).get("resourceGroups") or []:
            for entry in group.get("flavors") or []:
                if entry.get("name") != flavor:
                    continue
                for resource in entry.get("resources") or []:
                    try:
                        amount = quantities.value_of(resource.get("nominalQuota", 0))
                    except quantities.QuantityError:
                        continue
                    name = str(resource.get("name"))
                    total[name] = total.get(name, Decimal(0)) + amount
    return total


def _accelerators(amounts: Mapping[str, Decimal]) -> str:
    shown = [
        f"{quantities.canonical(v)} {r}"
        for r, v in sorted(amounts.items())
        if "/" in r and v > 0  # vendor resources: the cards and slices, not cpu / memory
    ]
    return ", ".join(shown)


RETIRING_TAINT_SUFFIX = "/retiring-flavor"  # compilers/kueue_flavors.py retiring_taint
FROZEN_FLAVOR_FIELDS = ("nodeLabels", "tolerations", "topologyName")


def _retiring(manifests: Sequence[Manifest]) -> set[str]:
    """ResourceFlavors rendered as retiring: they carry the Kueue-side retiring taint."""
    return {
        m.name
        for m in _of_kind(manifests, "ResourceFlavor")
        if any(
            str(t.get("key", "")).endswith(RETIRING_TAINT_SUFFIX)
            for t in _spec(m).get("nodeTaints") or []
        )
    }


def retiring_snippet(flavor: Manifest) -> str:
    """The `spec.kueue.retiringFlavor` entry for `flavor`, its frozen fields exactly as the
    base render wrote them (as live, once that render was synced)."""
    spec = _spec(flavor)
    entry: dict[str, Any] = {"name": flavor.name}
    entry.update({f: spec[f] for f in FROZEN_FLAVOR_FIELDS if f in spec})
    text = yaml.safe_dump({"kueue": {"retiringFlavor": entry}}, sort_keys=False)
    return str(text)


def _quota_text(amounts: Mapping[str, Decimal], *others: Mapping[str, Decimal]) -> str:
    """Σ nominal of the vendor resources that `amounts` or `others` give some quota, zeros
    included (a held-back flavor shows 0)."""
    keys = {r for m in (amounts, *others) for r, v in m.items() if "/" in r and v > 0}
    shown = [f"{quantities.canonical(amounts.get(r, Decimal(0)))} {r}" for r in sorted(keys)]
    return ", ".join(shown) or "no accelerator quota"


def flavor_renamed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A pool whose flavor is replaced by one of another name. Kueue v0.19.2 counts a
    workload's usage under the (flavor, resource) pairs of its admission
    (pkg/cache/scheduler/clusterqueue.go:596-606, FlavorResourceUsage) and checks a request
    only against the quota of the flavor it tries: a workload admitted on the old flavor uses
    none of the new flavor's quota, and nothing evicts it. The new flavor starts empty, so
    Kueue admits its full quota on the same nodes. The way through is a transition
    (`spec.kueue.retiringFlavor`, whose snippet the hazard carries); a retiring flavor removed
    is `kueue-flavor-retired`'s case."""
    old, new = _by_kind(before, "ResourceFlavor"), _by_kind(after, "ResourceFlavor")
    retiring_before, retiring_after = _retiring(before), _retiring(after)
    # Found once, not once per flavor (each pass walks every manifest of the render).
    new_by_pool = {_flavor_pool(m): name for name, m in new.items() if name not in retiring_after}
    old_nodes, new_nodes = pool_nodes(before), pool_nodes(after)
    topologies_after = set(_by_kind(after, "Topology"))
    for name in sorted(set(old) - set(new) - retiring_before):
        pool = _flavor_pool(old[name])
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
                    and nodes & new_nodes.get(_flavor_pool(m), set())
                ),
                None,
            )
        if successor is None:
            continue
        held = _accelerators(_nominal(before, name))
        amount = f" (up to {held})" if held else ""
        same_topology = _spec(old[name]).get("topologyName") == _spec(new[successor]).get(
            "topologyName"
        )
        drain = (
            f"let pool {pool}'s workloads finish or stop them (set the ClusterQueues' "
            f"stopPolicy: HoldAndDrain and wait for their admitted count on {name} to reach "
            "0), or sync when the pool is idle"
        )
        old_topology = _spec(old[name]).get("topologyName")
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
            "kueue-flavor-renamed",
            f"ResourceFlavor {name}",
            f"is replaced by {successor} for pool {pool}: Kueue stops counting the workloads "
            f"admitted on {name} once no ClusterQueue names it, evicts none of them, and admits "
            f"the full quota of {successor} on the same nodes, so the pool is double-booked"
            f"{amount} until they finish; pods the scheduler cannot place then stay Pending",
            action,
            new[successor].origin,
            scope=(("flavor", name),),
            snippet=retiring_snippet(old[name]),
        )


def flavor_transition(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """The change that starts a transition: the old flavor is kept and newly tainted. What
    stays counted: Kueue adds usage per (flavor, resource) whatever the quota
    (pkg/cache/scheduler/resource_node.go:144-152 addUsage), and a flavor's nodeTaints only
    decide new assignments (pkg/scheduler/flavorassigner/flavorassigner.go:1239-1244); a
    ResourceFlavor update evicts nothing, it only requeues inadmissible workloads
    (pkg/controller/core/resourceflavor_controller.go:167-195)."""
    old, new = _by_kind(before, "ResourceFlavor"), _by_kind(after, "ResourceFlavor")
    retiring_after = _retiring(after)
    new_by_pool = {_flavor_pool(m): name for name, m in new.items() if name not in retiring_after}
    for name in sorted(retiring_after - _retiring(before)):
        pool = _flavor_pool(new[name])
        successor = new_by_pool.get(pool, "?")
        queues = ", ".join(sorted(_flavor_users(after).get(name, []))) or "none"
        known = "" if name in old else f" ({name} is not in the base render: check it is live)"
        full = _quota_text(_nominal(after, name))
        kept = _quota_text(_nominal(after, successor), _nominal(after, name))
        yield Hazard(
            "kueue-flavor-transition",
            f"ResourceFlavor {name}",
            f"retires for pool {pool}{known}: it stays in ClusterQueue(s) {queues} with its "
            f"quota ({full}) and a Kueue-side nodeTaint, so Kueue admits nothing new on it "
            f"while every workload admitted there stays counted; {successor} gets {kept} "
            f"until the entry goes, so new work on the pool pends instead of double-booking",
            f"when `hetgitops diff --kubeconfig` shows nothing admitted on {name}, remove "
            f"Pool {pool}'s spec.kueue.retiringFlavor in a change of its own (lower its "
            "`holds` to the usage diff shows to let new work in sooner)",
            new[name].origin,
            scope=(("flavor", name),),
        )


def flavor_retired(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """The change that ends a transition: safe only at 0 admitted usage on the old flavor."""
    old, new = _by_kind(before, "ResourceFlavor"), _by_kind(after, "ResourceFlavor")
    for name in sorted(_retiring(before) - set(new)):
        pool = _flavor_pool(old[name])
        successors = [n for n, m in new.items() if _flavor_pool(m) == pool]
        successor = successors[0] if successors else "?"
        was_amounts, now_amounts = _nominal(before, successor), _nominal(after, successor)
        was = _quota_text(was_amounts, now_amounts)
        now = _quota_text(now_amounts, was_amounts)
        yield Hazard(
            "kueue-flavor-retired",
            f"ResourceFlavor {name}",
            f"ends its transition for pool {pool}: {successor} goes from {was} to {now}, and "
            f"whatever is still admitted on {name} stops being counted, so the pool is "
            "double-booked by that much until it finishes",
            f"merge only when `hetgitops diff --kubeconfig` shows nothing admitted on {name}; "
            "until then keep the entry",
            old[name].origin,
            scope=(("flavor", name),),
        )


def _topology_users(manifests: Sequence[Manifest]) -> dict[str, tuple[set[str], set[str]]]:
    """Topology -> (current flavors, retiring flavors) that name it."""
    retiring = _retiring(manifests)
    found: dict[str, tuple[set[str], set[str]]] = {}
    for name, m in _by_kind(manifests, "ResourceFlavor").items():
        topology = _spec(m).get("topologyName")
        if topology:
            current, kept = found.setdefault(str(topology), (set(), set()))
            (kept if name in retiring else current).add(name)
    return found


def topology_snippet(topology: Manifest) -> str:
    """The Fleet's `spec.topology.retiring` entry for `topology`, as the base render wrote it."""
    labels = [str(level.get("nodeLabel")) for level in _spec(topology).get("levels") or []]
    entry = {"name": topology.name, "nodeLabels": labels}
    return str(yaml.safe_dump({"topology": {"retiring": entry}}, sort_keys=False))


def _listed_names(names: set[str]) -> str:
    shown = sorted(names)
    return ", ".join(shown[:4]) + (f" and {len(shown) - 4} more" if len(shown) > 4 else "")


def topology_steps(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A Topology change, by step. Kueue holds a Topology with its resource-in-use finalizer
    while a TAS flavor names it (v0.19.2 pkg/controller/tas/topology_controller.go:108-124),
    a flavor while a ClusterQueue lists it (pkg/controller/core/resourceflavor_controller.go:
    106-120); once both are gone its TAS usage is dropped (pkg/cache/scheduler/cache.go:
    315-323) and a ClusterQueue listing a TAS flavor whose Topology is missing is inactive
    (clusterqueue.go:351-357). So the old Topology must stay as long as retiring flavors
    name it (the Fleet's `spec.topology.retiring`)."""
    old, new = _by_kind(before, "Topology"), _by_kind(after, "Topology")
    users_before, users_after = _topology_users(before), _topology_users(after)
    for name in sorted(old):
        current_before, kept_before = users_before.get(name, (set(), set()))
        current_after, kept_after = users_after.get(name, (set(), set()))
        if name not in new and current_before:
            yield Hazard(
                "kueue-topology-renamed",
                f"Topology {name}",
                f"is replaced ({', '.join(sorted(set(new) - set(old))) or 'by none'}) while "
                f"{len(current_before)} flavor(s) name it ({_listed_names(current_before)}): "
                "those flavors are renamed, and once they and the Topology are pruned Kueue "
                "forgets the work admitted on them and admits the new flavors' full quota on "
                "the same nodes",
                "add the Fleet's spec.topology.retiring entry below and each renamed pool's "
                "spec.kueue.retiringFlavor entry (kueue-flavor-renamed) in the same change "
                "(step 1: the old Topology and flavors stay, admit nothing new, keep their work "
                "counted); remove them together in a later change once `hetgitops diff "
                "--kubeconfig` shows nothing admitted on the retiring flavors (step 2)",
                old[name].origin,
                snippet=topology_snippet(old[name]),
            )
        elif name in new and current_before and not current_after and kept_after:
            yield Hazard(
                "kueue-topology-transition",
                f"Topology {name}",
                f"is kept as the Fleet's retiring Topology for {len(kept_after)} retiring "
                f"flavor(s) ({_listed_names(kept_after)}): step 1 of a Topology change; their "
                "ClusterQueues stay active and their running work stays counted",
                "remove spec.topology.retiring with the last retiring flavor naming it, once "
                "`hetgitops diff --kubeconfig` shows nothing admitted on those flavors",
                new[name].origin,
            )
        elif name not in new and kept_before and not current_before:
            yield Hazard(
                "kueue-topology-retired",
                f"Topology {name}",
                f"ends the Topology change (step 2): it goes with the retiring flavor(s) "
                f"{_listed_names(kept_before - set(_by_kind(after, 'ResourceFlavor')))} that "
                "named it; whatever is still admitted on them stops being counted",
                "merge only when `hetgitops diff --kubeconfig` says 'safe to remove now' on "
                "every kueue-flavor-retired hazard of this change",
                old[name].origin,
            )


def _nfd_taints(manifests: Sequence[Manifest]) -> dict[str, tuple[set[str], list[str], Manifest]]:
    """Per NodeFeatureRule rule: its NoExecute taints (`key=value`) and the nodes it matches."""
    return {
        name: (
            {
                f"{t.get('key')}={t.get('value', '')}"
                for t in rule_.get("taints") or []
                if t.get("effect") == "NoExecute"
            },
            _rule_nodes(rule_),
            m,
        )
        for name, (rule_, m) in _nfd_rules(manifests).items()
    }


def taint_evicts(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """nfd-master (enableTaints) puts a NodeFeatureRule's taints on the nodes it matches; a new
    NoExecute taint makes the kubelet's taint manager evict every pod that does not tolerate it
    (Kubernetes pkg/controller/tainteviction). Kueue's flavor tolerations reach only pods it
    admits from then on."""
    old, new = _nfd_taints(before), _nfd_taints(after)
    for name in sorted(new):
        taints, nodes, manifest = new[name]
        added = sorted(taints - (old[name][0] if name in old else set()))
        if not added or not nodes:
            continue
        yield Hazard(
            "taint-evicts",
            f"NodeFeatureRule rule {name}",
            f"adds NoExecute taint {', '.join(added)} to {len(nodes)} node(s) "
            f"({', '.join(nodes[:6])}{', ...' if len(nodes) > 6 else ''}): every pod there that "
            "does not tolerate it is evicted (running jobs and gangs fail, serving replicas are "
            "recreated elsewhere or stay Pending)",
            "add the taint as NoSchedule first, drain or finish the work on those nodes, then "
            "switch it to NoExecute; upgrade the GPU Operator and NFD releases with the rendered "
            "agent values before the taint lands",
            manifest.origin,
            scope=(("nodes", ",".join(nodes)), *(("taint", t.split("=", 1)[0]) for t in added)),
        )


def localqueue_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A LocalQueue whose namespace stays (a namespace removed is namespace-removed's case)."""
    old, new = _by_kind(before, "LocalQueue"), _by_kind(after, "LocalQueue")
    namespaces = {m.name for m in _of_kind(after, "Namespace")}
    kept = {f"{m.namespace}/{m.name}" for m in _of_kind(after, "LocalQueue")}
    for key in sorted(set(old) - set(new)):
        namespace, name = key.split("/", 1)
        if namespace not in namespaces:
            continue
        others = sorted(k.split("/", 1)[1] for k in kept if k.startswith(f"{namespace}/"))
        instead = f" (it now has {', '.join(others)})" if others else " (it has no queue now)"
        yield Hazard(
            "localqueue-removed",
            f"LocalQueue {key}",
            f"leaves the policy while namespace {namespace} stays{instead}: workloads that name "
            f"queue {name} stay pending forever (Kueue: LocalQueue {name} doesn't exist), and "
            "pods that Deployments or Jobs recreate with that queue-name label are never admitted",
            f"change the kueue.x-k8s.io/queue-name of namespace {namespace}'s jobs and "
            "Deployments to the new queue before the sync",
            old[key].origin,
            scope=(("localqueue", key),),
        )


def clusterqueue_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Kueue's resource-in-use finalizer keeps a deleted ClusterQueue while it has admitted
    workloads; until then its quota still counts in its cohort."""
    old, new = _by_kind(before, "ClusterQueue"), _by_kind(after, "ClusterQueue")
    for name in sorted(set(old) - set(new)):
        cohort = _spec(old[name]).get("cohortName")
        counted = f", and its quota still counts in cohort {cohort}" if cohort else ""
        yield Hazard(
            "clusterqueue-removed",
            f"ClusterQueue {name}",
            "leaves the policy: Kueue keeps it Terminating (resource-in-use finalizer) while it "
            f"has admitted workloads{counted}; its pending workloads are never admitted",
            f"drain it first: `kubectl patch clusterqueue {name} --type merge -p "
            '\'{"spec":{"stopPolicy":"HoldAndDrain"}}\'` and wait for its admitted '
            "workloads to finish, or move its teams' jobs to their new queue",
            old[name].origin,
            scope=(("clusterqueue", name),),
        )


def priority_class_removed(
    before: Sequence[Manifest], after: Sequence[Manifest]
) -> Iterator[Hazard]:
    """Pods name their PriorityClass; the Priority admission plugin refuses a pod whose class
    does not exist (plugin/pkg/admission/priority/admission.go:363), so controllers that
    recreate pods of a removed tier fail until their template changes."""
    old, new = _by_kind(before, "PriorityClass"), _by_kind(after, "PriorityClass")
    workload_classes = set(_by_kind(before, "WorkloadPriorityClass")) - set(
        _by_kind(after, "WorkloadPriorityClass")
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
            "priority-class-removed",
            f"PriorityClass {name}",
            "leaves the policy: running pods keep their priority, but every pod a Deployment, "
            f"Job or JobSet creates with priorityClassName {name} from then on is refused "
            f'("no PriorityClass with name {name} was found"), so replicas and retries fail'
            f"{kueue}",
            f"change priorityClassName {name} (and kueue.x-k8s.io/priority-class) in the "
            "templates of running Deployments and jobs to the new tier before the sync",
            old[name].origin,
            scope=(("priorityclass", name),),
        )


def _covered(m: Manifest) -> set[str]:
    return {
        str(resource)
        for group in _spec(m).get("resourceGroups") or []
        for resource in group.get("coveredResources") or []
    }


def resource_uncovered(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Kueue admits a workload only if its ClusterQueue covers every resource it requests
    (flavorassigner: "resource R unavailable in ClusterQueue")."""
    old, new = _by_kind(before, "ClusterQueue"), _by_kind(after, "ClusterQueue")
    for name in sorted(set(old) & set(new)):
        gone = sorted(_covered(old[name]) - _covered(new[name]))
        if not gone:
            continue
        yield Hazard(
            "kueue-resource-uncovered",
            f"ClusterQueue {name}",
            f"stops covering {', '.join(gone)}: workloads that request it are never admitted "
            f"(Kueue: resource {gone[0]} unavailable in ClusterQueue); admitted ones keep "
            "running uncounted, and their pods, once gone, cannot come back",
            "move the team's jobs and Deployments to the resources the queue covers now "
            f"({', '.join(sorted(_covered(new[name]))) or 'none'}) before the sync",
            new[name].origin,
            scope=tuple(("resource", f"{name}|{r}") for r in gone),
        )


DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"


def _nfd_rules(manifests: Sequence[Manifest]) -> dict[str, tuple[dict[str, Any], Manifest]]:
    return {
        str(rule_.get("name")): (rule_, m)
        for m in _of_kind(manifests, "NodeFeatureRule")
        for rule_ in _spec(m).get("rules") or []
    }


def _rule_nodes(rule_: Mapping[str, Any]) -> list[str]:
    nodes: list[str] = []
    for feature in rule_.get("matchFeatures") or []:
        expression = (feature.get("matchExpressions") or {}).get("nodename") or {}
        nodes += [str(v) for v in expression.get("value") or []]
    return nodes


def _listed(nodes: Sequence[str]) -> str:
    return ", ".join(nodes[:6]) + (", ..." if len(nodes) > 6 else "")


def _rule_pool(rule_: Mapping[str, Any]) -> str:
    """The pool a NodeFeatureRule rule labels its nodes with (`<domain>/pool`), else its name."""
    for key, value in (rule_.get("labels") or {}).items():
        if str(key).endswith(POOL_LABEL_SUFFIX):
            return str(value)
    return str(rule_.get("name"))


def pool_nodes(manifests: Sequence[Manifest]) -> dict[str, set[str]]:
    """The nodes each pool's NodeFeatureRule rules match (what its flavor selects)."""
    found: dict[str, set[str]] = {}
    for rule_, _ in _nfd_rules(manifests).values():
        found.setdefault(_rule_pool(rule_), set()).update(_rule_nodes(rule_))
    return found


def node_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Nodes a pool's NodeFeatureRule matched before and no rule matches after: nfd-master
    drops the labels it gave them, so the flavor (its nodeLabels) no longer selects them."""
    kept = {node for rule_, _ in _nfd_rules(after).values() for node in _rule_nodes(rule_)}
    for name, (rule_, manifest) in sorted(_nfd_rules(before).items()):
        gone = [node for node in _rule_nodes(rule_) if node not in kept]
        if not gone:
            continue
        yield Hazard(
            "node-removed",
            f"NodeFeatureRule rule {name}",
            f"no longer matches {len(gone)} node(s) ({_listed(gone)}): nfd-master removes the "
            "pool's labels from them, so Kueue stops counting them and their running pods keep "
            "running outside the pool's accounting",
            "cordon and drain those nodes (kubectl drain) before the change lands",
            manifest.origin,
            scope=(("nodes", ",".join(gone)),),
        )


def node_moved(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Nodes one pool's NodeFeatureRule matched before and another pool's matches after: the
    node's `<domain>/pool` label changes, so the flavors select it differently while the pods
    Kueue admitted under the old pool's flavor keep running there (Kueue evicts nothing on a
    node label change, and counts their usage under the old flavor: clusterqueue.go:596-606)."""
    was = {n: name for name, (rule_, _) in _nfd_rules(before).items() for n in _rule_nodes(rule_)}
    now = {n: name for name, (rule_, _) in _nfd_rules(after).items() for n in _rule_nodes(rule_)}
    moves: dict[tuple[str, str], list[str]] = {}
    for node, old_rule in sorted(was.items()):
        new_rule = now.get(node)
        if new_rule is not None and new_rule != old_rule:
            moves.setdefault((old_rule, new_rule), []).append(node)
    rules_after = _nfd_rules(after)
    for (old_rule, new_rule), nodes in sorted(moves.items()):
        yield Hazard(
            "node-moved",
            f"NodeFeatureRule rule {new_rule}",
            f"takes {len(nodes)} node(s) ({_listed(nodes)}) from {old_rule}: nfd-master relabels "
            f"them, so {new_rule}'s flavor admits its quota on them while the pods admitted "
            f"under {old_rule}'s flavor keep running there (double booking until they finish; "
            f"queues that no longer list {old_rule}'s flavor stop counting them)",
            f"cordon and drain {_listed(nodes)} (kubectl drain), or let their work finish, "
            "before the sync; uncordon after it",
            rules_after[new_rule][1].origin,
            scope=(("nodes", ",".join(nodes)),),
        )


def _replicas(manifests: Sequence[Manifest]) -> dict[str, int]:
    """Replicas per GPU of each device-plugin config (the ConfigMap's keys)."""
    found: dict[str, int] = {}
    for m in _of_kind(manifests, "ConfigMap"):
        if "device-plugin" not in m.name:
            continue
        for key, text in (m.obj.get("data") or {}).items():
            try:
                config = yaml.safe_load(str(text)) or {}
            except yaml.YAMLError:
                continue
            sharing = config.get("sharing") if isinstance(config, dict) else None
            replicas = 1
            for mode in ("timeSlicing", "mps"):
                for resource in ((sharing or {}).get(mode) or {}).get("resources") or []:
                    replicas = max(replicas, int(resource.get("replicas", 1)))
            found[str(key)] = replicas
    return found


def sharing_reduced(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """A node's device-plugin config label points at a config with fewer replicas per GPU."""
    old_replicas, new_replicas = _replicas(before), _replicas(after)
    old_rules, new_rules = _nfd_rules(before), _nfd_rules(after)
    for name in sorted(set(old_rules) & set(new_rules)):
        was = str((old_rules[name][0].get("labels") or {}).get(DEVICE_PLUGIN_LABEL, "default"))
        now = str((new_rules[name][0].get("labels") or {}).get(DEVICE_PLUGIN_LABEL, "default"))
        a, b = old_replicas.get(was, 1), new_replicas.get(now, 1)
        if b >= a:
            continue
        nodes = _rule_nodes(new_rules[name][0])
        yield Hazard(
            "sharing-reduced",
            f"NodeFeatureRule rule {name}",
            f"lowers GPU sharing from {a} to {b} replicas per GPU on {len(nodes)} node(s) "
            f"({_listed(nodes)}): the device plugin then advertises {b} per GPU while the pods "
            "already sharing each GPU keep running, so those nodes stay over-allocated until "
            "they finish and new pods wait",
            "drain those nodes, or wait for their shared pods to finish, before the sync",
            new_rules[name][1].origin,
            scope=(("nodes", ",".join(nodes)),),
        )


def hazards(
    before: Sequence[Manifest], after: Sequence[Manifest], drains: Sequence[Drain]
) -> list[Hazard]:
    before, after = _Indexed(before), _Indexed(after)
    found = [
        *node_removed(before, after),
        *node_moved(before, after),
        *sharing_reduced(before, after),
        *flavor_renamed(before, after),
        *flavor_transition(before, after),
        *flavor_retired(before, after),
        *topology_steps(before, after),
        *taint_evicts(before, after),
        *localqueue_removed(before, after),
        *clusterqueue_removed(before, after),
        *priority_class_removed(before, after),
        *resource_uncovered(before, after),
        *flavor_immutable(before, after),
        *immutable_fields(before, after),
        *volcano_shrink_order(before, after),
        *flavor_removed(before, after),
        *namespace_removed(before, after),
        *mig_mode_flips(drains),
        *mig_repartitions(drains),
        *priority_class_recreated(before, after),
    ]
    return sorted(found, key=lambda h: (h.rule, h.subject))
