"""Compile stage, Argo CD: resource customizations (argocd-cm) for the kinds a render emits.

Argo CD ships no health checks or diff rules for kueue.x-k8s.io or scheduling.volcano.sh. Without
them an app of a rendered fleet shows custom resources without health, and quotas that the API
server re-formats (`12000m` for `12`) as OutOfSync. This module gives the argocd-cm keys:
`resource.customizations.health.<group>_<Kind>` (Lua, from argocd_health/),
`...knownTypeFields...` (quantities compared as Kubernetes quantities) and
`...ignoreDifferences...` (fields a webhook defaults and the policy does not manage).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hetgitops.output.manifests import MANAGED_BY, Manifest, to_yaml

HEALTH_DIR = Path(__file__).resolve().parent / "argocd_health"
PREFIX = "resource.customizations"

# Quantity fields, walked the way Argo CD's knownTypes normaliser walks them (through lists).
_QUOTA = "spec.resourceGroups.flavors.resources"
KNOWN_TYPE_FIELDS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "kueue.x-k8s.io_ClusterQueue": tuple(
        (f"{_QUOTA}.{field}", "core/Quantity")
        for field in ("nominalQuota", "borrowingLimit", "lendingLimit")
    ),
    "scheduling.volcano.sh_Queue": (
        ("spec.capability", "core/v1/ResourceList"),
        ("spec.deserved", "core/v1/ResourceList"),
        ("spec.guarantee.resource", "core/v1/ResourceList"),
    ),
}

# Fields the API server fills in (CRD defaults) that a render leaves out, as JSON pointers. Empty
# on purpose: the compilers write every CRD default of the kinds they emit (Kueue's queueing,
# preemption and fungibility defaults, Volcano's weight, reclaimable and dequeueStrategy), which
# tests/integrations/test_argocd_config.py proves against the upstream CRDs. A default found
# missing there belongs in its compiler first, and here only when it cannot be written.
IGNORE_DIFFERENCES: Mapping[str, Mapping[str, list[str]]] = {}


def group_kind(obj: Mapping[str, Any]) -> str:
    """`<group>_<Kind>` as argocd-cm keys spell it (an empty group for core kinds)."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return f"{group}_{obj.get('kind', '')}"


# Kinds that share one script (a leading `_`: not a kind of its own), with its placeholders:
# both Kueue queues report the same Active condition, so they share one reading of it; so do
# the MultiKueue AdmissionCheck and MultiKueueCluster of a multi-cluster manager.
SHARED_HEALTH: Mapping[str, tuple[str, Mapping[str, str]]] = {
    "kueue.x-k8s.io_ClusterQueue": (
        "_kueue_queue.lua",
        {
            "@KIND@": "ClusterQueue",
            "@DELETING@": "Deleting: Kueue keeps the queue until its admitted workloads finish",
        },
    ),
    "kueue.x-k8s.io_LocalQueue": (
        "_kueue_queue.lua",
        {"@KIND@": "LocalQueue", "@DELETING@": "Deleting"},
    ),
    # Kueue v0.19.2 pkg/controller/admissionchecks/multikueue (admissioncheck.go,
    # multikueuecluster.go).
    "kueue.x-k8s.io_AdmissionCheck": (
        "_kueue_multikueue.lua",
        {
            "@KIND@": "AdmissionCheck",
            "@REASONS@": "Reasons: Active, SomeActiveClusters (True);\n-- BadConfig, "
            "NoUsableClusters (False).",
        },
    ),
    "kueue.x-k8s.io_MultiKueueCluster": (
        "_kueue_multikueue.lua",
        {
            "@KIND@": "MultiKueueCluster",
            "@REASONS@": "Reasons: Active (True);\n-- BadConfig, "
            "ClientConnectionFailed, ... (False: the worker is unreachable or forbidden).",
        },
    ),
}


def health_scripts() -> dict[str, str]:
    """`<group>_<Kind>` -> the Lua health script shipped for it."""
    found = {
        p.stem: p.read_text("utf-8")
        for p in sorted(HEALTH_DIR.glob("*.lua"))
        if not p.name.startswith("_")
    }
    for key, (name, values) in SHARED_HEALTH.items():
        script = (HEALTH_DIR / name).read_text("utf-8")
        for placeholder, value in values.items():
            script = script.replace(placeholder, value)
        found[key] = script
    return dict(sorted(found.items()))


def customizations(kinds: Iterable[str]) -> dict[str, str]:
    """argocd-cm data keys for the given `<group>_<Kind>`s, sorted."""
    wanted = set(kinds)
    data: dict[str, str] = {}
    for key, script in health_scripts().items():
        if key in wanted:
            data[f"{PREFIX}.health.{key}"] = script
    for key, fields in KNOWN_TYPE_FIELDS.items():
        if key in wanted:
            rows = [{"field": field, "type": kind} for field, kind in fields]
            data[f"{PREFIX}.knownTypeFields.{key}"] = to_yaml(rows)
    for key, rules in IGNORE_DIFFERENCES.items():
        if key in wanted:
            data[f"{PREFIX}.ignoreDifferences.{key}"] = to_yaml(dict(rules))
    return dict(sorted(data.items()))


def argocd_cm(manifests: Iterable[Manifest], *, namespace: str = "argocd") -> dict[str, Any]:
    """A ConfigMap `argocd-cm` holding the customizations for the kinds in `manifests`, to
    merge into Argo CD's own (kustomize patch, Helm `configs.cm`, or `kubectl patch`)."""
    kinds = {group_kind(m.obj) for m in manifests if m.applied}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": "argocd-cm",
                "app.kubernetes.io/part-of": "argocd",
            },
            "annotations": {"hetgitops.io/generated-by": MANAGED_BY},
        },
        "data": customizations(kinds),
    }
