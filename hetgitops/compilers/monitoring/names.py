"""Compile stage, `monitoring` target: the exporter series the rules read, by name and label.

One table, so the rules, the generated promtool tests and the dashboard check agree on every
name. Sources (see docs/targets/monitoring.md for the links):
- kube-state-metrics: `kube_node_labels` (labels only with `--metric-labels-allowlist`,
  kubernetes/kube-state-metrics#1968), `kube_node_status_allocatable`,
  `kube_node_spec_unschedulable`, `kube_pod_container_resource_requests`; label and resource
  names sanitised to `[a-zA-Z0-9_]` (`nvidia.com/gpu` -> `nvidia_com_gpu`).
- dcgm-exporter 4.x default counters: `DCGM_FI_DEV_GPU_UTIL` (percent, not reported for MIG
  instances, NVIDIA/dcgm-exporter#216 #430) and `DCGM_FI_PROF_GR_ENGINE_ACTIVE` (ratio, per MIG
  instance with `GPU_I_PROFILE`); labels `gpu, UUID, modelName, Hostname` (= the node name via
  NODE_NAME, dcgm-exporter#129) and, with Kubernetes mapping, `namespace, pod, container`.
- Kueue (site/content/en/docs/reference/metrics.md, v0.19): every series has `replica_role`
  (leader|follower|standalone); `kueue_pending_workloads{cluster_queue,status}`,
  `kueue_admission_wait_time_seconds{cluster_queue,priority_class}`,
  `kueue_cluster_queue_status{cluster_queue,status}` and, with
  `metrics.enableClusterQueueResources`, `kueue_cluster_queue_{nominal_quota,resource_usage}
  {cohort,cluster_queue,flavor,resource}`.
- Volcano (docs/design/metrics.md): `volcano_queue_allocated_scalar_resources{queue_name,
  resource}`; a Queue's `status.state` is no metric of Volcano's, so kube-state-metrics' custom
  resource state config (emitted in the exporter values) makes `kube_volcano_queue_state`.
"""

from __future__ import annotations

import re

# kube-state-metrics
NODE_LABELS = "kube_node_labels"
NODE_ALLOCATABLE = "kube_node_status_allocatable"
NODE_UNSCHEDULABLE = "kube_node_spec_unschedulable"
POD_REQUESTS = "kube_pod_container_resource_requests"
POD_PHASE = "kube_pod_status_phase"
VOLCANO_QUEUE_STATE = "kube_volcano_queue_state"  # custom resource state (exporters.py)
# dcgm-exporter
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
# Kueue
PENDING = "kueue_pending_workloads"
ADMISSION_WAIT = "kueue_admission_wait_time_seconds"
CQ_STATUS = "kueue_cluster_queue_status"
NOMINAL = "kueue_cluster_queue_nominal_quota"
USAGE = "kueue_cluster_queue_resource_usage"
# Volcano
VOLCANO_ALLOCATED = "volcano_queue_allocated_scalar_resources"

# Every exporter series a rule or a dashboard may name (histograms by their base name).
EXPORTER_SERIES = frozenset(
    {
        NODE_LABELS,
        NODE_ALLOCATABLE,
        NODE_UNSCHEDULABLE,
        POD_REQUESTS,
        POD_PHASE,
        VOLCANO_QUEUE_STATE,
        GPU_UTIL,
        GR_ENGINE_ACTIVE,
        PENDING,
        ADMISSION_WAIT,
        CQ_STATUS,
        NOMINAL,
        USAGE,
        VOLCANO_ALLOCATED,
    }
)
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")

# Kueue HA: the follower replicas report too; the leader (or a standalone replica) counts.
NOT_FOLLOWER = 'replica_role!="follower"'
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_STATE_LABEL = "nvidia.com/mig.config.state"
MIG_SUCCESS = "success"

_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def sanitise(name: str) -> str:
    """kube-state-metrics' label and resource name sanitising."""
    return _INVALID.sub("_", name)


def node_label(key: str) -> str:
    """The `kube_node_labels` label a node label becomes: `label_<sanitised key>`."""
    return "label_" + sanitise(key)


def regex_of(values: list[str]) -> str:
    """A PromQL regex matching exactly `values` (dots and the like escaped)."""
    return "|".join(re.sub(r"([.+*?()\[\]{}|^$\\])", r"\\\\\1", v) for v in values)
