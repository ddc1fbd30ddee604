"""Adopt stage: Kueue's manager Configuration (kueue-manager-config) into what the policy says.

hetgitops does not render Kueue's Configuration: Kueue's installer owns it (the Helm chart's
`managerConfig.controllerManagerConfigYaml`, or the kustomize base's configMapGenerator), a
change to it takes a restart of the manager, and a GitOps tool applying it beside Helm would
fight over it. So import reads from it only what the policy depends on, into the Fleet's
`spec.kueue.configuration`: the integrations (the job-integration check warns about a profile
whose job kind Kueue would ignore) and whether fair sharing is on (fair-sharing-not-enabled
warns about weights that would do nothing). Every other queueing setting it makes is a
located finding (`import-setting-not-managed`) saying what it does to the policy's queues and
that it stays the installer's; the manager's own process settings are not reported. Fields
as Kueue v0.19.2's apis/config/v1beta1 and v1beta2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from hetgitops.adopt import fields
from hetgitops.adopt.findings import finding
from hetgitops.adopt.sources import Imported
from hetgitops.diagnostics import Diagnostic

GROUP = "config.kueue.x-k8s.io/"
DEFAULT_FRAMEWORKS = ["batch/job"]  # Kueue's SetDefaults_Configuration when none is listed
# Settings of the manager process itself (probes, metrics, webhook, leader election, client
# rates): nothing of the policy depends on them, so they stay the installer's without a word.
INFRASTRUCTURE = (
    "namespace",
    "health",
    "metrics",
    "webhook",
    "leaderElection",
    "controller",
    "clientConnection",
    "internalCertManagement",
    "pprofBindAddress",
    "tls",
)
# What a queueing setting does to the queues hetgitops renders (why a reviewer should know).
WHY = {
    "waitForPodsReady": "admission waits until a workload's pods are ready and evicts and "
    "requeues it after the timeout; explain does not model it",
    "manageJobsWithoutQueueName": "Kueue also holds jobs that name no LocalQueue",
    "managedJobsNamespaceSelector": "it chooses the namespaces whose queue-less jobs Kueue holds",
    "resources.excludeResourcePrefixes": "resources with these prefixes are not counted "
    "against any ClusterQueue's quota, whatever the policy gives them",
    "resources.transformations": "Kueue counts the transformed resources, not the ones the "
    "pods request: quota on a replaced input (a MIG slice, say) admits nothing",
    "resources.deviceClassMappings": "DRA device classes count as the mapped resources",
    "fairSharing.preemptionStrategies": "they decide which workloads fair-sharing preemption "
    "may evict",
    "admissionFairSharing": "LocalQueues are ordered by their decayed usage",
    "integrations.externalFrameworks": "Kueue manages these job kinds too",
    "integrations.podOptions": "it chooses which pods the pod integration holds",
    "integrations.labelKeysToCopy": "labels copied from jobs to their Workloads",
    "multiKueue": "MultiKueue's dispatching and garbage collection on the manager",
    "queueVisibility": "the pending-workloads visibility the manager serves",
    "objectRetentionPolicies": "finished Workloads are deleted after the retention",
    "featureGates": "Kueue's features switched on or off here",
}


def configurations(
    configmaps: Sequence[Imported], unreadable: list[Diagnostic] | None = None
) -> list[tuple[Imported, str, dict[str, Any]]]:
    """(ConfigMap, key, Configuration) for each data key that holds Kueue's Configuration;
    one that names Kueue's config group but cannot be read (bounded loader, typed) is a
    finding in `unreadable`."""
    found = []
    for item in configmaps:
        for key, text in (item.obj.get("data") or {}).items():
            if not isinstance(text, str) or GROUP not in text:
                continue
            doc, problem = fields.embedded(
                f"{item.span.file}#data.{key}", text, fields.KUEUE_CONFIG
            )
            if problem and unreadable is not None:
                unreadable.append(
                    finding(
                        "import-unreadable",
                        f"ConfigMap {item.namespace}/{item.name} data.{key}: a Kueue "
                        f"Configuration that cannot be read: {problem}; import reads none of it",
                        item.span,
                        path=f"data.{key}",
                    )
                )
            if (
                isinstance(doc, dict)
                and doc.get("kind") == "Configuration"
                and str(doc.get("apiVersion", "")).startswith(GROUP)
            ):
                found.append((item, str(key), doc))
    return found


def adopt_configuration(configmaps: Sequence[Imported], kueue: dict[str, Any]) -> list[Diagnostic]:
    """Fills `kueue` (the Fleet's spec.kueue) with the Configuration's `configuration`; more
    than one Configuration (two Kueue installs?) is reported and none is read."""
    unreadable: list[Diagnostic] = []
    found = configurations(configmaps, unreadable)
    if len(found) != 1:
        return unreadable + [
            finding(
                "import-setting-not-managed",
                f"ConfigMap {item.namespace}/{item.name} ({key}): one of {len(found)} Kueue "
                "Configurations; import reads none of them (which one the manager runs is "
                "its Deployment's --config)",
                item.span,
            )
            for item, key, _ in found
        ]
    item, key, doc = found[0]
    legacy = str(doc["apiVersion"]).endswith("/v1beta1")
    integrations = doc.get("integrations") or {}
    frameworks = [str(f) for f in integrations.get("frameworks") or []] or DEFAULT_FRAMEWORKS
    fair = doc.get("fairSharing")
    enabled = isinstance(fair, dict) and (fair.get("enable") is True or not legacy)
    kueue["configuration"] = {"integrations": frameworks, "fairSharing": enabled}
    where = f"ConfigMap {item.namespace}/{item.name} ({key})"
    diagnostics = unreadable
    for setting, value in _queueing_settings(doc, legacy):
        diagnostics.append(
            finding(
                "import-setting-not-managed",
                f"{where}: {setting} is set ({_shown(value)}): "
                f"{WHY.get(setting, 'it shapes admission')}; "
                "the policy cannot say it and hetgitops does not render Kueue's Configuration, "
                "so it stays as the installer set it",
                item.span,
            )
        )
    return diagnostics


def _queueing_settings(doc: Mapping[str, Any], legacy: bool) -> list[tuple[str, Any]]:
    """The set queueing settings the policy does not hold, as dotted paths."""
    settings: list[tuple[str, Any]] = []
    taken = {"apiVersion", "kind", "integrations", "fairSharing", "resources", *INFRASTRUCTURE}
    for key, value in doc.items():
        if key in taken or value in (None, {}, [], "", False):
            continue
        if key == "waitForPodsReady" and legacy and not (value or {}).get("enable"):
            continue  # v1beta1 without enable: off
        settings.append((str(key), value))
    nested = {
        "integrations": ("frameworks",),
        "fairSharing": ("enable",),
        "resources": (),
    }
    for section, kept in nested.items():
        body = doc.get(section)
        if not isinstance(body, dict):
            continue
        if section == "fairSharing" and legacy and not body.get("enable"):
            continue  # off: its strategies do nothing
        for key, value in body.items():
            if key not in kept and value not in (None, {}, [], ""):
                settings.append((f"{section}.{key}", value))
    return sorted(settings, key=lambda s: s[0])


def _shown(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text if len(text) <= 80 else text[:77] + "..."
