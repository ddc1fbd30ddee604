"""A busy simulated fleet: the bundled fleet filled with the work users submit, and the
measurements the day-2 tests take of it.

The work (`manifests`) is the output of `hetgitops jobs` — every template kind it renders —
copied and scaled by a plan (`BUNDLED_PLAN`), plus hand-written objects of the kinds `jobs`
does not render: a Volcano gang on a Kueue-free share of a pool, a LeaderWorkerSet, a serving
Deployment on 3g.40gb MIG slices, a research Job on 1g.10gb slices, and bare Pods that
tolerate nothing (the ResourceFlavor's `tolerations` are what Kueue adds at admission). The
real Kueue admits it (batch Job, JobSet, PyTorchJob, LeaderWorkerSet, Deployment and Pod
integrations), the real Volcano scheduler binds the gangs and kube-scheduler the rest on the
kwok nodes, which keep every bound pod Running.

JobSet, PyTorchJob and LeaderWorkerSet have no controller in the sim (no jobset, training-
operator or lws manager): Kueue admits them and counts their quota, but they create no pods.
Their usage is Kueue's, not the nodes'; `Load` keeps the two apart.

`measure` reads the cluster (one LIST per kind) and returns, per physical pool and accelerator
resource: what the live nodes hold, what Kueue has admitted (every admitted Workload's
`status.admission` usage, by the pool of the flavor it names, whether or not a ClusterQueue
still names that flavor), what pods are bound there (Volcano's apart), plus the borrowing
ClusterQueues and the pending workloads. A physical pool is a pool of the baseline policy,
by node name: a later policy that renames or splits the pool maps its flavors (and its name)
back onto the same nodes, so usage admitted under an old flavor and a new one adds up (double
booking). What a pool holds is counted by the pool label each node carries now (issue 38, item
10): a node nfd-master has taken out of the pool holds nothing for it, whatever its name.
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from hetgitops.live.workloads import cluster_queue, pod_finished
from hetgitops.model import quantities
from hetgitops.model.policy import CardType, Policy
from hetgitops.plan import dra as dra_plan

from . import cluster, gitops, stranding

Obj = dict[str, Any]
LABEL = "hetgitops.io/busy"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
# With the DRA claims path's quota resources (plan/dra.py DOMAIN): Kueue charges them.
ACCELERATOR_PREFIXES = (
    "nvidia.com/",
    "huawei.com/",
    "cambricon.com/",
    "amd.com/",
    f"{dra_plan.DOMAIN}/",
)
POOL_LABEL = "hetgitops.io/pool"
MIG_PREFIX = "nvidia.com/mig-"
# The Volcano Job of the gang that waits for good (hand_written); its PodGroup is named
# `{job}-{job uid}` (Volcano v1.14.1 job_controller_actions.go:63-65).
WAITING_GANG = "busy-gang-a100-waiting"


@dataclass(frozen=True)
class Fill:
    """`copies` copies of one `hetgitops jobs` template (profile/team/card.yaml), each with
    `pods` pods (Job parallelism and completions, Deployment replicas; None: as rendered).
    `pending`: more than the team can reach at that point of the plan, so it must stay pending."""

    template: str
    copies: int = 1
    pods: int | None = None
    pending: bool = False


# The bundled fleet (policies/): per pool, what the plan puts there (Kueue admitted /
# capacity, accelerator units):
#   a800-train 120/128: pretraining 32 (PyTorchJob) + 56 (7 Jobs x 8) = 88, borrowing 8 of the
#     12 finetune-nlp and finetune-vision lend (25 % of 24 each); finetune-nlp 16 (JobSet);
#     finetune-vision 16; one more 8-GPU pretraining Job pends (borrowing limit of the cohort).
#   a100-transition 12/16: finetune-nlp 4 + pretraining 4 (Kueue), a 4-pod Volcano gang; a
#     24-pod gang waits in the same Volcano Queue for good.
#   ascend-910b 12/16: data-preprocessing 4 (Kueue), the ascend-pretrain Volcano job (8).
#   h100-infer: whole GPUs 18/24 (llm-serving 12 replicas, finetune-nlp 6); 1g.10gb 64/84
#     (small-model-serving 44 replicas, research 16-pod Job + 4 bare Pods); 3g.40gb 18/24.
#   l40s-infer 28/32: llm-serving 16 replicas, a LeaderWorkerSet of 2, finetune-vision 10
#     (quota 8: borrows 2 of online-inference's lendable 12).
#   rtx4090-dev 44/48 replicas: research 26 (2 notebooks, data-filter 20, 4 bare Pods),
#     data-preprocessing 18 (quota 16: borrows 2); research's next 8 pend.
#   mlu370-eval 6/8: research data-filter.
# Then one pending workload per pool but h100's slices (below).
BUNDLED_PLAN: tuple[Fill, ...] = (
    Fill("llm-pretrain/pretraining/a800-80gb.yaml"),
    Fill("data-filter/pretraining/a800-80gb.yaml", copies=7, pods=8),
    Fill("llm-finetune/finetune-nlp/a800-80gb.yaml"),
    Fill("data-filter/finetune-vision/a800-80gb.yaml", copies=2, pods=8),
    Fill("data-filter/finetune-nlp/a100-40gb.yaml", pods=4),
    Fill("data-filter/pretraining/a100-40gb.yaml", pods=4),
    Fill("ascend-pretrain/pretraining/ascend-910b.yaml"),
    Fill("data-filter/data-preprocessing/ascend-910b.yaml", pods=4),
    Fill("llm-serving/online-inference/h100-80gb.yaml", pods=12),
    Fill("data-filter/finetune-nlp/h100-80gb.yaml", pods=6),
    Fill("small-model-serving/online-inference/h100-80gb.yaml", pods=44),
    Fill("llm-serving/online-inference/l40s-48gb.yaml", pods=16),
    Fill("data-filter/finetune-vision/l40s-48gb.yaml", pods=10),
    Fill("notebook/research/rtx4090-24gb.yaml", copies=2),
    Fill("data-filter/research/rtx4090-24gb.yaml", pods=20),
    Fill("notebook/data-preprocessing/rtx4090-24gb.yaml", copies=2),
    Fill("data-filter/data-preprocessing/rtx4090-24gb.yaml", pods=16),
    Fill("data-filter/research/mlu370-x8.yaml", pods=6),
    # Last, so they meet a full fleet: each asks more than its team can reach now, one per
    # pool, so a change that makes Kueue forget the pool's usage (a flavor rename) shows as
    # admitted work beyond what the nodes hold.
    Fill("data-filter/pretraining/a800-80gb.yaml", pods=8, pending=True),
    Fill("data-filter/research/rtx4090-24gb.yaml", pods=8, pending=True),
    # ft-vision at 10 of 8 on l40s; 18 would borrow 10 > online-inference's lendable 6.
    Fill("data-filter/finetune-vision/l40s-48gb.yaml", pods=8, pending=True),
    # ft-nlp at 6 of 8 whole H100s; 14 would borrow 6 > online-inference's lendable 4.
    Fill("data-filter/finetune-nlp/h100-80gb.yaml", pods=8, pending=True),
    # pretraining at 4 of 8 A100s; 16 would borrow 8 > finetune-nlp's unused 4.
    Fill("data-filter/pretraining/a100-40gb.yaml", pods=12, pending=True),
    # data-preprocessing at 4 of 8 Ascend (isolated: no borrowing).
    Fill("data-filter/data-preprocessing/ascend-910b.yaml", pods=8, pending=True),
    # research at 6 of 8 MLU370 (nobody else has quota there to lend).
    Fill("data-filter/research/mlu370-x8.yaml", pods=4, pending=True),
)


def _name(obj: Obj, suffix: str, *, pending: bool) -> Obj:
    out = copy.deepcopy(obj)
    out["metadata"]["name"] = f"{obj['metadata']['name']}-{suffix}"[:63].rstrip("-")
    out["metadata"].setdefault("labels", {})[LABEL] = "pending" if pending else "true"
    return out


def is_pending(obj: Mapping[str, Any]) -> bool:
    """Submitted to stay pending (the plan's `pending` entries)."""
    return bool(obj["metadata"].get("labels", {}).get(LABEL) == "pending")


def _scale(obj: Obj, pods: int | None) -> Obj:
    if pods is None:
        return obj
    spec = obj["spec"]
    if obj["kind"] == "Deployment":
        spec["replicas"] = pods
    elif obj["kind"] == "Job" and "parallelism" in spec:
        spec["parallelism"] = spec["completions"] = pods
    else:
        raise ValueError(f"cannot scale a {obj['kind']} to {pods} pods")
    return obj


def from_jobs(jobs_dir: Path, plan: Sequence[Fill] = BUNDLED_PLAN) -> list[Obj]:
    """The plan's copies of the `hetgitops jobs` templates in `jobs_dir`."""
    found: list[Obj] = []
    seen: Counter[str] = Counter()
    for fill in plan:
        (template,) = [d for d in yaml.safe_load_all((jobs_dir / fill.template).read_text()) if d]
        for _ in range(fill.copies):
            seen[fill.template] += 1
            suffix = ("p" if fill.pending else "b") + str(seen[fill.template])
            found.append(_scale(_name(template, suffix, pending=fill.pending), fill.pods))
    return found


def _pool_pod_spec(policy: Policy, pool: str, resource: str, amount: int) -> Obj:
    """A pod spec that selects `pool` (the node labels hetgitops' NFD rules set) and asks
    `amount` of `resource`, with cpu and memory in the policy's per-card proportion; no
    tolerations: Kueue adds the flavor's at admission."""
    card = policy.pools[pool].card_type
    cpu = "1500m" if "mig-" in resource else "2"
    requests = {resource: str(amount), "cpu": cpu, "memory": "12Gi"}
    return {
        "restartPolicy": "Never",
        "nodeSelector": {"hetgitops.io/card-type": card, POOL_LABEL: pool},
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": requests, "limits": requests},
            }
        ],
    }


