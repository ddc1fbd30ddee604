"""Output-validation stage: Koordinator v1.8.0's quota webhook and quota plugin, replayed in
Python over the rendered ElasticQuota trees and the koord-scheduler job templates.

The API server reports these only at apply time, one object at a time; checked here over the
whole set, each finding points at the policy line of the object. Rules:

- `koordinator-webhook`, per quota (the quota webhook's topology check): no negative min or
  max; every key of min in max and min <= max; the parent exists and is a parent; the tree id
  equals the parent's; the max keys are the parent's, the min keys among the parent's; the
  children's min fit in the parent's (which the webhook skips for the quotas hetgitops labels
  allow-force-update, so it is checked here; the root's min is live capacity,
  `koordinator-min-over-capacity`'s business); a namespace bound to one quota only; no reserved
  name.
- `koordinator-quota-label`, per koord-scheduler pod template: the quota label names a leaf
  ElasticQuota the policy defines (a parent is refused; an unknown name falls silently into
  koordinator-default-quota), and every resource the pod requests is a key of that quota's max
  (the quota plugin masks the request to the max keys: a resource missing there is not
  limited).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from hetgitops.diagnostics import Diagnostic, Severity, register_rules
from hetgitops.live import workloads
from hetgitops.model import quantities
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest
from hetgitops.plan.koordinator_quota import RESERVED_NAMES, quota_nodes

WEBHOOK, LABEL = "koordinator-webhook", "koordinator-quota-label"
register_rules(
    "conformance",
    {
        WEBHOOK: "A rendered ElasticQuota breaks a rule of Koordinator's quota webhook (min "
        "keys in max, min <= max, max keys equal to the parent's, the children's min within "
        "the parent's, one tree id, a namespace bound once, reserved names); the API server "
        "would refuse it at apply time.\n"
        "Fix: change the policy field the finding points at.",
        LABEL: "A koord-scheduler job template names a quota the policy does not define as a "
        "leaf (a parent is refused; an unknown name falls silently into "
        "koordinator-default-quota), or requests a resource its quota does not list (not "
        "limited at all).\n"
        "Fix: name the team's leaf quota in the pod's pool (`<team>-<pool>`), or request only "
        "resources of the pool.",
    },
)
PREFIX = "quota.scheduling.koordinator.sh"
QUOTA_GROUP = "scheduling.sigs.k8s.io/"
POD_KEYS = ("template", "leaderTemplate", "workerTemplate")
# The kinds `jobs` writes (a render tree holds none: its thousands of objects are not walked).
JOB_KINDS = frozenset({"Job", "JobSet", "PyTorchJob", "Deployment", "LeaderWorkerSet"})


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _values(resources: Any) -> dict[str, Decimal]:
    found = {}
    for key, value in _map(resources).items():
        try:
            found[str(key)] = quantities.value_of(value)
        except (ValueError, ArithmeticError):
            continue
    return found


class _Quota:
    def __init__(self, manifest: Manifest) -> None:
        meta = _map(manifest.obj.get("metadata"))
        labels = _map(meta.get("labels"))
        spec = _map(manifest.obj.get("spec"))
        self.manifest = manifest
        self.name = str(meta.get("name", ""))
        self.parent = str(labels.get(f"{PREFIX}/parent", ""))
        self.is_parent = labels.get(f"{PREFIX}/is-parent") == "true"
        self.tree_id = str(labels.get(f"{PREFIX}/tree-id", ""))
        self.min, self.max = _values(spec.get("min")), _values(spec.get("max"))
        text = _map(meta.get("annotations")).get(f"{PREFIX}/namespaces")
        try:
            self.namespaces = [str(n) for n in json.loads(text)] if text else []
        except (TypeError, ValueError):
            self.namespaces = []


def _finding(rule: str, manifest: Manifest, path: str, message: str) -> Diagnostic:
    meta = _map(manifest.obj.get("metadata"))
    ref = f"{manifest.kind} {meta.get('name', '')}"
    return Diagnostic(
        rule=rule,
        severity=Severity.ERROR,
        message=f"{ref}: {path}: {message}",
        span=manifest.origin_of(()),
        path=path,
    )


def _self(quota: _Quota) -> Iterator[str]:
    for field, values in (("max", quota.max), ("min", quota.min)):
        for key, value in values.items():
            if value < 0:
                yield f"spec.{field}.{key} is negative"
    for key, value in quota.min.items():
        if key not in quota.max:
            yield f"min lists {key}, max does not"
        elif value > quota.max[key]:
            yield f"min of {key} ({value}) is above max ({quota.max[key]})"
    if quota.name in RESERVED_NAMES:
        yield f"the name {quota.name} is Koordinator's own"


def _roots(manifests: list[Manifest]) -> dict[str, tuple[str, list[str], bool]]:
    """Root quota name -> (tree id, resource keys, is a parent) of each rendered profile: the
    root carries only the profile's quotaLabels (profile_controller.go:184-188)."""
    found = {}
    for m in manifests:
        if m.kind != "ElasticQuotaProfile":
            continue
        meta = _map(m.obj.get("metadata"))
        tree = str(_map(meta.get("labels")).get(f"{PREFIX}/tree-id", ""))
        text = _map(meta.get("annotations")).get(f"{PREFIX}/resource-keys")
        try:
            keys = [str(k) for k in json.loads(text)] if text else ["cpu", "memory"]
        except (TypeError, ValueError):
            keys = ["cpu", "memory"]
        spec = _map(m.obj.get("spec"))
        parent = _map(spec.get("quotaLabels")).get(f"{PREFIX}/is-parent") == "true"
        found[str(spec.get("quotaName", ""))] = (tree, keys, parent)
    return found


