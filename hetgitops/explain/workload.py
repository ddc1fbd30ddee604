"""What a submitted workload asks, as Kueue sees it: pod sets of `count` pods, each with its
requests in Kueue's integers (cpu in milli-units, `quota_plan.kueue_amount`), node selector and
tolerations. Built from command-line options or from a manifest of any supported kind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.live import workloads
from hetgitops.plan.quota_plan import kueue_amount

KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
TAS_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
TAS_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TAS_GROUP = "kueue.x-k8s.io/podset-group-name"
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
VOLCANO_MIN_MEMBER = "scheduling.k8s.io/group-min-member"
KUEUE, VOLCANO, DEFAULT = "kueue", "volcano", "default"
# Kubernetes' built-in PriorityClasses (every cluster has them, values from
# k8s.io/api/scheduling/v1 SystemCriticalPriority): a pod's priorityClassName may name them
# and Kueue reads their value like any PriorityClass's.
SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2000000000,
    "system-node-critical": 2000001000,
}


class WorkloadError(ValueError):
    """The manifest is not something this command can read (a usage error, exit 2)."""


@dataclass(frozen=True)
class PodSet:
    """`count` identical pods; `requests` per pod, Kueue's integers."""

    name: str
    count: int
    requests: Mapping[str, int]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    required_topology: str | None = None
    preferred_topology: str | None = None
    # requiredDuringSchedulingIgnoredDuringExecution: terms (ORed) of matchExpressions
    # (ANDed), each {key, operator, values}; None when the pod has none.
    node_affinity: tuple[tuple[Mapping[str, Any], ...], ...] | None = None
    # kueue.x-k8s.io/podset-group-name: pod sets of one group get one flavor for their
    # summed requests; Kueue reads it only beside a required or preferred topology.
    group: str | None = None

    def total(self, resource: str) -> int:
        return self.requests.get(resource, 0) * self.count


@dataclass(frozen=True)
class Workload:
    """One admission unit: Kueue admits all its pod sets at once or none."""

    kind: str
    name: str
    namespace: str | None
    pod_sets: tuple[PodSet, ...]
    queue: str | None = None  # Kueue LocalQueue (label) or Volcano queue
    tier: str | None = None  # WorkloadPriorityClass / PriorityClass name
    scheduler: str = KUEUE
    min_available: int | None = None  # Volcano gang size
    team: str | None = None  # named on the command line; else found from the namespace
    # `tier` is the pod templates' priorityClassName (a PriorityClass), not the
    # kueue.x-k8s.io/priority-class label (a WorkloadPriorityClass).
    tier_from_pod: bool = False

    @property
    def pods(self) -> int:
        return sum(ps.count for ps in self.pod_sets)


def _kueue_integer(resource: str, quantity: Any) -> int:
    return kueue_amount(resource, str(quantity))


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Kueue's pod request (Σ containers, at least each init container's, limits standing in
    for absent requests) in Kueue's integers: the one reader, `live.workloads.pod_requests`."""
    return workloads.pod_requests(spec, _kueue_integer)


def pod_set(name: str, count: int, template: Mapping[str, Any]) -> PodSet:
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    annotations = meta.get("annotations") or {}
    return PodSet(
        name=name,
        count=count,
        requests=pod_requests(spec),
        node_selector=dict(spec.get("nodeSelector") or {}),
        tolerations=tuple(spec.get("tolerations") or ()),
        required_topology=annotations.get(TAS_REQUIRED),
        preferred_topology=annotations.get(TAS_PREFERRED),
        node_affinity=_required_affinity(spec),
        group=annotations.get(TAS_GROUP)
        if TAS_REQUIRED in annotations or TAS_PREFERRED in annotations
        else None,
    )


def _required_affinity(spec: Mapping[str, Any]) -> tuple[tuple[Mapping[str, Any], ...], ...] | None:
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return None
    return tuple(tuple(dict(e) for e in t.get("matchExpressions") or ()) for t in terms)


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def _job_pods(spec: Mapping[str, Any]) -> int:
    """A Job's pod set count: parallelism, at most completions (Kueue's job integration)."""
    parallelism = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    return parallelism if completions is None else min(parallelism, int(completions))


def _job(obj: Mapping[str, Any]) -> list[PodSet]:
    spec = obj.get("spec") or {}
    return [pod_set("main", _job_pods(spec), spec.get("template") or {})]


def _jobset(obj: Mapping[str, Any]) -> list[PodSet]:
    found = []
    for replicated in (obj.get("spec") or {}).get("replicatedJobs") or []:
        job_spec = (replicated.get("template") or {}).get("spec") or {}
        count = _int(replicated.get("replicas"), 1) * _job_pods(job_spec)
        found.append(pod_set(str(replicated["name"]), count, job_spec.get("template") or {}))
    return found


