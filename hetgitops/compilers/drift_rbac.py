"""Compile stage, `drift-rbac` target: the least privilege `hetgitops drift` needs: a
ServiceAccount and a ClusterRole that may only `list` the kinds the Fleet's targets render,
their CRDs and the nodes.

Not a default target (the Fleet names it, or `render --target drift-rbac`). Its objects carry
`app.kubernetes.io/managed-by: hetgitops` but not the fleet label, so `drift` (which selects by
both) never reports them as orphans.
"""

from __future__ import annotations

from typing import Any

from hetgitops.compilers import COMPILERS, compile_policy
from hetgitops.model.policy import Fleet, Policy
from hetgitops.output.manifests import MANAGED_BY, Manifest

TARGET = "drift-rbac"
NAME = "hetgitops-drift"
NAMESPACE = "hetgitops-drift"
RBAC = "rbac.authorization.k8s.io"
# LIST is all drift does in read-only mode: no get, no watch.
VERBS = ["list"]
# What drift reads besides the rendered kinds: the CRDs (schemas, defaults) and the nodes.
ALWAYS = (("apiextensions.k8s.io", "customresourcedefinitions"), ("", "nodes"))


def plural(kind: str) -> str:
    """The resource name Kubernetes derives from a kind (kubebuilder's and the core API's
    rule: lower case; -y -> -ies; -s, -x, -ch, -sh -> -es; else -s)."""
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    return lower + "s"


def _rules(rendered: list[Manifest]) -> list[dict[str, Any]]:
    resources: set[tuple[str, str]] = set(ALWAYS)
    for manifest in rendered:
        if manifest.applied:
            group = str(manifest.obj.get("apiVersion", "")).rpartition("/")[0]
            resources.add((group, plural(manifest.kind)))
        if manifest.kind == "DeviceClass":  # drift reads the devices DRA pools publish
            resources.add(("resource.k8s.io", "resourceslices"))
    groups: dict[str, list[str]] = {}
    for group, name in sorted(resources):
        groups.setdefault(group, []).append(name)
    return [
        {"apiGroups": [group], "resources": names, "verbs": list(VERBS)}
        for group, names in sorted(groups.items())
    ]


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {"app.kubernetes.io/managed-by": MANAGED_BY, "app.kubernetes.io/name": NAME}
    return meta


def compile_drift_rbac(policy: Policy) -> list[Manifest]:
    fleet = policy.fleet
    if fleet is None:
        return []
    targets = tuple(t for t in fleet.targets if t != TARGET)
    return rbac_manifests(fleet, compile_policy(policy, targets))


def rbac_manifests(fleet: Fleet, rendered: list[Manifest]) -> list[Manifest]:
    """The drift ServiceAccount and a ClusterRole listing the kinds of `rendered`."""
    span = fleet.origin.span
    role = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": _meta(NAME),
        "rules": _rules(rendered),
    }
    binding = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(NAME),
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
    }
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(NAMESPACE)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, NAMESPACE)},
        role,
        binding,
    ]
    return [Manifest(TARGET, obj, span) for obj in objects]


COMPILERS[TARGET] = compile_drift_rbac
