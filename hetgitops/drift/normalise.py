"""Drift stage: both sides made comparable: server-populated fields stripped, API-server
defaults of built-in kinds applied, empty values treated as absent."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# metadata the API server, controllers or the GitOps tool itself write; never drift.
SERVER_METADATA = (
    "managedFields",
    "resourceVersion",
    "uid",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "finalizers",
    "ownerReferences",
)
# Labels and annotations GitOps tools add for their own tracking, ignored unless the policy
# sets them: Argo CD's tracking annotation (and label, in its legacy label mode), Flux's
# kustomize-controller labels, kubectl's client-side apply record.
TRACKING_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "argocd.argoproj.io/tracking-id",
    "kustomize.toolkit.fluxcd.io/",
)
TRACKING_LABELS = ("app.kubernetes.io/instance", "kustomize.toolkit.fluxcd.io/")
# What Koordinator v1.8.0 writes on the ElasticQuotas hetgitops renders, ignored unless the
# policy sets them: the scheduler's and controllers' accounting (apis/extension/
# elastic_quota.go:45-58: runtime, request, child-request, guaranteed, allocated, the
# non-preemptible ones, admission; the profile controller's total-resource and
# unschedulable-resource, profile_controller.go:195-212) and the webhook's default
# shared-weight (= max, pkg/webhook/elasticquota/quota_topology.go:251-252). status.used goes
# with status; each profile's root quota carries no hetgitops label, so it is never an orphan.
KOORDINATOR_ANNOTATIONS = tuple(
    f"quota.scheduling.koordinator.sh/{name}"
    for name in (
        "runtime",
        "request",
        "child-request",
        "guaranteed",
        "allocated",
        "non-preemptible-request",
        "non-preemptible-used",
        "unschedulable-resource",
        "total-resource",
        "admission",
        "shared-weight",
    )
)


def _namespace_defaults(obj: dict[str, Any]) -> None:
    meta = obj.setdefault("metadata", {})
    meta.setdefault("labels", {}).setdefault("kubernetes.io/metadata.name", meta.get("name"))
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])


def _priority_class_defaults(obj: dict[str, Any]) -> None:
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")


# The API server's own defaults for built-in kinds live in Go code, not in a schema this tool
# can read; these are the ones that touch the kinds hetgitops emits (pkg/apis/*/defaults.go,
# the Namespace strategy's metadata.name label).
BUILTIN_DEFAULTS: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    ("", "Namespace"): _namespace_defaults,
    ("scheduling.k8s.io", "PriorityClass"): _priority_class_defaults,
}


def strip_live(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A live object without status and server-populated metadata (a shallow-copied view)."""
    result = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_METADATA}
    result["metadata"] = meta
    return result


def drop_tracking(live: dict[str, Any], desired: Mapping[str, Any]) -> None:
    """Remove GitOps tracking labels/annotations (and what Koordinator's controllers write)
    from `live` unless `desired` declares them."""
    meta = live.get("metadata") or {}
    wanted = desired.get("metadata") or {}
    for field, prefixes in (
        ("annotations", (*TRACKING_ANNOTATIONS, *KOORDINATOR_ANNOTATIONS)),
        ("labels", TRACKING_LABELS),
    ):
        values = meta.get(field)
        if not isinstance(values, dict):
            continue
        keep = wanted.get(field) or {}
        meta[field] = {k: v for k, v in values.items() if k in keep or not _tracked(k, prefixes)}


def _tracked(key: str, prefixes: tuple[str, ...]) -> bool:
    return any(key == p or (p.endswith("/") and key.startswith(p)) for p in prefixes)


def prune_empty(value: Any) -> Any:
    """None, {} and [] count as absent, as Go's `omitempty` makes them for built-in kinds and
    as Kubernetes prunes nulls for CRDs; applied to both sides, so it can hide nothing that
    one side says and the other contradicts."""
    if isinstance(value, dict):
        pruned = {k: prune_empty(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if not _empty(v)}
    if isinstance(value, list):
        return [prune_empty(v) for v in value]
    return value


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == []


def is_empty(value: Any) -> bool:
    """None, {}, [], or a map holding nothing but such values: what prune_empty removes."""
    if value is None or value == [] or value == {}:
        return True
    return isinstance(value, dict) and all(is_empty(v) for v in value.values())