def _pytorchjob(obj: Mapping[str, Any]) -> list[PodSet]:
    """Pod sets named by replica type in lower case, Master first (Kueue's kubeflow adapter)."""
    specs = (obj.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    order = sorted(specs, key=lambda t: (t != "Master", t))
    return [
        pod_set(t.lower(), _int(specs[t].get("replicas"), 1), specs[t].get("template") or {})
        for t in order
    ]


def _lws(obj: Mapping[str, Any]) -> list[PodSet]:
    """One group (Kueue makes a Workload per group). With a leaderTemplate: `leader` (1 pod)
    and `worker` (size - 1 pods, kept even at 0); without one, every pod of the group is the
    worker template in one pod set `main` of `size` pods (Kueue's podSets for LWS)."""
    spec = (obj.get("spec") or {}).get("leaderWorkerTemplate") or {}
    size = _int(spec.get("size"), 1)
    worker = spec.get("workerTemplate") or {}
    leader = spec.get("leaderTemplate")
    if leader is None:
        return [pod_set("main", size, worker)]
    return [pod_set("leader", 1, leader), pod_set("worker", size - 1, worker)]


def _deployment(obj: Mapping[str, Any]) -> list[PodSet]:
    """Kueue's pod integration admits each replica as a Workload of one pod."""
    return [pod_set("main", 1, (obj.get("spec") or {}).get("template") or {})]


def _pod(obj: Mapping[str, Any]) -> list[PodSet]:
    return [pod_set("main", 1, {"metadata": obj.get("metadata"), "spec": obj.get("spec")})]


def _vcjob(obj: Mapping[str, Any]) -> list[PodSet]:
    return [
        pod_set(str(task.get("name", f"task{i}")), _int(task.get("replicas"), 1), task["template"])
        for i, task in enumerate((obj.get("spec") or {}).get("tasks") or [])
    ]


READERS = {
    ("batch", "Job"): _job,
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("kubeflow.org", "PyTorchJob"): _pytorchjob,
    ("batch.volcano.sh", "Job"): _vcjob,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _lws,
    ("apps", "Deployment"): _deployment,
    ("", "Pod"): _pod,
}


def from_manifest(obj: Mapping[str, Any]) -> Workload:
    """The Workload Kueue (or Volcano) would make of one submitted object."""
    if not isinstance(obj, Mapping):
        raise WorkloadError("a manifest must be a mapping with apiVersion and kind")
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    group = api_version.rpartition("/")[0]
    reader = READERS.get((group, kind))
    if reader is None:
        known = ", ".join(f"{g + '/' if g else ''}{k}" for g, k in READERS)
        raise WorkloadError(f"cannot explain {api_version} {kind}; supported: {known}")
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    try:
        pod_sets = reader(obj)
    except (KeyError, TypeError, ValueError) as exc:
        raise WorkloadError(f"{kind} {meta.get('name', '?')}: unreadable spec ({exc})") from None
    if not pod_sets:
        raise WorkloadError(f"{kind} {meta.get('name', '?')} has no pods")
    volcano = group == "batch.volcano.sh"
    spec = obj.get("spec") or {}
    pod_meta = _template_meta(obj)
    scheduler = KUEUE
    queue = labels.get(KUEUE_QUEUE)
    min_available = None
    if volcano:
        scheduler, queue = VOLCANO, spec.get("queue", "default")
        min_available = _int(spec.get("minAvailable"), sum(p.count for p in pod_sets))
    elif queue is None and (
        (pod_meta.get("annotations") or {}).get(VOLCANO_QUEUE) or _scheduler_name(obj) == VOLCANO
    ):
        scheduler = VOLCANO
        queue = (pod_meta.get("annotations") or {}).get(VOLCANO_QUEUE, "default")
        min_available = _int(annotations.get(VOLCANO_MIN_MEMBER), sum(p.count for p in pod_sets))
    elif queue is None:
        scheduler = DEFAULT
    tier = labels.get(KUEUE_PRIORITY)
    pod_class = _priority_class(obj)
    return Workload(
        kind=kind,
        name=str(meta.get("name", "")),
        namespace=meta.get("namespace"),
        pod_sets=tuple(pod_sets),
        queue=queue,
        tier=tier or pod_class,
        scheduler=scheduler,
        min_available=min_available,
        tier_from_pod=tier is None and pod_class is not None,
    )


def _templates(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every pod template of the object (for scheduler name and pod annotations)."""
    spec = obj.get("spec") or {}
    kind = obj.get("kind")
    if kind == "Pod":
        return [obj]
    if "template" in spec:
        return [spec["template"]]
    if "replicatedJobs" in spec:
        return [
            ((r.get("template") or {}).get("spec") or {}).get("template") or {}
            for r in spec["replicatedJobs"]
        ]
    if "pytorchReplicaSpecs" in spec:
        return [s.get("template") or {} for s in spec["pytorchReplicaSpecs"].values()]
    if "leaderWorkerTemplate" in spec:
        lwt = spec["leaderWorkerTemplate"]
        return [t for t in (lwt.get("leaderTemplate"), lwt.get("workerTemplate")) if t]
    if "tasks" in spec:
        return [t.get("template") or {} for t in spec["tasks"]]
    return []


def _template_meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    found = _templates(obj)
    return (found[0].get("metadata") or {}) if found else {}


def _scheduler_name(obj: Mapping[str, Any]) -> str:
    found = _templates(obj)
    return str(((found[0].get("spec") or {}).get("schedulerName")) or "") if found else ""


def _priority_class(obj: Mapping[str, Any]) -> str | None:
    found = _templates(obj)
    if not found:
        return None
    value = (found[0].get("spec") or {}).get("priorityClassName")
    return str(value) if value else None
