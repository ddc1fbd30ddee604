"""What a submitted workload asks, as Kueue sees it: pod sets of `count` pods, each with its
requests in Kueue's integers (cpu in milli-units, `quota_plan.kueue_amount`), node selector and
tolerations. Built from command-line options or from a manifest of any supported kind."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.explain import podspec
from hetgitops.explain.manifest import Field, WorkloadError

KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
TAS_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
TAS_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TAS_GROUP = "kueue.x-k8s.io/podset-group-name"
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
RAY_VOLCANO_QUEUE = "volcano.sh/queue-name"  # read by KubeRay's --batch-scheduler=volcano
VOLCANO_MIN_MEMBER = "scheduling.k8s.io/group-min-member"
KUEUE, VOLCANO, DEFAULT = "kueue", "volcano", "default"
# koord-scheduler's pods name their ElasticQuota in a pod label (hetgitops jobs writes it on
# the pod template; apis/extension/elastic_quota.go LabelQuotaName).
KOORDINATOR, KOORD_SCHEDULER = "koordinator", "koord-scheduler"
KOORD_QUOTA = "quota.scheduling.koordinator.sh/name"
# Kubernetes' built-in PriorityClasses (every cluster has them, values from
# k8s.io/api/scheduling/v1 SystemCriticalPriority): a pod's priorityClassName may name them
# and Kueue reads their value like any PriorityClass's.
SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2000000000,
    "system-node-critical": 2000001000,
}


pod_requests = podspec.pod_requests

__all__ = ["Field", "PodSet", "Workload", "WorkloadError", "from_manifest", "pod_requests"]


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
    # `resourceClaims[].resourceClaimTemplateName`: DRA claims Kueue charges through its
    # deviceClassMappings (explain/explanation.py resolves them against the policy).
    claims: tuple[str, ...] = ()
    # `resourceClaims[].resourceClaimName`: ResourceClaims the pods name directly, which Kueue's
    # DRA integration refuses (explain/explanation.py).
    direct_claims: tuple[str, ...] = ()
    # quota.scheduling.koordinator.sh/name of the pods: under koord-scheduler each pod counts
    # in its own ElasticQuota (a RayJob's worker group on another card type: another tree).
    quota: str | None = None

    def total(self, resource: str) -> int:
        return self.requests.get(resource, 0) * self.count


@dataclass(frozen=True)
class Workload:
    """One admission unit: Kueue admits all its pod sets at once or none."""

    kind: str
    name: str
    namespace: str | None
    pod_sets: tuple[PodSet, ...]
    queue: str | None = None  # Kueue LocalQueue (label), Volcano queue or Koordinator quota
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


def pod_set(name: str, count: int, template: Field) -> PodSet:
    meta, spec = template["metadata"], template["spec"]
    annotations = meta["annotations"].strings()
    topology = TAS_REQUIRED in annotations or TAS_PREFERRED in annotations
    return PodSet(
        name=name,
        count=count,
        requests=podspec.requests(spec),
        node_selector=spec["nodeSelector"].strings(),
        tolerations=podspec.tolerations(spec),
        required_topology=annotations.get(TAS_REQUIRED),
        preferred_topology=annotations.get(TAS_PREFERRED),
        node_affinity=podspec.required_affinity(spec),
        group=annotations.get(TAS_GROUP) if topology else None,
        claims=_claims(spec.mapping()),
        direct_claims=_claims(spec.mapping(), "resourceClaimName"),
        quota=meta["labels"].strings().get(KOORD_QUOTA),
    )


def _claims(spec: Mapping[str, Any], key: str = "resourceClaimTemplateName") -> tuple[str, ...]:
    """The pod's `resourceClaims[].<key>`: the templates it claims, or the claims it names."""
    claims = spec.get("resourceClaims")
    listed = claims if isinstance(claims, list) else []
    return tuple(str(c[key]) for c in listed if isinstance(c, Mapping) and c.get(key))


def _job_pods(spec: Field) -> int:
    """A Job's pod set count: parallelism, at most completions (Kueue's job integration)."""
    parallelism = spec["parallelism"].count(1)
    completions = spec["completions"]
    return parallelism if completions.absent else min(parallelism, completions.count(0))


def _job(obj: Field) -> list[PodSet]:
    spec = obj["spec"]
    return [pod_set("main", _job_pods(spec), spec["template"])]


def _jobset(obj: Field) -> list[PodSet]:
    found = []
    for replicated in obj["spec"]["replicatedJobs"].each():
        job_spec = replicated["template"]["spec"]
        count = replicated["replicas"].count(1) * _job_pods(job_spec)
        name = replicated["name"].text() or replicated["name"].refuse("required")
        found.append(pod_set(name, count, job_spec["template"]))
    return found


def _pytorchjob(obj: Field) -> list[PodSet]:
    """Pod sets named by replica type in lower case, Master first (Kueue's kubeflow adapter)."""
    specs = dict(obj["spec"]["pytorchReplicaSpecs"].items())
    order = sorted(specs, key=lambda t: (t != "Master", t))
    return [pod_set(t.lower(), specs[t]["replicas"].count(1), specs[t]["template"]) for t in order]