def _meta(name: str, namespace: str, queue: str | None, tier: str | None) -> Obj:
    labels = {LABEL: "true"}
    if queue:
        labels[KUEUE_QUEUE] = queue
    if tier:
        labels[KUEUE_PRIORITY] = tier
    return {"name": name, "namespace": namespace, "labels": labels}


def hand_written(policy: Policy) -> list[Obj]:
    """What `hetgitops jobs` does not render, for the bundled fleet."""
    objs: list[Obj] = []
    # A Volcano gang on the A100 share Kueue leaves free: 4 pods, all or none.
    gang_pod = _pool_pod_spec(policy, "a100-transition", "nvidia.com/gpu", 1)
    gang_pod["schedulerName"] = "volcano"
    gang_pod["priorityClassName"] = "training"
    gang_pod["tolerations"] = []
    objs.append(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": _meta("busy-gang-a100", "pretrain", None, None),
            "spec": {
                "schedulerName": "volcano",
                "queue": "pretraining-a100-transition",
                "minAvailable": 4,
                "priorityClassName": "training",
                "tasks": [{"name": "worker", "replicas": 4, "template": {"spec": gang_pod}}],
            },
        }
    )
    # A gang that never fits: 24 pods, all or none, where the A100 pool has 16 cards. It waits
    # in the same Queue for good (PodGroup Pending: Volcano's job controller makes no pods
    # before Inqueue, job_controller_actions.go:405-408), so a change that deletes that Queue
    # strands it (stranding.py `volcano-queue-gone`; volcano-team-layout and remove-pool do).
    # Submitted with the pending work, after the running gang has its nodes.
    waiting = copy.deepcopy(objs[0])  # the gang above
    waiting["metadata"]["name"] = WAITING_GANG
    waiting["metadata"]["labels"][LABEL] = "pending"
    waiting["spec"]["minAvailable"] = waiting["spec"]["tasks"][0]["replicas"] = 24
    objs.append(waiting)
    # Serving on 3g.40gb slices (the bundled templates use 1g.10gb and whole cards).
    serving = _pool_pod_spec(policy, "h100-infer", "nvidia.com/mig-3g.40gb", 1)
    serving["restartPolicy"] = "Always"
    serving["priorityClassName"] = "online-inference"
    objs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta("busy-serve-3g", "serving", "online-inference", "online-inference"),
            "spec": {
                "replicas": 18,
                "selector": {"matchLabels": {"app": "busy-serve-3g"}},
                "template": {"metadata": {"labels": {"app": "busy-serve-3g"}}, "spec": serving},
            },
        }
    )
    # Research on 1g.10gb slices: a 16-pod Job and 4 bare Pods that tolerate nothing.
    slice_pod = _pool_pod_spec(policy, "h100-infer", "nvidia.com/mig-1g.10gb", 1)
    objs.append(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta("busy-research-1g", "research", "research", "dev"),
            "spec": {
                "suspend": True,
                "parallelism": 16,
                "completions": 16,
                "template": {"spec": slice_pod},
            },
        }
    )
    for index in range(4):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": _meta(f"busy-pod-1g-{index}", "research", "research", "dev"),
                "spec": copy.deepcopy(slice_pod),
            }
        )
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": _meta(f"busy-pod-rtx-{index}", "research", "research", "dev"),
                "spec": _pool_pod_spec(policy, "rtx4090-dev", "nvidia.com/gpu", 1),
            }
        )
    # A LeaderWorkerSet of one group of 2 (no lws controller: Kueue admits its workload only).
    lws_pod = _pool_pod_spec(policy, "l40s-infer", "nvidia.com/gpu", 1)
    lws_pod["restartPolicy"] = "Always"
    objs.append(
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": _meta("busy-lws-l40s", "serving", "online-inference", "online-inference"),
            "spec": {
                "replicas": 1,
                # Defaults a webhook of the lws manager would set; the CRD requires them.
                "rolloutStrategy": {"type": "RollingUpdate"},
                "startupPolicy": "LeaderCreated",
                "leaderWorkerTemplate": {
                    "size": 2,
                    "workerTemplate": {"spec": lws_pod},
                },
            },
        }
    )
    return objs


