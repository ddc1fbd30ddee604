"""Adopt stage: the Fleet document, from what the whole cluster says (versions, Kueue's
defaults, the GPU operator's configs, cohorts, the topology), and the objects import leaves
out of the policy."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hetgitops.adopt import multikueue, nvidia
from hetgitops.adopt import nodes as nodeinfo
from hetgitops.adopt.findings import finding
from hetgitops.adopt.infer.documents import Inferred, document, is_queueing
from hetgitops.adopt.sources import KUEUE, Imported
from hetgitops.diagnostics import Diagnostic
from hetgitops.model import quantities

TRANSLATED = {
    "Node",
    "Namespace",
    "PriorityClass",
    "ResourceFlavor",
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "WorkloadPriorityClass",
    "Topology",
    "Queue",
}
DRA_MINOR = "1.34"  # the first release serving resource.k8s.io/v1 (DRA GA)
NOT_TRANSLATED = {"AdmissionCheck", "MultiKueueCluster", "MultiKueueConfig"}
_KUBELET = re.compile(r"v?(\d+)\.(\d+)(?:[.+-]|$)")


def fleet(
    by_kind: Mapping[str, list[Imported]], cluster: str, versions: Mapping[str, str]
) -> dict[str, Any]:
    found = dict(versions)
    if _api_versions(by_kind) == {f"{KUEUE}/v1beta1"}:
        found["kueue"] = "0.14.0"  # the last release that serves v1beta1 alone
    kubelets = [
        str(((n.obj.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""))
        for n in by_kind.get("Node", [])
    ]
    # A kubelet that is not Kubernetes' own (kwok's fake nodes say `kwok-v0.8.0`, a node
    # agent may say anything) tells nothing: the bundled minor stays, for the reader to review.
    minors = (_KUBELET.match(k) for k in kubelets)
    kubelet = nodeinfo.most_common(f"{m[1]}.{m[2]}" for m in minors if m)
    if kubelet:
        found["kubernetes"] = kubelet
    elif by_kind.get("DeviceClass") and found.get("kubernetes", "") < DRA_MINOR:
        # resource.k8s.io/v1 DeviceClasses are served from Kubernetes 1.34 on.
        found["kubernetes"] = DRA_MINOR
    queues = [q.obj.get("spec") or {} for q in by_kind.get("ClusterQueue", [])]
    spec: dict[str, Any] = {"cluster": cluster, "versions": found, "targets": ["core", "kueue"]}
    kueue: dict[str, Any] = {"queueingStrategy": "BestEffortFIFO"}
    fungibility = nodeinfo.most_common(
        tuple(sorted((q.get("flavorFungibility") or {}).items())) for q in queues
    )
    if fungibility:
        values = {k: v for k, v in fungibility if k in ("whenCanBorrow", "whenCanPreempt")}
        values = {
            k: {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}.get(v, v)
            for k, v in values.items()
        }
        if values:
            kueue["flavorFungibility"] = values
    spec["kueue"] = kueue
    return document("Fleet", cluster, spec)


def _api_versions(by_kind: Mapping[str, list[Imported]]) -> set[str]:
    return {
        str(i.obj.get("apiVersion"))
        for items in by_kind.values()
        for i in items
        if str(i.obj.get("apiVersion", "")).startswith(KUEUE)
    }


def not_imported(by_kind: Mapping[str, list[Imported]]) -> list[Diagnostic]:
    """A finding per object of a queueing kind the policy does not translate."""
    found: list[Diagnostic] = []
    for kind in sorted(by_kind):
        if kind in multikueue.KINDS:
            continue  # reported with the Cluster documents they would be (adopt.multikueue)
        if kind in NOT_TRANSLATED or (kind not in TRANSLATED and is_queueing(by_kind[kind])):
            found.extend(
                finding("import-kind-not-imported", _not_imported(kind, item.name), item.span)
                for item in by_kind[kind]
                if not multikueue.is_multikueue_check(item)
            )
    return found


def _not_imported(kind: str, name: str) -> str:
    if kind == "AdmissionCheck":  # teams name it (spec.kueue.admissionChecks); it is not rendered
        return (
            f"AdmissionCheck {name}: teams name it in spec.kueue.admissionChecks, but the "
            "policy does not render the check itself; it stays as it is, with its controller"
        )
    return (
        f"{kind} {name}: import does not translate {kind} objects yet; it stays as it is, "
        "outside the policy"
    )


def gpu_operator(gpu: nvidia.GpuConfigs, strategy: str, inferred: Inferred) -> None:
    """A custom MIG or device-plugin ConfigMap becomes the Fleet's (gpu-operator target,
    names and namespace kept, so the round trip compares it); `strategy` is the pools
    phase's (the ClusterPolicy's, else what the nodes advertise)."""
    operator: dict[str, Any] = {}
    maps = [m for m in (gpu.mig_map, gpu.sharing_map) if m is not None]
    if maps:
        operator["namespace"] = maps[0].namespace or "gpu-operator"
    if gpu.mig_map is not None:
        operator["migConfigName"] = gpu.mig_map.name
    if gpu.sharing_map is not None and gpu.sharing_map.namespace == operator.get("namespace"):
        operator["devicePluginConfigName"] = gpu.sharing_map.name
    if strategy in ("none", "single", "mixed"):
        operator["migStrategy"] = strategy
    if operator:
        inferred.fleet["spec"]["gpuOperator"] = operator
    if maps:
        targets = inferred.fleet["spec"]["targets"]
        if "gpu-operator" not in targets:
            targets.append("gpu-operator")


def cohorts(by_kind: Mapping[str, list[Imported]], inferred: Inferred) -> None:
    """The Fleet's cohorts: every Cohort object, every cohort a team names, their parents."""
    parents: dict[str, str | None] = {}
    weights: dict[str, str] = {}
    for item in by_kind.get("Cohort", []):
        cohort = item.obj.get("spec") or {}
        parent = cohort.get("parentName")
        parents[item.name] = str(parent) if parent else None
        if isinstance(cohort.get("fairSharing"), Mapping):
            weight = cohort["fairSharing"].get("weight", 1)
            weights[item.name] = quantities.normalize(str(weight))
    for team in inferred.teams:
        name = team["spec"].get("cohort")
        if name:
            parents.setdefault(name, None)
    for parent in [p for p in parents.values() if p]:
        parents.setdefault(parent, None)
    if parents:
        inferred.fleet["spec"]["cohorts"] = [
            {
                "name": n,
                **({"parent": p} if p else {}),
                **({"fairSharingWeight": weights[n]} if n in weights else {}),
            }
            for n, p in sorted(parents.items())
        ]


def topology(by_kind: Mapping[str, list[Imported]], inferred: Inferred) -> None:
    """The Topology the flavors name becomes the Fleet's, with its exact name and level
    labels; any other Topology stays outside the policy (a Fleet has one)."""
    used = nodeinfo.most_common(
        str((f.obj.get("spec") or {}).get("topologyName"))
        for f in by_kind.get("ResourceFlavor", [])
        if (f.obj.get("spec") or {}).get("topologyName")
    )
    for item in by_kind.get("Topology", []):
        if item.name != used:
            inferred.diagnostics.append(
                finding(
                    "import-kind-not-imported",
                    f"Topology {item.name}: no imported flavor names it (a Fleet has one "
                    "Topology); it stays as it is, outside the policy",
                    item.span,
                )
            )
            continue
        labels = [
            str(level.get("nodeLabel"))
            for level in (item.obj.get("spec") or {}).get("levels") or []
        ]
        inferred.fleet["spec"]["topology"] = {
            "name": item.name,
            "topologyName": item.name,
            "nodeLabels": labels,
        }
