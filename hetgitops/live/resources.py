"""Live stage: where each kind hetgitops reads lives in the API, named once (drift, import,
explain and the diff blast radius all LIST through these)."""

from __future__ import annotations

from hetgitops.live.client import Resource

KUEUE_API = "kueue.x-k8s.io/v1beta2"  # what a fleet without `kueueApiVersion` renders
VOLCANO_GROUP = "scheduling.volcano.sh"

NODES = Resource("", "v1", "nodes", "Node", False)
PODS = Resource("", "v1", "pods", "Pod", True)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
JOBS = Resource("batch", "v1", "jobs", "Job", True)
EVENTS = Resource("", "v1", "events", "Event", True)
PODGROUPS = Resource(VOLCANO_GROUP, "v1beta1", "podgroups", "PodGroup", True)
VOLCANO_QUEUES = Resource(VOLCANO_GROUP, "v1beta1", "queues", "Queue", False)
# The devices DRA drivers publish per node (Kubernetes 1.34+, k8s.io/api resource/v1
# types.go:98, ResourceSliceSpec).
RESOURCE_SLICES = Resource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
# Koordinator's quotas (koordinator v1.8.0 apis/thirdparty/scheduler-plugins, the ElasticQuota
# CRD of scheduler-plugins' group).
ELASTIC_QUOTAS = Resource(
    "scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas", "ElasticQuota", True
)
DEVICE_CLASSES = Resource("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
CLAIM_TEMPLATES = Resource(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True
)


def kueue(api_version: str, plural: str, kind: str, *, namespaced: bool) -> Resource:
    """A Kueue kind at the API version the fleet renders (`kueue.x-k8s.io/v1beta2`...)."""
    group, _, version = (api_version or KUEUE_API).partition("/")
    return Resource(group, version, plural, kind, namespaced)


def workloads(api_version: str) -> Resource:
    return kueue(api_version, "workloads", "Workload", namespaced=True)


def cluster_queues(api_version: str) -> Resource:
    return kueue(api_version, "clusterqueues", "ClusterQueue", namespaced=False)