def _topology(quota: _Quota, quotas: dict[str, _Quota], roots: Mapping[str, Any]) -> Iterator[str]:
    if quota.parent in roots:
        tree, keys, is_parent = roots[quota.parent]
        if not is_parent:
            yield (
                f"its parent {quota.parent} is a profile's root without "
                '`quotaLabels: {is-parent: "true"}` (quota_topology_check.go:196-198)'
            )
        parent_keys, parent_min = set(keys), None
    elif quota.parent in quotas:
        parent = quotas[quota.parent]
        if not parent.is_parent:
            yield f'its parent {quota.parent} is not a parent (is-parent is not "true")'
        tree, parent_keys, parent_min = parent.tree_id, set(parent.max), parent.min
        if not set(quota.min) <= set(parent.min):
            yield f"min lists keys its parent {quota.parent}'s min lacks"
    else:
        yield f"its parent {quota.parent or '(none)'} is neither rendered nor a profile's root"
        return
    if tree != quota.tree_id:
        yield f"tree-id {quota.tree_id} differs from its parent's ({tree})"
    if set(quota.max) != parent_keys:
        yield f"max keys {sorted(quota.max)} are not its parent's {sorted(parent_keys)}"
    if parent_min is not None and quota.is_parent:
        yield from _children_fit(quota, quotas)


def _children_fit(parent: _Quota, quotas: dict[str, _Quota]) -> Iterator[str]:
    kids = [q for q in quotas.values() if q.parent == parent.name]
    for key in sorted({k for kid in kids for k in kid.min}):
        total = sum((kid.min.get(key, Decimal(0)) for kid in kids), Decimal(0))
        if total > parent.min.get(key, Decimal(0)):
            yield f"its children's min of {key} add up to {total}, above its own min"


def _trees(manifests: list[Manifest]) -> Iterator[Diagnostic]:
    quotas = {
        q.name: q
        for m in manifests
        if m.kind == "ElasticQuota" and str(m.obj.get("apiVersion")).startswith(QUOTA_GROUP)
        for q in [_Quota(m)]
    }
    roots = _roots(manifests)
    bound: dict[str, str] = {}
    for quota in quotas.values():
        for message in [*_self(quota), *_topology(quota, quotas, roots)]:
            yield _finding(WEBHOOK, quota.manifest, "spec", message)
        for namespace in quota.namespaces:
            if namespace in bound:
                message = f"namespace {namespace} is already bound to {bound[namespace]}"
                yield _finding(WEBHOOK, quota.manifest, "metadata.annotations", message)
            bound.setdefault(namespace, quota.name)


def _pods(value: Any, path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every pod template of a job object, with its path."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if key in POD_KEYS and "containers" in _map(_map(item).get("spec")):
                yield here, item
            else:
                yield from _pods(item, here)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _pods(item, f"{path}[{index}]")


def _requested(pod: Mapping[str, Any]) -> set[str]:
    """The resources the pod's quota is charged: Koordinator's quota plugin counts the
    Kubernetes pod request, init containers included (elasticquota/core/helper.go:27-33,
    `apiresource.PodRequests`), which `live.workloads.pod_requests` reads."""
    return set(workloads.pod_requests(_map(pod.get("spec")), lambda _name, value: value))


def _labels(manifests: list[Manifest], policy: Policy) -> Iterator[Diagnostic]:
    jobs = [m for m in manifests if m.kind in JOB_KINDS]
    defined = {n.name: n for n in quota_nodes(policy)} if jobs else {}
    for manifest in jobs:
        for path, pod in _pods(manifest.obj):
            if _map(pod.get("spec")).get("schedulerName") != "koord-scheduler":
                continue
            name = _map(_map(pod.get("metadata")).get("labels")).get(f"{PREFIX}/name")
            node = defined.get(str(name)) if name else None
            where = f"{path}.metadata.labels"
            if node is None:
                said = f"quota {name}" if name else "no quota label"
                message = f"{said}: the pod falls silently into koordinator-default-quota"
                yield _finding(LABEL, manifest, where, message)
            elif node.is_parent:
                message = f"{name} is a parent quota; the webhook refuses the pod"
                yield _finding(LABEL, manifest, where, message)
            elif missing := sorted(_requested(pod) - set(node.max)):
                message = f"{name} does not list {', '.join(missing)}: not limited by quota"
                yield _finding(LABEL, manifest, f"{path}.spec.containers", message)


def check(manifests: list[Manifest], policy: Policy) -> list[Diagnostic]:
    """Every finding of both rules over one rendered set (a render tree or job templates)."""
    return [*_trees(manifests), *_labels(manifests, policy)]
