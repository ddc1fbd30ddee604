"""Live stage: which API resource serves each kind in use (drift, `diff --kubeconfig`), from the
live CRDs (one LIST) and a table of the built-in kinds hetgitops emits; the CRD's schema of the
version in use."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.live.client import Resource

CRD_RESOURCE = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
# Built-in kinds that compilers emit (or may): group, plural, namespaced. Their schemas are not
# CRDs; their server-side defaults are in `defaults.BUILTIN_DEFAULTS`.
BUILTIN: dict[tuple[str, str], tuple[str, bool]] = {
    ("", "Namespace"): ("namespaces", False),
    ("", "ConfigMap"): ("configmaps", True),
    ("", "ResourceQuota"): ("resourcequotas", True),
    ("", "LimitRange"): ("limitranges", True),
    ("", "Secret"): ("secrets", True),
    ("", "ServiceAccount"): ("serviceaccounts", True),
    ("", "Node"): ("nodes", False),
    ("scheduling.k8s.io", "PriorityClass"): ("priorityclasses", False),
    # The DRA claims path (compilers/dra.py): compared like any rendered object.
    ("resource.k8s.io", "DeviceClass"): ("deviceclasses", False),
    ("resource.k8s.io", "ResourceClaimTemplate"): ("resourceclaimtemplates", True),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False),
}


@dataclass(frozen=True)
class KindKey:
    """A kind as the policy renders it: API group, version and kind."""

    group: str
    version: str
    kind: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> KindKey:
        api_version = str(obj.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        return cls(group, version, str(obj.get("kind", "")))

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.kind} ({self.api_version})"


@dataclass
class Catalogue:
    """What the live CRDs say: per (group, kind) the CRD object; built-ins need none."""

    crds: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_crds(cls, crds: Iterable[Mapping[str, Any]]) -> Catalogue:
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for crd in crds:
            spec = crd.get("spec") or {}
            kind = str((spec.get("names") or {}).get("kind", ""))
            found[str(spec.get("group", "")), kind] = dict(crd)
        return cls(found)

    def resource(self, key: KindKey) -> Resource | None:
        """The API resource of `key`, or None when neither a built-in nor a served CRD version."""
        builtin = BUILTIN.get((key.group, key.kind))
        if builtin is not None:
            return Resource(key.group, key.version, builtin[0], key.kind, builtin[1])
        crd = self.crds.get((key.group, key.kind))
        if crd is None or _version(crd, key.version) is None:
            return None
        spec = crd["spec"]
        namespaced = spec.get("scope") == "Namespaced"
        names = spec["names"]
        list_kind = str(names.get("listKind") or "")
        return Resource(key.group, key.version, names["plural"], key.kind, namespaced, list_kind)

    def is_custom(self, key: KindKey) -> bool:
        return (key.group, key.kind) in self.crds

    def schema(self, key: KindKey) -> dict[str, Any] | None:
        """The openAPIV3Schema of the served version, where a CRD declares one."""
        crd = self.crds.get((key.group, key.kind))
        version = _version(crd, key.version) if crd else None
        if version is None:
            return None
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        return schema if isinstance(schema, dict) else None

    def missing_reason(self, key: KindKey) -> str:
        crd = self.crds.get((key.group, key.kind))
        if crd is None:
            return f"no CustomResourceDefinition for {key.kind} in {key.group} is installed"
        versions = crd["spec"].get("versions") or []  # `versions: null` serves nothing too
        served = [v["name"] for v in versions if v.get("served")]
        return (
            f"the installed CRD {crd['metadata']['name']} does not serve {key.version} "
            f"(it serves {', '.join(served) or 'nothing'})"
        )


def _version(crd: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for version in (crd.get("spec") or {}).get("versions") or []:
        if version.get("name") == name and version.get("served"):
            return dict(version)
    return None
