"""RayCluster, RayJob and RayService objects as a user writes them by hand for the fleet: the
Kueue queue label, per group a card selector, the pool's tolerations and the container's
requests. The sim tests submit them to the real Kueue and KubeRay operator
(tests/harness/simcluster/kuberay.py); nothing here comes from hetgitops' Ray templates, so the
tests built on it say what the upstream systems do with plain objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
LABEL = "hetgitops.io/sim-ray"  # every object made here carries it (cleanup selects on it)
RAY_IMAGE = "rayproject/ray:2.46.0"
RAY_VERSION = "2.46.0"


@dataclass(frozen=True)
class Group:
    """One Ray node group: the head (replicas 1) or a worker group."""

    name: str
    requests: Mapping[str, str]
    replicas: int = 1
    num_of_hosts: int = 1
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[Mapping[str, str]] = ()
    ray_start_params: Mapping[str, str] = field(default_factory=dict)


def _template(group: Group, container: str) -> dict[str, Any]:
    resources = dict(sorted(group.requests.items()))
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": container,
                "image": RAY_IMAGE,
                "resources": {"requests": resources, "limits": dict(resources)},
            }
        ]
    }
    if group.node_selector:
        spec["nodeSelector"] = dict(group.node_selector)
    if group.tolerations:
        spec["tolerations"] = [dict(t) for t in group.tolerations]
    return {"spec": spec}


def cluster_spec(head: Group, workers: Sequence[Group]) -> dict[str, Any]:
    """A RayClusterSpec: the head group and one worker group per `workers` entry, each at a
    fixed size (min = max = replicas: no autoscaling, which Kueue refuses without elastic
    workload slicing)."""
    return {
        "rayVersion": RAY_VERSION,
        "headGroupSpec": {
            "rayStartParams": dict(head.ray_start_params),
            "template": _template(head, "ray-head"),
        },
        "workerGroupSpecs": [
            {
                "groupName": w.name,
                "replicas": w.replicas,
                "minReplicas": w.replicas,
                "maxReplicas": w.replicas,
                **({"numOfHosts": w.num_of_hosts} if w.num_of_hosts > 1 else {}),
                "rayStartParams": dict(w.ray_start_params),
                "template": _template(w, "ray-worker"),
            }
            for w in workers
        ],
    }


def _metadata(name: str, namespace: str, queue: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue, LABEL: "true"}}


def ray_cluster(
    name: str, namespace: str, queue: str, head: Group, workers: Sequence[Group]
) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": _metadata(name, namespace, queue),
        "spec": cluster_spec(head, workers),
    }


def ray_job(
    name: str,
    namespace: str,
    queue: str,
    head: Group,
    workers: Sequence[Group],
    *,
    submitter: Group | None = None,
) -> dict[str, Any]:
    """A RayJob in K8sJobMode (KubeRay's default) that deletes its cluster when done, as Kueue's
    webhook requires (rayjob_webhook.go:146-148); `submitter` gives the submitter Job's pod
    template (else Kueue counts KubeRay's default submitter: 500m cpu, 200Mi)."""
    spec: dict[str, Any] = {
        "entrypoint": "python -c 'import ray; ray.init()'",
        "submissionMode": "K8sJobMode",
        "shutdownAfterJobFinishes": True,
        "rayClusterSpec": cluster_spec(head, workers),
    }
    if submitter is not None:
        template = _template(submitter, "ray-job-submitter")
        template["spec"]["restartPolicy"] = "Never"
        spec["submitterPodTemplate"] = template
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": _metadata(name, namespace, queue),
        "spec": spec,
    }


def ray_service(
    name: str, namespace: str, queue: str, head: Group, workers: Sequence[Group]
) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": _metadata(name, namespace, queue),
        "spec": {
            "serveConfigV2": "applications: []\n",
            "rayClusterConfig": cluster_spec(head, workers),
        },
    }