def manifests(policy: Policy, jobs_dir: Path, plan: Sequence[Fill] = BUNDLED_PLAN) -> list[Obj]:
    """Everything the busy fleet submits, pending ones last."""
    jobs = from_jobs(jobs_dir, plan)
    pending = [o for o in jobs if is_pending(o)]
    return [o for o in jobs if not is_pending(o)] + hand_written(policy) + pending


def submit(sim: cluster.SimCluster, objs: Sequence[Obj]) -> None:
    """Create the objects as a user would (kubectl create: their controllers own them)."""
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)})
    sim.kubectl("create", "-f", "-", input=body)


BUSY_KINDS = (
    "jobs.batch",
    "jobs.batch.volcano.sh",
    "deployments.apps",
    "pods",
    "jobsets.jobset.x-k8s.io",
    "pytorchjobs.kubeflow.org",
    "leaderworkersets.leaderworkerset.x-k8s.io",
)


def clear(sim: cluster.SimCluster) -> None:
    """Delete every busy-fleet object (and, through their owners, their pods and Workloads)
    and wait until no Workload or pod of theirs is left."""
    sim.kubectl("delete", ",".join(BUSY_KINDS), "-A", "-l", LABEL, "--wait=true", "--timeout=180s")
    cluster.wait_for(
        lambda: (
            not _list(sim, "workloads.kueue.x-k8s.io")
            and not [
                p
                for p in _list(sim, "pods")
                if (p["metadata"].get("namespace") or "") not in cluster.SYSTEM_NAMESPACES
                and p["metadata"]["namespace"] != "kube-system"
            ]
        ),
        timeout=180,
        what="no busy-fleet workload or pod left",
    )


