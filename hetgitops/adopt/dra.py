"""Adopt stage: the Dynamic Resource Allocation objects back into a pool's `spec.devices`.

Reads the DeviceClasses (which card each selects: `plan.dra.read_selector`, the reader of the
CEL `plan.dra.selector` writes), Kueue's `resources.deviceClassMappings` (a quota resource name
and its DeviceClass names) from a Configuration in a ConfigMap or standing alone in a GitOps
repository, and the ResourceClaimTemplates (counted: their names are content digests the
render makes again). A pool is on the claims path when a mapped DeviceClass selects its card,
on the extended-resource path when a DeviceClass carrying `extendedResourceName` (resource.k8s.io
v1 DeviceClassSpec) serves its card's resource and its nodes run no device plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hetgitops.adopt.findings import finding
from hetgitops.adopt.kueue_config import GROUP, configurations
from hetgitops.adopt.sources import Imported
from hetgitops.diagnostics import Diagnostic
from hetgitops.plan import dra


@dataclass(frozen=True)
class ClassRead:
    """One DeviceClass: what its selector says (None: not a shape hetgitops reads)."""

    item: Imported
    selected: dra.SelectorRead | None
    extended_resource_name: str


@dataclass
class DraRead:
    classes: dict[str, ClassRead] = field(default_factory=dict)
    mappings: dict[str, tuple[str, ...]] = field(default_factory=dict)  # resource -> classes
    templates: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def resources(self) -> frozenset[str]:
        """The quota resources Kueue charges claimed devices as."""
        return frozenset(self.mappings)

    def claims_aliases(
        self, *, architecture: str, product_names: Sequence[str], resource: str
    ) -> dict[str, str]:
        """Mapped quota resource -> the device-plugin name it stands for on a card (the card
        `resource` itself, or `nvidia.com/mig-<profile>`), for every mapping whose classes
        select the card; empty when none does (the pool is not on the claims path)."""
        found: dict[str, str] = {}
        for name, classes in sorted(self.mappings.items()):
            for class_name in classes:
                read = self.classes.get(class_name)
                selected = read.selected if read else None
                if selected is None or not dra.selects(
                    selected, architecture=architecture, product_names=product_names
                ):
                    continue
                profile = selected.profile
                found[name] = f"nvidia.com/mig-{profile}" if profile else resource
        return found

    def serves_extended(self, resource: str) -> bool:
        """Whether a DeviceClass lets pods keep requesting `resource` on DRA nodes."""
        return any(c.extended_resource_name == resource for c in self.classes.values())


def read(by_kind: Mapping[str, list[Imported]]) -> DraRead:
    found = DraRead()
    for item in sorted(by_kind.get("DeviceClass", []), key=lambda i: i.name):
        spec = _mapping(item.obj.get("spec"))
        selectors = spec.get("selectors")
        expressions = [
            str(_mapping(s.get("cel")).get("expression", ""))
            for s in (selectors if isinstance(selectors, list) else [])
            if isinstance(s, dict)
        ]
        extended = str(spec.get("extendedResourceName") or "")
        selected = dra.read_selector(expressions[0]) if len(expressions) == 1 else None
        if selected is None and item.name not in dra.DRIVER_EXTENDED_CLASSES.values():
            found.diagnostics.append(_unread(item, expressions))
        found.classes[item.name] = ClassRead(item, selected, extended)
    for doc in _configurations(by_kind):
        listed = _mapping(doc.get("resources")).get("deviceClassMappings")
        for mapping in listed if isinstance(listed, list) else []:
            classes = mapping.get("deviceClassNames") if isinstance(mapping, dict) else None
            if isinstance(mapping, dict) and mapping.get("name") and isinstance(classes, list):
                found.mappings[str(mapping["name"])] = tuple(str(n) for n in classes)
    found.templates = len(by_kind.get("ResourceClaimTemplate", []))
    return found


def _mapping(value: Any) -> Mapping[str, Any]:
    """A field read as an object; anything else (a hostile or broken dump) as empty."""
    return value if isinstance(value, dict) else {}


def _configurations(by_kind: Mapping[str, list[Imported]]) -> list[Mapping[str, Any]]:
    """Kueue's Configuration: standing alone (a GitOps repository's fragment) or in a
    ConfigMap (the cluster's kueue-manager-config)."""
    alone = [
        i.obj
        for i in by_kind.get("Configuration", [])
        if str(i.obj.get("apiVersion", "")).startswith(GROUP)
    ]
    return alone + [doc for _, _, doc in configurations(by_kind.get("ConfigMap", []))]


def _unread(item: Imported, expressions: list[str]) -> Diagnostic:
    shown = expressions[0][:120] if expressions else "no CEL selector"
    return finding(
        "import-device-class-unread",
        f"DeviceClass {item.name}: hetgitops cannot tell which card its selector picks "
        f"({shown}); no pool is put on DRA through it, and it stays as it is, outside the "
        "policy",
        item.span,
        path="spec.selectors",
    )
