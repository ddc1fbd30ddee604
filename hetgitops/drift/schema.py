"""Drift stage: what a CRD's structural schema says about a field: its default, whether it is
a quantity, how its lists merge. Defaults are applied the way the API server applies them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]
EMPTY: Schema = {}


def child(schema: Schema | None, key: str | int) -> Schema | None:
    """The schema of `key` inside an object (property or additionalProperties) or a list."""
    if not schema:
        return None
    if isinstance(key, int):
        items = schema.get("items")
        return items if isinstance(items, Mapping) else None
    properties = schema.get("properties") or {}
    if key in properties:
        found = properties[key]
        return found if isinstance(found, Mapping) else None
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def apply_defaults(value: Any, schema: Schema | None) -> Any:
    """`value` with the schema's defaults filled in, top-down like the API server's structural
    defaulting: a missing (or non-nullable null) property with a `default` gets a copy of it,
    then defaulting continues inside what is there. Returns a new object; `value` is kept."""
    if not schema or not _has_defaults(schema):
        return value
    if isinstance(value, dict):
        result = dict(value)
        properties = schema.get("properties") or {}
        for name, sub in properties.items():
            if not isinstance(sub, Mapping) or "default" not in sub:
                continue
            if name not in result or (result[name] is None and not sub.get("nullable")):
                result[name] = copy.deepcopy(sub["default"])
        for name, item in result.items():
            result[name] = apply_defaults(item, child(schema, name))
        return result
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [apply_defaults(item, items) for item in value]
    return value


# id(schema) -> whether it or anything below it declares a default. CRD schemas live as long as
# the process; most subtrees (metadata, resource lists) have none, and skipping them is what
# keeps defaulting 10,000 objects cheap.
_DEFAULTS: dict[int, tuple[Schema, bool]] = {}


def _has_defaults(schema: Schema) -> bool:
    known = _DEFAULTS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    found = "default" in schema or any(
        isinstance(sub, Mapping) and _has_defaults(sub) for sub in _children(schema)
    )
    _DEFAULTS[id(schema)] = (schema, found)
    return found


def _children(schema: Schema) -> list[Any]:
    found = list((schema.get("properties") or {}).values())
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            found.append(schema[key])
    return found


def is_quantity(schema: Schema | None) -> bool:
    """An int-or-string field restricted to Kubernetes quantities (Kueue quotas, Volcano
    capability, ...): `x-kubernetes-int-or-string` with the quantity pattern."""
    if not schema or not schema.get("x-kubernetes-int-or-string"):
        return False
    patterns = [str(schema.get("pattern", ""))]
    patterns += [
        str(s.get("pattern", "")) for s in schema.get("anyOf") or [] if isinstance(s, dict)
    ]
    return any("KMGTPE" in p for p in patterns)


def list_keys(schema: Schema | None) -> tuple[str, ...] | None:
    """The keys of an associative list (`x-kubernetes-list-type: map`), else None."""
    if schema and schema.get("x-kubernetes-list-type") == "map":
        return tuple(schema.get("x-kubernetes-list-map-keys") or ())
    return None


def is_set(schema: Schema | None) -> bool:
    return bool(schema) and schema.get("x-kubernetes-list-type") == "set"  # type: ignore[union-attr]