def ref(obj: Mapping[str, Any]) -> str:
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    kind = f"{obj['kind']}.{group}" if group else obj["kind"]
    return f"{obj['metadata']['namespace']}/{kind}/{obj['metadata']['name']}"


# ---- measuring ---------------------------------------------------------------------------


def _accelerator(resource: str) -> bool:
    return resource.startswith(ACCELERATOR_PREFIXES)


def _condition(obj: Mapping[str, Any], kind: str) -> bool:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return bool(cond.get("status") == "True")
    return False


def admitted(workload: Mapping[str, Any]) -> bool:
    return _condition(workload, "QuotaReserved")


def finished(workload: Mapping[str, Any]) -> bool:
    return _condition(workload, "Finished")


@dataclass
class Pools:
    """Which physical pool (a pool of the baseline policy) each node and each flavor is."""

    node_pool: dict[str, str] = field(default_factory=dict)
    flavor_pool: dict[str, str] = field(default_factory=dict)
    pool_name: dict[str, str] = field(default_factory=dict)  # a policy's pool -> physical pool
    # Physical pools a learnt policy puts on the DRA claims path -> their card type: the
    # driver's devices there are capacity in the mapped resource (`slice_capacity`).
    dra_cards: dict[str, CardType] = field(default_factory=dict)

    def learn(self, policy: Policy, tree: Path | None = None) -> None:
        """Add `policy`'s nodes (a new node joins the pool it is first seen in) and the
        flavors of its rendered `tree`, each mapped through its pool's first node."""
        first: dict[str, str] = {}
        for pool in policy.pools.values():
            for node in pool.nodes:
                self.node_pool.setdefault(node.name, pool.name)
            if pool.nodes:
                first[pool.name] = self.node_pool[pool.nodes[0].name]
                self.pool_name.setdefault(pool.name, first[pool.name])
                if dra_plan.claims(pool) and pool.card_type in policy.card_types:
                    self.dra_cards[first[pool.name]] = policy.card_types[pool.card_type]
        if tree is None:
            return
        for obj in gitops.documents(tree):
            if obj["kind"] != "ResourceFlavor":
                continue
            labels = obj.get("spec", {}).get("nodeLabels", {})
            pool_name = next((v for k, v in labels.items() if k.endswith("/pool")), None)
            if pool_name in first:
                self.flavor_pool.setdefault(obj["metadata"]["name"], first[pool_name])


Usage = dict[tuple[str, str], Decimal]  # (physical pool, resource) -> amount


@dataclass(frozen=True)
class Load:
    """One reading of the cluster (see the module docstring)."""

    capacity: Usage
    kueue: Usage
    pods: Usage
    volcano: Usage
    borrowing: dict[str, dict[str, Decimal]]  # ClusterQueue -> resource -> borrowed
    workloads: dict[str, Obj]  # namespace/name -> Workload
    live_pods: dict[str, Obj]  # namespace/name -> Pod
    namespaces: dict[str, str]  # name -> uid (a namespace deleted and made again is another)
    localqueues: dict[str, str]  # namespace/name -> its ClusterQueue
    clusterqueues: set[str]
    flavors: set[str]
    queue_specs: dict[str, Obj] = field(default_factory=dict)  # ClusterQueue -> the object
    flavor_specs: dict[str, Obj] = field(default_factory=dict)  # ResourceFlavor -> the object
    localqueue_specs: dict[str, Obj] = field(default_factory=dict)  # namespace/name -> the object
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels
    podgroups: dict[str, Obj] = field(default_factory=dict)  # namespace/name -> PodGroup
    volcano_queues: set[str] = field(default_factory=set)  # Volcano Queues not being deleted

    def used(self, pool: str, resource: str) -> Decimal:
        """What is taken of the pool: Kueue's admitted usage plus Volcano's bound pods."""
        return self.kueue.get((pool, resource), Decimal(0)) + self.volcano.get(
            (pool, resource), Decimal(0)
        )

    def utilisation(self) -> dict[tuple[str, str], float]:
        return {
            key: float(self.used(*key) / held) for key, held in self.capacity.items() if held > 0
        }

    def over_capacity(self) -> dict[tuple[str, str], tuple[Decimal, Decimal]]:
        """(pool, resource) -> (taken, what the nodes labelled with the pool hold now) wherever
        taken > held, taken being Kueue's admitted usage plus the Volcano gangs bound there
        (Kueue-free pods the scheduler placed on the same nodes): more is counted than the
        nodes can run (double booking)."""
        found = {}
        for key in sorted(set(self.kueue) | set(self.volcano)):
            taken, held = self.used(*key), self.capacity.get(key, Decimal(0))
            if taken > held:
                found[key] = (taken, held)
        return found

    def unbound(self) -> list[str]:
        """Pods of admitted work (no scheduling gate left) that no node holds."""
        return sorted(
            k
            for k, p in self.live_pods.items()
            if (p.get("status") or {}).get("phase") == "Pending"
            and not (p.get("spec") or {}).get("nodeName")
            and not (p.get("metadata") or {}).get("deletionTimestamp")
            and not (p.get("spec") or {}).get("schedulingGates")
        )

    def pending(self) -> list[str]:
        return sorted(k for k, w in self.workloads.items() if not admitted(w) and not finished(w))

    def stranded(self) -> list[str]:
        """Work Kueue leaves where it can never run, as `CAUSE namespace/name` (stranding.py:
        queue gone, inactive LocalQueue or ClusterQueue, namespace not selected, no flavor that
        can admit it, a pod never bound), and the Volcano gangs waiting in a deleted Queue."""
        return stranding.stranded(self)


