"""Live stage: the one reader of `metadata.managedFields`, server-side apply's record of which
field manager owns which fields of an object.

Each entry's `fieldsV1` is a tree of serialized path elements: `f:name` a map field, `k:{...}`
a list entry by its merge key(s), `v:value` a set entry, `i:n` a list index; a key whose value
is `{}` is a member (an owned field), and a `.` key makes its parent a member as well (a list
entry or map owned as a whole besides the fields inside it). Element kinds this reader does not
know are skipped, as the API server's own reader skips them. Paths stay in that spelling
(`FieldPath`) so they can be looked up in any object of the kind: the live one, or a rendered
one that no longer has the field (`locate`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# One serialized path element per step: ("f:spec", "f:capability", "f:nvidia.com/gpu").
FieldPath = tuple[str, ...]
# A path into a concrete object: map keys and list indexes.
Concrete = tuple[str | int, ...]
_KINDS = ("f", "k", "v", "i")


@dataclass(frozen=True)
class Managed:
    """One managedFields entry: the manager, how it wrote (Apply or Update), when, the
    subresource it wrote through ("" for the object itself) and every field it owns."""

    manager: str
    operation: str
    time: str
    subresource: str
    fields: frozenset[FieldPath]


def managed_fields(obj: Mapping[str, Any]) -> list[Managed]:
    """The managedFields entries of `obj`, in the order the server keeps them (entries of
    another fieldsType are skipped: FieldsV1 is the only one the API defines)."""
    entries = []
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(entry, Mapping) or entry.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        fields = entry.get("fieldsV1")
        entries.append(
            Managed(
                manager=str(entry.get("manager", "")),
                operation=str(entry.get("operation", "")),
                time=str(entry.get("time", "")),
                subresource=str(entry.get("subresource", "")),
                fields=frozenset(members(fields if isinstance(fields, Mapping) else {})),
            )
        )
    return entries


def members(fields: Mapping[str, Any], prefix: FieldPath = ()) -> list[FieldPath]:
    """The owned paths of a FieldsV1 tree."""
    found: list[FieldPath] = []
    for key, sub in fields.items():
        if key == ".":
            found.append(prefix)
            continue
        if key.partition(":")[0] not in _KINDS or ":" not in key:
            continue
        path = (*prefix, key)
        if isinstance(sub, Mapping) and sub:
            found.extend(members(sub, path))
        else:
            found.append(path)
    return found


def owners(obj: Mapping[str, Any]) -> dict[FieldPath, tuple[str, ...]]:
    """Per owned path of the object itself (not its status or other subresources), the
    managers that own it, sorted."""
    found: dict[FieldPath, set[str]] = {}
    for entry in managed_fields(obj):
        if entry.subresource:
            continue
        for path in entry.fields:
            found.setdefault(path, set()).add(entry.manager)
    return {path: tuple(sorted(names)) for path, names in sorted(found.items())}


def locate(path: FieldPath, obj: Any, *, strict: bool = False) -> Concrete | None:
    """`path` as map keys and list indexes of `obj`, or None when a list entry (or, with
    `strict`, a map field) it names is not there."""
    out: list[str | int] = []
    value = obj
    for element in path:
        step = _step(element, value)
        if step is None:
            return None
        if isinstance(step, str):
            present = isinstance(value, Mapping) and step in value
            if strict and not present:
                return None
            value = value[step] if present else None
        else:
            value = value[step]
        out.append(step)
    return tuple(out)


def present(path: FieldPath, obj: Any) -> bool:
    """Whether `obj` holds the field `path` names."""
    return locate(path, obj, strict=True) is not None


def _step(element: str, value: Any) -> str | int | None:
    kind, _, text = element.partition(":")
    if kind == "f":
        return text
    if not isinstance(value, list):
        return None
    if kind == "i":
        return int(text) if text.isdigit() and int(text) < len(value) else None
    try:
        wanted = json.loads(text)
    except ValueError:
        return None
    for index, item in enumerate(value):
        if kind == "v" and item == wanted:
            return index
        if kind == "k" and isinstance(item, Mapping) and _matches(item, wanted):
            return index
    return None


def _matches(item: Mapping[str, Any], wanted: Any) -> bool:
    return isinstance(wanted, dict) and all(item.get(k) == v for k, v in wanted.items())


def shown(path: FieldPath) -> str:
    """A path as a reader writes it: `spec.capability[nvidia.com/mig-1g.10gb]`,
    `spec.flavors[name=a100]`."""
    text = ""
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            plain = rest.replace("-", "").replace("_", "").isalnum()
            text += f".{rest}" if plain else f"[{rest}]"
        elif kind == "k":
            keys = json.loads(rest) if rest.startswith("{") else {}
            text += "[" + ",".join(f"{k}={v}" for k, v in sorted(keys.items())) + "]"
        else:
            text += f"[{rest}]"
    return text.lstrip(".")


def json_pointer(path: Concrete) -> str:
    """A concrete path as the RFC 6901 pointer a JSON patch names it by."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)
