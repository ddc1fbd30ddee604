"""Compile stage, `monitoring` target: what the exporters need for the joins to work.

Helm values beside the agent values (not applied): without them the rules are valid and
silent. kube-state-metrics reports no node label unless allowlisted
(kubernetes/kube-state-metrics#1968); Kueue reports per-queue quota and usage only with
`metrics.enableClusterQueueResources`; dcgm-exporter's own `namespace`/`pod` labels (the
workload's, from its Kubernetes mapping) survive the scrape only with `honorLabels`.
"""

from __future__ import annotations

from typing import Any

from hetgitops.compilers.monitoring import names
from hetgitops.model.policy import Policy
from hetgitops.plan import node_labels as labels

VOLCANO_QUEUE_STATES = ("Open", "Closed", "Closing", "Unknown")


def node_label_keys(policy: Policy) -> list[str]:
    """Exactly the node label keys the policy defines, plus the two mig-manager reports."""
    prefix = labels.domain(policy)
    keys = set(labels.label_keys(policy))
    keys |= {f"{prefix}/{name}" for name in labels.IDENTITY_LABELS}
    keys |= {names.MIG_CONFIG_LABEL, names.MIG_STATE_LABEL}
    return sorted(keys)


def _volcano_queue_state() -> dict[str, Any]:
    """kube-state-metrics custom resource state: `kube_volcano_queue_state{queue,state}`."""
    return {
        "kind": "CustomResourceStateMetrics",
        "spec": {
            "resources": [
                {
                    "groupVersionKind": {
                        "group": "scheduling.volcano.sh",
                        "version": "v1beta1",
                        "kind": "Queue",
                    },
                    "metricNamePrefix": "kube_volcano_queue",
                    "labelsFromPath": {"queue": ["metadata", "name"]},
                    "metrics": [
                        {
                            "name": "state",
                            "help": "Volcano Queue status.state",
                            "each": {
                                "type": "StateSet",
                                "stateSet": {
                                    "labelName": "state",
                                    "path": ["status", "state"],
                                    "list": list(VOLCANO_QUEUE_STATES),
                                },
                            },
                        }
                    ],
                }
            ]
        },
    }


def kube_state_metrics_values(policy: Policy, *, volcano: bool) -> dict[str, Any]:
    """prometheus-community/kube-state-metrics chart values (under `kube-state-metrics:` in
    kube-prometheus-stack)."""
    values: dict[str, Any] = {
        "metricLabelsAllowlist": [f"nodes=[{','.join(node_label_keys(policy))}]"],
    }
    if volcano:
        values["customResourceState"] = {"enabled": True, "config": _volcano_queue_state()}
        values["rbac"] = {
            "extraRules": [
                {
                    "apiGroups": ["scheduling.volcano.sh"],
                    "resources": ["queues"],
                    "verbs": ["list", "watch"],
                }
            ]
        }
    return values


def gpu_operator_values(*, dra: bool = False) -> dict[str, Any]:
    """GPU Operator chart values for its dcgm-exporter: a ServiceMonitor that keeps the
    exporter's own `namespace`/`pod` labels (honorLabels), so utilisation joins to teams; with
    a pool on DRA also `KUBERNETES_ENABLE_DRA` (dcgm-exporter `pkg/cmd/app.go:329-334`, off by
    default), so a GPU a claim gives a pod carries the pod's labels (`recording._dra_allocated`)."""
    exporter: dict[str, Any] = {"serviceMonitor": {"enabled": True, "honorLabels": True}}
    if dra:
        exporter["env"] = [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}]
    return {"dcgmExporter": exporter}


def kueue_values() -> dict[str, Any]:
    """Kueue chart values: its metrics Service scraped by a ServiceMonitor."""
    return {"enablePrometheus": True}


def kueue_configuration() -> dict[str, Any]:
    """The `metrics` stanza to merge into Kueue's Configuration (config.kueue.x-k8s.io, the
    chart's managerConfig.controllerManagerConfigYaml): per-ClusterQueue quota and usage."""
    return {"metrics": {"enableClusterQueueResources": True}}