def _flavor_names(queue: Mapping[str, Any]) -> list[str]:
    groups = (queue.get("spec") or {}).get("resourceGroups") or []
    return sorted(str(f.get("name", "")) for g in groups for f in g.get("flavors") or [])


def unsynced_queues(load: Load, rendered: Iterable[Obj]) -> list[str]:
    """The rendered ClusterQueues whose live flavors differ from the tree's: a sync that did not
    land as rendered (a field another manager still co-owns stays under server-side apply)."""
    found = []
    for obj in rendered:
        if obj.get("kind") != "ClusterQueue":
            continue
        name = obj["metadata"]["name"]
        live = load.queue_specs.get(name)
        want, have = _flavor_names(obj), _flavor_names(live) if live else None
        if have != want:
            found.append(f"ClusterQueue {name}: live flavors {have}, rendered {want}")
    return found


def namespaces_gone(baseline: Load, load: Load) -> list[str]:
    """Namespaces of the baseline that are gone, or were deleted and made again (same name,
    another uid)."""
    return sorted(n for n, uid in baseline.namespaces.items() if load.namespaces.get(n) != uid)


def _list(sim: cluster.SimCluster, kind: str) -> list[Obj]:
    result = sim.kubectl("get", kind, "-A", "-o", "json", check=False)
    if result.returncode != 0:
        return []
    return list(json.loads(result.stdout)["items"])


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _amounts(resources: Mapping[str, Any]) -> Iterable[tuple[str, Decimal]]:
    for name, value in resources.items():
        if _accelerator(name):
            yield name, quantities.value_of(str(value))


def _pod_requests(pod: Mapping[str, Any]) -> Counter[str]:
    total: Counter[str] = Counter()
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        for name, amount in _amounts(requests):
            total[name] += amount  # type: ignore[assignment]
    return total


