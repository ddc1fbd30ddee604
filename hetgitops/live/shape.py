"""Live stage: the shape every object a LIST returns must have before any reader sees it.

Readers above `live` (drift, import, explain, the diff blast radius) read `metadata.name`,
`metadata.labels[...]`, `status.conditions[*].type`, a CRD's `spec.names.plural` without
asking what type they are: an item of the right kind with `"metadata": "x"` used to crash every
command (exit 3). Here each item is checked once, and the first thing out of shape is named with
its place (`item 3 (name 'gpu'): metadata.labels is a string, not an object`); the client turns
it into a plain ClusterError (exit 4). Plain JSON in, no hetgitops imports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
_META_STRINGS = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")


def problem(item: Any, *, namespaced: bool, group: str, plural: str) -> str | None:
    """What is wrong with one LIST item, or None when readers may trust its shape."""
    if not isinstance(item, Mapping):
        return f"is {_a(item)}, not an object"
    found = _metadata(item.get("metadata"), namespaced=namespaced)
    found = found or _optional_objects(item, ("spec", "status"))
    found = found or _conditions(item.get("status"))
    found = found or _strings(item, ("apiVersion", "kind"))
    if found is None and (group, plural) == CRDS:
        found = _crd(item)
    return found


def _metadata(meta: Any, *, namespaced: bool) -> str | None:
    if not isinstance(meta, Mapping):
        return f"metadata is {_a(meta)}, not an object"
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return f"metadata.name is {_a(name)}, not a name"
    namespace = meta.get("namespace")
    if namespaced and (not isinstance(namespace, str) or not namespace):
        return f"metadata.namespace is {_a(namespace)}, not a namespace"
    if namespace is not None and not isinstance(namespace, str):
        return f"metadata.namespace is {_a(namespace)}, not a string"
    for key in ("labels", "annotations"):
        found = _string_map(meta.get(key), f"metadata.{key}")
        if found:
            return found
    for key in ("ownerReferences", "managedFields"):
        found = _list_of_objects(meta.get(key), f"metadata.{key}")
        if found:
            return found
    found = _strings(meta, _META_STRINGS, "metadata.")
    return found or _list_of_strings(meta.get("finalizers"), "metadata.finalizers")


def _crd(crd: Mapping[str, Any]) -> str | None:
    """What `drift.kinds.Catalogue` and `import` read of a CustomResourceDefinition."""
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        return f"spec is {_a(spec)}, not an object"
    names = spec.get("names")
    if not isinstance(names, Mapping):
        return f"spec.names is {_a(names)}, not an object"
    for key in ("plural", "kind"):
        if not isinstance(names.get(key), str) or not names.get(key):
            return f"spec.names.{key} is {_a(names.get(key))}, not a name"
    if not isinstance(spec.get("group"), str):
        return f"spec.group is {_a(spec.get('group'))}, not a string"
    found = _strings(spec, ("scope",), "spec.") or _strings(names, ("listKind",), "spec.names.")
    found = found or _list_of_objects(spec.get("versions"), "spec.versions")
    for index, version in enumerate(spec.get("versions") or []):
        if found:
            break
        if not isinstance(version.get("name"), str):
            found = f"spec.versions[{index}].name is {_a(version.get('name'))}, not a string"
        found = found or _optional_objects(version, ("schema",), f"spec.versions[{index}].")
    return found


def _conditions(status: Any) -> str | None:
    if not isinstance(status, Mapping):
        return None
    found = _list_of_objects(status.get("conditions"), "status.conditions")
    for index, condition in enumerate(status.get("conditions") or []):
        found = found or _strings(condition, ("type", "status"), f"status.conditions[{index}].")
    return found


def _optional_objects(obj: Mapping[str, Any], keys: tuple[str, ...], at: str = "") -> str | None:
    for key in keys:
        value = obj.get(key)
        if value is not None and not isinstance(value, Mapping):
            return f"{at}{key} is {_a(value)}, not an object"
    return None


def _strings(obj: Mapping[str, Any], keys: tuple[str, ...], at: str = "") -> str | None:
    for key in keys:
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            return f"{at}{key} is {_a(value)}, not a string"
    return None


def _string_map(value: Any, at: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return f"{at} is {_a(value)}, not an object"
    for key, item in value.items():
        if not isinstance(item, str):
            return f"{at}[{key!r}] is {_a(item)}, not a string"
    return None


def _list_of_objects(value: Any, at: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return f"{at} is {_a(value)}, not a list"
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            return f"{at}[{index}] is {_a(item)}, not an object"
    return None


def _list_of_strings(value: Any, at: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return f"{at} is {_a(value)}, not a list"
    for index, item in enumerate(value):
        if not isinstance(item, str):
            return f"{at}[{index}] is {_a(item)}, not a string"
    return None


def _a(value: Any) -> str:
    """A JSON value's type in words: `a string`, `a number`, `null`..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else f"a {type(value).__name__}"


def name_of(item: Any) -> str:
    """The item's name for a message, when it has one of the right type."""
    meta = item.get("metadata") if isinstance(item, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""