def _lws(obj: Field) -> list[PodSet]:
    """One group (Kueue makes a Workload per group). With a leaderTemplate: `leader` (1 pod)
    and `worker` (size - 1 pods, kept even at 0); without one, every pod of the group is the
    worker template in one pod set `main` of `size` pods (Kueue's podSets for LWS)."""
    obj["spec"]["replicas"].count(1)  # groups: each is its own Workload
    spec = obj["spec"]["leaderWorkerTemplate"]
    size = spec["size"].count(1, least=1)
    worker, leader = spec["workerTemplate"], spec["leaderTemplate"]
    if leader.absent:
        return [pod_set("main", size, worker)]
    return [pod_set("leader", 1, leader), pod_set("worker", size - 1, worker)]


def _deployment(obj: Field) -> list[PodSet]:
    """Kueue's pod integration admits each replica as a Workload of one pod."""
    obj["spec"]["replicas"].count(1)
    return [pod_set("main", 1, obj["spec"]["template"])]


def _pod(obj: Field) -> list[PodSet]:
    return [pod_set("main", 1, obj)]


def _vcjob(obj: Field) -> list[PodSet]:
    return [
        pod_set(task["name"].text(f"task{i}") or "", task["replicas"].count(1), task["template"])
        for i, task in enumerate(obj["spec"]["tasks"].each())
    ]


# Containers KubeRay adds to the head pod at build time, which Kueue counts in the head pod set:
# the autoscaler sidecar (kueue pkg/controller/jobs/raycluster/common.go:98-106, 159-185) and a
# SidecarMode submitter (rayjob_controller.go:252-263, 313-330). Kueue's default submitter
# (K8sJobMode without submitterPodTemplate) asks the same requests (ibid. 265-286).
AUTOSCALER = {"requests": {"cpu": "500m", "memory": "512Mi"}}
SUBMITTER = {
    "requests": {"cpu": "500m", "memory": "200Mi"},
    "limits": {"cpu": "1", "memory": "1Gi"},
}


def _with_container(template: Field, name: str, resources: Mapping[str, Any]) -> Field:
    """`template` with one more container, as Kueue builds the head pod set."""
    value = dict(template.mapping())
    spec = dict(Field(value.get("spec"), (*template.path, "spec")).mapping())
    spec["containers"] = [*spec.get("containers", []), {"name": name, "resources": resources}]
    return Field(dict(value, spec=spec), template.path, template.source)


def _ray_cluster(cluster: Field, *, sidecar_submitter: bool = False) -> list[PodSet]:
    """`head` (1 pod) and one pod set per worker group named after it, `replicas x numOfHosts`
    pods (raycluster/common.go:60-128). Absent `replicas` is 0: the KubeRay CRD defaults it
    (ray.io_rayclusters.yaml), so Kueue's own nil-means-1 never applies to a created object."""
    head = cluster["headGroupSpec"]["template"]
    if cluster["enableInTreeAutoscaling"].value is True:
        head = _with_container(head, "autoscaler", AUTOSCALER)
    if sidecar_submitter:
        head = _with_container(head, "ray-job-submitter", SUBMITTER)
    found = [pod_set("head", 1, head)]
    for group in cluster["workerGroupSpecs"].each():
        name = group["groupName"].text() or group["groupName"].refuse("required")
        if name == "head":
            group["groupName"].refuse('"head" is reserved for the head group (Kueue webhook)')
        hosts = group["numOfHosts"].count(1)
        count = group["replicas"].count(0) * (hosts if hosts > 1 else 1)
        found.append(pod_set(name, count, group["template"]))
    return found


def _raycluster(obj: Field) -> list[PodSet]:
    return _ray_cluster(obj["spec"])


def _rayservice(obj: Field) -> list[PodSet]:
    return _ray_cluster(obj["spec"]["rayClusterConfig"])


def _rayjob(obj: Field) -> list[PodSet]:
    """The cluster's pod sets, then in K8sJobMode (the CRD's default) a `submitter` of one pod:
    its submitterPodTemplate, else KubeRay's default submitter (rayjob_controller.go:133-155)."""
    spec = obj["spec"]
    if spec["rayClusterSpec"].absent:
        spec["rayClusterSpec"].refuse("required: Kueue refuses a RayJob on an existing cluster")
    mode = spec["submissionMode"].text("K8sJobMode")
    found = _ray_cluster(spec["rayClusterSpec"], sidecar_submitter=mode == "SidecarMode")
    if mode == "K8sJobMode":
        template = spec["submitterPodTemplate"]
        if template.absent:
            template = Field({"spec": {"containers": [{"resources": SUBMITTER}]}}, template.path)
        found.append(pod_set("submitter", 1, template))
    return found


READERS: dict[tuple[str, str], Callable[[Field], list[PodSet]]] = {
    ("batch", "Job"): _job,
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("kubeflow.org", "PyTorchJob"): _pytorchjob,
    ("batch.volcano.sh", "Job"): _vcjob,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _lws,
    ("apps", "Deployment"): _deployment,
    ("", "Pod"): _pod,
    ("ray.io", "RayJob"): _rayjob,
    ("ray.io", "RayCluster"): _raycluster,
    ("ray.io", "RayService"): _rayservice,
}


