"""Plan stage: what KubeRay v1.6.2 and Kueue v0.19.2 make of a Ray profile, computed once for
the checks, the job compiler and explain alike: kinds, name limits, pod sets, and which
accelerators Ray sees on its own.

Upstream (pinned modules): KubeRay `ray-operator@v1.6.2`, Kueue `kueue@v0.19.2`.
"""

from __future__ import annotations

import re

from hetgitops.model.policy import CardType, WorkloadProfile

RAY_FRAMEWORKS = frozenset({"rayjob", "raycluster", "rayservice"})
# framework -> (apiVersion, kind)
RAY_KINDS = {
    "rayjob": ("ray.io/v1", "RayJob"),
    "raycluster": ("ray.io/v1", "RayCluster"),
    "rayservice": ("ray.io/v1", "RayService"),
}
# controllers/ray/utils/constant.go:299-305: MaxRayClusterNameLength = 53; RayJob and RayService
# create RayClusters named `<name>-<5 random>`, so 53 - 6 = 47 (validation.go:32, :280, :379).
MAX_NAME = {"raycluster": 53, "rayjob": 47, "rayservice": 47}
# Kueue pkg/controller/jobframework/constants.go:21 (MaxPodSets = 18), the Workload CRD's
# podSets MaxItems=18 (apis/kueue/v1beta2/workload_types.go:36).
MAX_POD_SETS = 18
# rayjob_controller.go:288-310: a K8sJobMode RayJob's Workload carries a `submitter` pod set
# after head and worker groups; raycluster/common.go:187 (ExpectedPodSetsCount = groups + 1)
# is what the webhook counts (:314), so the submitter is not counted there.
SUBMITTER_MODE = "K8sJobMode"
HEAD, SUBMITTER, DEFAULT_GROUP = "head", "submitter", "workers"
# Kueue's elastic workload slicing annotation (pkg/workloadslicing/workloadslicing.go:54-66);
# its feature gate ElasticJobsViaWorkloadSlices is on by default from 0.18
# (pkg/features/kube_features.go:712-715).
ELASTIC_ANNOTATION = "kueue.x-k8s.io/elastic-job"
ELASTIC_DEFAULT_ON = (0, 18)
# KubeRay's Volcano batch scheduler reads these labels off the RayCluster / RayJob
# (controllers/ray/batchscheduler/volcano/volcano_scheduler.go:31, :253-258;
# utils/constant.go:55).
VOLCANO_QUEUE_LABEL = "volcano.sh/queue-name"
VOLCANO_PRIORITY_LABEL = "ray.io/priority-class-name"
# controllers/ray/utils/constant.go:105-110
GCS_PORT, DASHBOARD_PORT, CLIENT_PORT = 6379, 8265, 10001
_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")
# controllers/ray/common/pod.go:46-49: the only non-GPU limits KubeRay turns into Ray resources.
_CUSTOM = {"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}
# Ray's own accelerator managers' resource names for what KubeRay does not map
# (ray-project/ray python/ray/_private/accelerators: npu.py "NPU" for Huawei Ascend, hpu.py
# "HPU" for Intel Gaudi, intel_gpu.py "GPU" for Intel GPUs, whose device plugin's
# gpu.intel.com/i915 does not end in "gpu").
VENDOR_RAY_RESOURCE = {"huawei": "NPU"}
RESOURCE_RAY = {"habana.ai/gaudi": "HPU"}
GPU_PREFIXES = ("gpu.intel.com/",)


def is_ray(profile: WorkloadProfile) -> bool:
    return profile.framework in RAY_FRAMEWORKS


def ray_sees_gpu(resource: str) -> bool:
    """KubeRay's `IsGPUResourceKey` (controllers/ray/utils/resources.go:8-17): a limit whose
    name ends in `gpu` or is a plain MIG profile becomes `ray start --num-gpus`."""
    return resource.endswith("gpu") or _MIG.search(resource) is not None


def ray_sees(resource: str) -> bool:
    """Whether KubeRay declares this accelerator to Ray by itself (pod.go:1023-1070)."""
    return ray_sees_gpu(resource) or resource in _CUSTOM


def ray_resource_name(profile: WorkloadProfile, card: CardType, resource: str) -> str | None:
    """The Ray resource a template must declare for `resource`: None when Ray sees it; `GPU`
    (as `--num-gpus`) for an NVIDIA or Intel GPU resource KubeRay's pattern misses
    (`mig-1g.10gb+me`, `gpu.intel.com/i915`); else the profile's `ray.resourceName`, else
    Ray's name for it (Ascend `NPU`, Gaudi `HPU`); "" when none is known."""
    if ray_sees(resource):
        return None
    if card.vendor == "nvidia" or resource.startswith(GPU_PREFIXES):
        return "GPU"
    named = profile.ray.resource_name if profile.ray else None
    return named or RESOURCE_RAY.get(resource) or VENDOR_RAY_RESOURCE.get(card.vendor, "")


def pod_set_count(profile: WorkloadProfile, groups: int) -> int:
    """Pod sets of the Workload: head, one per worker group, and a RayJob's submitter."""
    return 1 + groups + (1 if submitter(profile) else 0)


def submitter(profile: WorkloadProfile) -> bool:
    mode = profile.ray.submission_mode if profile.ray else SUBMITTER_MODE
    return profile.framework == "rayjob" and mode == SUBMITTER_MODE


def ray_name(profile: WorkloadProfile, card: str | None) -> str:
    """The Ray object's name: `<profile>-<card>` per card type, `<profile>` for heterogeneous
    groups. Not shortened: KubeRay derives its RayCluster, Service and pod names from it, so a
    name over MAX_NAME is a `ray-name-too-long` finding instead."""
    return profile.name if card is None else f"{profile.name}-{card}"