def capacity_of(nodes: Iterable[Obj], pools: Pools) -> Usage:
    """What the nodes hold per physical pool and resource, each node counted in the pool its
    pool label names now (a node without one holds nothing for any pool)."""
    capacity: Usage = {}
    for node in nodes:
        label = ((node.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL, "")
        pool = pools.pool_name.get(label)
        if pool is None:
            continue
        for name, amount in _amounts(node.get("status", {}).get("allocatable") or {}):
            capacity[pool, name] = capacity.get((pool, name), Decimal(0)) + amount
    return capacity


def held_by_running(nodes: Iterable[Obj], pods: Iterable[Obj], pools: Pools) -> Usage:
    """What bound, unfinished pods still hold where the node's own figure counts less, per
    physical pool, added to `capacity_of`:

    - on a node that carries no pool label now (its pool removed, or left out of every
      pool), everything they use, for the node's baseline pool: they keep running on cards
      no flavor admits to again, so that is held, not overbooked (`node-removed`);
    - a MIG slice a pod uses beyond what the node advertises: mig-parted cannot destroy a
      slice in use (the GPU keeps its old layout, `mig-repartition`), while the sim's node
      model advertises the new layout at once.

    Time-slicing replicas are not held so: fewer replicas under the same pods is the
    overbooking itself (`sharing-reduced`)."""
    by_name = {str((n.get("metadata") or {}).get("name", "")): n for n in nodes}
    used: dict[str, Counter[str]] = {}
    for pod in pods:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node in by_name and not pod_finished(pod):
            used.setdefault(node, Counter()).update(_pod_requests(pod))
    held: Usage = {}
    for name, amounts in sorted(used.items()):
        node = by_name[name]
        label = ((node.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL, "")
        allocatable = dict(_amounts((node.get("status") or {}).get("allocatable") or {}))
        pool = pools.pool_name.get(label)
        for resource, amount in amounts.items():
            if not _accelerator(resource):
                continue
            if pool is None:
                extra, into = Decimal(amount), pools.node_pool.get(name)
            elif resource.startswith(MIG_PREFIX):
                extra, into = Decimal(amount) - allocatable.get(resource, Decimal(0)), pool
            else:
                continue
            if into is not None and extra > 0:
                held[into, resource] = held.get((into, resource), Decimal(0)) + extra
    return held


def slice_capacity(slices: Iterable[Obj], pools: Pools) -> Usage:
    """What NVIDIA's DRA driver publishes per physical pool on the claims path, in the Kueue
    resource each device is charged as (plan/dra.py `quota_resource`: its card, its MIG
    profile), counted on the pool of the slice's node."""
    capacity: Usage = {}
    for item in slices:
        spec = item.get("spec") or {}
        pool = pools.node_pool.get(spec.get("nodeName") or "")
        card = pools.dra_cards.get(pool or "")
        if pool is None or card is None or spec.get("driver") != dra_plan.DRIVER:
            continue
        for device in spec.get("devices") or []:
            profile = ((device.get("attributes") or {}).get("profile") or {}).get("string")
            key = (pool, dra_plan.quota_resource(card, profile))
            capacity[key] = capacity.get(key, Decimal(0)) + 1
    return capacity


def kueue_usage(workloads: Iterable[Obj], pools: Pools) -> Usage:
    """Every admitted Workload's `status.admission` usage, by the pool of the flavor it names."""
    kueue: Usage = {}
    for workload in workloads:
        if not admitted(workload) or finished(workload):
            continue
        admission = workload["status"]["admission"]
        for assignment in admission.get("podSetAssignments") or []:
            flavors = assignment.get("flavors") or {}
            for name, amount in _amounts(assignment.get("resourceUsage") or {}):
                pool = pools.flavor_pool.get(flavors.get(name, ""), "?" + flavors.get(name, ""))
                kueue[pool, name] = kueue.get((pool, name), Decimal(0)) + amount
    return kueue


def pod_usage(pods: Iterable[Obj], pools: Pools) -> tuple[Usage, Usage]:
    """(bound pods of kube-scheduler, bound pods of Volcano) per pool and resource; a pod is
    counted on the pool of its node. Volcano's are the Kueue-free ones (a pod with a queue-name
    label is Kueue's and counted in its Workload)."""
    pods_usage: Usage = {}
    volcano: Usage = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        pool = pools.node_pool.get(spec.get("nodeName") or "")
        if pool is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        labels = (pod.get("metadata") or {}).get("labels") or {}
        gang = spec.get("schedulerName") == "volcano" and KUEUE_QUEUE not in labels
        into = volcano if gang else pods_usage
        for name, amount in _pod_requests(pod).items():
            into[pool, name] = into.get((pool, name), Decimal(0)) + amount
    return pods_usage, volcano


def measure(sim: cluster.SimCluster, pools: Pools, *, light: bool = False) -> Load:
    """One reading; `light`: Nodes, Workloads and Pods only (capacity, Kueue's admitted usage
    and Volcano's bound gangs, what a sampler needs during a sync), the rest left empty."""
    nodes = _list(sim, "nodes")
    capacity = capacity_of(nodes, pools)
    if pools.dra_cards:
        capacity.update(slice_capacity(_list(sim, "resourceslices"), pools))
    workloads = {_key(w): w for w in _list(sim, "workloads.kueue.x-k8s.io")}
    kueue = kueue_usage(workloads.values(), pools)
    live_pods = {_key(p): p for p in _list(sim, "pods")}
    for key, amount in held_by_running(nodes, live_pods.values(), pools).items():
        capacity[key] = capacity.get(key, Decimal(0)) + amount
    pods_usage, volcano = pod_usage(live_pods.values(), pools)
    if light:
        return Load(
            capacity=capacity,
            kueue=kueue,
            pods=pods_usage,
            volcano=volcano,
            borrowing={},
            workloads=workloads,
            live_pods={},
            namespaces={},
            localqueues={},
            clusterqueues=set(),
            flavors=set(),
        )
    borrowing: dict[str, dict[str, Decimal]] = {}
    queues = _list(sim, "clusterqueues.kueue.x-k8s.io")
    for queue in queues:
        for flavor in (queue.get("status") or {}).get("flavorsUsage") or []:
            for resource in flavor.get("resources") or []:
                borrowed = quantities.value_of(str(resource.get("borrowed", "0")))
                if borrowed > 0 and _accelerator(resource["name"]):
                    borrowing.setdefault(queue["metadata"]["name"], {})[resource["name"]] = borrowed
    localqueue_specs = {
        _key(q): q
        for q in _list(sim, "localqueues.kueue.x-k8s.io")
        if not q["metadata"].get("deletionTimestamp")
    }
    localqueues = {k: str(q["spec"].get("clusterQueue", "")) for k, q in localqueue_specs.items()}
    namespaces = [n for n in _list(sim, "namespaces") if not n["metadata"].get("deletionTimestamp")]
    flavor_specs = {f["metadata"]["name"]: f for f in _list(sim, "resourceflavors.kueue.x-k8s.io")}
    return Load(
        capacity=capacity,
        kueue=kueue,
        pods=pods_usage,
        volcano=volcano,
        borrowing=borrowing,
        workloads=workloads,
        live_pods=live_pods,
        namespaces={n["metadata"]["name"]: str(n["metadata"].get("uid", "")) for n in namespaces},
        localqueues=localqueues,
        clusterqueues={
            q["metadata"]["name"] for q in queues if not q["metadata"].get("deletionTimestamp")
        },
        flavors=set(flavor_specs),
        queue_specs={q["metadata"]["name"]: q for q in queues},
        flavor_specs=flavor_specs,
        localqueue_specs=localqueue_specs,
        namespace_labels={
            n["metadata"]["name"]: dict(n["metadata"].get("labels") or {}) for n in namespaces
        },
        podgroups={_key(g): g for g in _list(sim, "podgroups.scheduling.volcano.sh")},
        volcano_queues={
            q["metadata"]["name"]
            for q in _list(sim, "queues.scheduling.volcano.sh")
            if not q["metadata"].get("deletionTimestamp")
        },
    )


def settled(
    sim: cluster.SimCluster,
    pools: Pools,
    *,
    timeout: float = 240,
    changes: Callable[[], int] | None = None,
) -> Load:
    """Measure until two readings 5 s apart agree on every workload's admission, every pod's
    node and phase, no pod is being deleted and no admitted workload's pod waits for a node:
    the fleet is at rest. With `changes` (a watch's count of state changes, watch.Recorder),
    also until the watches saw no Workload or Pod change state between the two readings: the
    second reading is then the fleet at rest, not a moment that happens to look like the
    first. On timeout, raise with what still differed."""
    deadline = time.monotonic() + timeout
    before = changes() if changes else 0
    last = measure(sim, pools)
    moving: list[str] = []
    while time.monotonic() < deadline:
        time.sleep(5)
        now = measure(sim, pools)
        after = changes() if changes else 0
        moving = _moving(last, now) + [f"{after - before} watched change(s)"] * (after != before)
        if not moving:
            return now
        last, before = now, after
    raise cluster.SimError(f"the busy fleet did not settle within {timeout:.0f}s: {moving[:12]}")


def _states(load: Load) -> dict[str, tuple[Any, ...]]:
    found: dict[str, tuple[Any, ...]] = {
        f"workload {k}": (admitted(w),) for k, w in load.workloads.items()
    }
    for k, p in load.live_pods.items():
        spec, status = p.get("spec") or {}, p.get("status") or {}
        found[f"pod {k}"] = (
            spec.get("nodeName"),
            status.get("phase"),
            bool(p["metadata"].get("deletionTimestamp")),
        )
    return found


def _moving(last: Load, now: Load) -> list[str]:
    """What is not at rest: objects whose state differs between the readings, pods being
    deleted, and pods bound but not Running yet (kwok marks them Running within a second)."""
    was, state = _states(last), _states(now)
    found = sorted(
        f"{k}: {was.get(k)} -> {state.get(k)}"
        for k in set(was) | set(state)
        if was.get(k) != state.get(k)
    )
    for k, p in sorted(now.live_pods.items()):
        spec, status = p.get("spec") or {}, p.get("status") or {}
        if p["metadata"].get("deletionTimestamp"):
            found.append(f"pod {k} being deleted")
        elif spec.get("nodeName") and status.get("phase") == "Pending":
            found.append(f"pod {k} bound, not Running yet")
    return found


@dataclass
class BusyFleet:
    """A filled fleet: its policy, the synced tree, the `hetgitops jobs` output it was filled
    from, the pool map and the settled baseline reading (`restore` renews it: recreated work
    has new pods)."""

    policy: Policy
    tree: Path
    jobs_dir: Path
    pools: Pools
    baseline: Load


def fill(
    sim: cluster.SimCluster, policy: Policy, jobs_dir: Path, pools: Pools, *, timeout: float = 300
) -> Load:
    """Submit the busy fleet's work (pending ones last, after the rest is admitted) and return
    the settled load."""
    objs = manifests(policy, jobs_dir)
    # Volcano's gangs first: Kueue's topology-aware scheduling pins each admitted pod to a node
    # (nodeSelector kubernetes.io/hostname) from the usage it sees at admission; a gang the
    # Volcano scheduler binds to that node a moment later leaves the pinned pod Pending for
    # good ("Insufficient nvidia.com/gpu"). Seen here with both submitted together.
    gangs = [
        o for o in objs if o["apiVersion"].startswith("batch.volcano.sh/") and not is_pending(o)
    ]
    pending = [o for o in objs if is_pending(o)]
    for batch in (gangs, [o for o in objs if o not in gangs and o not in pending], pending):
        submit(sim, batch)
        load = settled(sim, pools, timeout=timeout)
    return load


def summary(load: Load) -> tuple[Any, ...]:
    """What must be the same after a change and its revert: usage per pool and resource
    (Kueue's, the pods', Volcano's), the borrowing queues, the number pending."""
    return (load.kueue, load.pods, load.volcano, sorted(load.borrowing), len(load.pending()))


def _owner(obj: Mapping[str, Any]) -> tuple[str, str]:
    owners = obj["metadata"].get("ownerReferences") or [{}]
    return str(owners[0].get("kind", "")), str(owners[0].get("name", ""))


CLUSTER_QUEUES = "clusterqueues.kueue.x-k8s.io"


def terminating_queues(load: Load, tree: Path) -> set[str]:
    """ClusterQueues of the tree that are live but being deleted: a revert re-applied a queue
    the change had removed while Kueue's resource-in-use finalizer still waited on the work it
    admitted, and the apply does not stop a deletion (diff's `object-terminating`). Kueue
    admits nothing to such a queue until that work is gone."""
    names = {o["metadata"]["name"] for o in gitops.documents(tree) if o["kind"] == "ClusterQueue"}
    return {
        name
        for name, queue in load.queue_specs.items()
        if name in names and queue["metadata"].get("deletionTimestamp")
    }


def _remake_queues(sim: cluster.SimCluster, tree: Path, names: set[str]) -> None:
    """Once the work they held is deleted, the queues go; then they are applied again."""
    cluster.wait_for(
        lambda: not names & {q["metadata"]["name"] for q in _list(sim, CLUSTER_QUEUES)},
        timeout=180,
        what=f"ClusterQueues {sorted(names)} deleted once their admitted work is gone",
    )
    queues = [
        o
        for o in gitops.documents(tree)
        if o["kind"] == "ClusterQueue" and o["metadata"]["name"] in names
    ]
    gitops.apply_objects(sim, queues, manager=gitops.ARGOCD_MANAGER)


def restore(sim: cluster.SimCluster, fleet: BusyFleet, *, timeout: float = 300) -> bool:
    """After a change and its revert, put the work back as the baseline had it: recreate the
    planned-pending work and whatever Kueue admitted on a flavor the bundled tree does not
    have (it is admitted on the old flavor again, or pends, as before the change), and the
    work of a ClusterQueue the revert left Terminating (`terminating_queues`: the queue goes
    once that work is deleted, and is applied again before the work comes back); if the fleet
    still differs from the baseline, clear and refill it. Renews `fleet.baseline`; True when
    it took a refill."""
    objs = {ref(o): o for o in manifests(fleet.policy, fleet.jobs_dir)}
    flavors = {
        o["metadata"]["name"] for o in gitops.documents(fleet.tree) if o["kind"] == "ResourceFlavor"
    }
    load = measure(sim, fleet.pools)
    stuck = terminating_queues(load, fleet.tree)
    again = {k for k, o in objs.items() if is_pending(o)}
    pods_to_delete = []
    for workload in load.workloads.values():
        assigned = {
            f
            for a in (workload.get("status") or {}).get("admission", {}).get("podSetAssignments")
            or []
            for f in (a.get("flavors") or {}).values()
        }
        if not admitted(workload) or (assigned <= flavors and cluster_queue(workload) not in stuck):
            continue
        kind, name = _owner(workload)
        namespace = workload["metadata"]["namespace"]
        matches = [
            k
            for k, o in objs.items()
            if o["kind"] == kind
            and k.endswith(f"/{name}")
            and o["metadata"]["namespace"] == namespace
        ]
        if matches:
            again.update(matches)
        elif kind == "Pod":
            pods_to_delete.append(f"{namespace}/{name}")  # a Deployment's: it recreates it
    # Work the change deleted (bare Pods evicted by a taint) or left failed.
    for key, obj in objs.items():
        namespace, _, name = key.split("/", 2)
        if obj["kind"] == "Pod":
            pod = load.live_pods.get(f"{namespace}/{obj['metadata']['name']}")
            if pod is None or (pod.get("status") or {}).get("phase") == "Failed":
                again.add(key)
    for key in pods_to_delete:
        namespace, name = key.split("/", 1)
        sim.kubectl("delete", "pod", "-n", namespace, name, "--wait=true", check=False)
    chosen = [objs[k] for k in objs if k in again]
    for obj in chosen:
        sim.kubectl("delete", "-f", "-", "--wait=true", "--ignore-not-found", input=json.dumps(obj))
    if stuck:
        _remake_queues(sim, fleet.tree, stuck)
    # Created in the fill's order: the planned-pending work after the rest is admitted again.
    for batch in ([o for o in chosen if not is_pending(o)], [o for o in chosen if is_pending(o)]):
        if batch:
            submit(sim, batch)
            load = settled(sim, fleet.pools, timeout=timeout)
    if not chosen:
        load = settled(sim, fleet.pools, timeout=timeout)
    if summary(load) == summary(fleet.baseline):
        fleet.baseline = load
        return False
    clear(sim)
    fleet.baseline = fill(sim, fleet.policy, fleet.jobs_dir, fleet.pools, timeout=timeout)
    return True