def from_manifest(manifest: Mapping[str, Any] | Field) -> Workload:
    """The Workload Kueue (or Volcano) would make of one submitted object; an object the API
    server would refuse (a wrong type, a negative count, a fractional GPU) is a located
    WorkloadError."""
    obj = manifest if isinstance(manifest, Field) else Field(manifest)
    if not isinstance(obj.value, Mapping):
        obj.refuse("a manifest must be a mapping with apiVersion and kind")
    api_version, kind = obj["apiVersion"].text("") or "", obj["kind"].text("") or ""
    group = api_version.rpartition("/")[0]
    reader = READERS.get((group, kind))
    if reader is None:
        known = ", ".join(f"{g + '/' if g else ''}{k}" for g, k in READERS)
        if not api_version or not kind:
            missing = " and ".join(
                n for n, v in (("apiVersion", api_version), ("kind", kind)) if not v
            )
            obj["kind" if not kind else "apiVersion"].refuse(
                f"no {missing}: not a Kubernetes object; explain reads {known}"
            )
        obj["kind"].refuse(f"cannot explain {api_version} {kind}; supported: {known}")
    meta = obj["metadata"]
    labels = meta["labels"].strings()
    meta["annotations"].strings()  # a map of strings, like the labels
    name = meta["name"].text("") or ""
    pod_sets = reader(obj)
    if not pod_sets:
        obj["spec"].refuse(f"{kind} {name or '?'} has no pods")
    pods = sum(p.count for p in pod_sets)
    template = _first_template(obj)
    pod_annotations = template["metadata"]["annotations"].strings()
    scheduler = KUEUE
    queue = labels.get(KUEUE_QUEUE)
    min_available = None
    if group == "batch.volcano.sh":
        scheduler, queue = VOLCANO, obj["spec"]["queue"].text("default")
        min_available = obj["spec"]["minAvailable"].count(pods)
    elif queue is None and group == "ray.io" and labels.get(RAY_VOLCANO_QUEUE):
        # KubeRay's Volcano batch scheduler: one PodGroup in the labelled queue, its
        # minMember without the submitter (volcano_scheduler.go:73-90, 253-258).
        scheduler, queue = VOLCANO, labels[RAY_VOLCANO_QUEUE]
        min_available = sum(p.count for p in pod_sets if p.name != "submitter")
    elif queue is None and (
        pod_annotations.get(VOLCANO_QUEUE) or template["spec"]["schedulerName"].text() == VOLCANO
    ):
        scheduler = VOLCANO
        queue = pod_annotations.get(VOLCANO_QUEUE, "default")
        min_available = _min_member(meta["annotations"][VOLCANO_MIN_MEMBER], pods)
    elif queue is None and template["spec"]["schedulerName"].text() == KOORD_SCHEDULER:
        scheduler = KOORDINATOR
        # the pod's label: a label on the Job itself never reaches its pods
        queue = template["metadata"]["labels"].strings().get(KOORD_QUOTA)
    elif queue is None:
        scheduler = DEFAULT
    tier = labels.get(KUEUE_PRIORITY)
    pod_class = template["spec"]["priorityClassName"].text() or None
    return Workload(
        kind=kind,
        name=name,
        namespace=meta["namespace"].text(),
        pod_sets=tuple(pod_sets),
        queue=queue,
        tier=tier or pod_class,
        scheduler=scheduler,
        min_available=min_available,
        tier_from_pod=tier is None and pod_class is not None,
    )


def _min_member(annotation: Field, default: int) -> int:
    """Volcano's gang size annotation: a string holding a non-negative whole number."""
    text = annotation.text()
    if text is None:
        return default
    if not text.strip().isdigit():
        annotation.refuse(f"{text!r} is not a whole number of pods")
    return Field(int(text), annotation.path, annotation.source).count(default)


def _first_template(obj: Field) -> Field:
    """The object's first pod template (for scheduler name, pod annotations, priority)."""
    spec = obj["spec"]
    if obj["kind"].value == "Pod":
        return obj
    if "template" in spec.mapping():
        return spec["template"]
    if "replicatedJobs" in spec.mapping():
        return spec["replicatedJobs"][0]["template"]["spec"]["template"]
    if "pytorchReplicaSpecs" in spec.mapping():
        specs = dict(spec["pytorchReplicaSpecs"].items())
        return next(iter(specs.values()))["template"] if specs else Field(None)
    if "leaderWorkerTemplate" in spec.mapping():
        lwt = spec["leaderWorkerTemplate"]
        return lwt["workerTemplate"] if lwt["leaderTemplate"].absent else lwt["leaderTemplate"]
    if "tasks" in spec.mapping():
        return spec["tasks"][0]["template"]
    for key in ("rayClusterSpec", "rayClusterConfig"):
        if key in spec.mapping():
            return spec[key]["headGroupSpec"]["template"]
    if "headGroupSpec" in spec.mapping():
        return spec["headGroupSpec"]["template"]
    return Field(None)
