"""Live stage: the shape every object a LIST returns must have before any reader sees it.

Readers above `live` (drift, import, explain, the diff blast radius) read `metadata.name`,
`metadata.labels[...]`, `status.conditions[*].type`, a CRD's `spec.names.plural` without
asking what type they are: an item of the right kind with `"metadata": "x"` used to crash every
command (exit 3). Here each item is checked once, and the first thing out of shape is named with
its place (`item 3 (name 'gpu'): metadata.labels is a string, not an object`); the client turns
it into a plain ClusterError (exit 4). Beyond metadata, `FIELDS` names per kind what the
readers read (a pod's requests, a Workload's admission, a ClusterQueue's usage, a node's
allocatable, an Event's involvedObject) and the type each must have, quantities included
(tests/live/fuzz.py mutates every field of every kind read). Plain JSON in, no hetgitops
imports.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
KUEUE = "kueue.x-k8s.io"
_META_STRINGS = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")
_META_TIMES = ("creationTimestamp", "deletionTimestamp")


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
    return found or _fields(item, FIELDS.get((group, plural), ()))


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
    found = found or _times(meta, _META_TIMES, "metadata.")
    for index, entry in enumerate(meta.get("managedFields") or []):
        found = found or _times(entry, ("time",), f"metadata.managedFields[{index}].")
    return found or _list_of_strings(meta.get("finalizers"), "metadata.finalizers")


# What the readers read of each kind (live.workloads, explain, diff blast, import): a pattern
# (`*` is every item of a list or value of an object; a trailing `!` a field that must be
# there) and the type it must have. Null is absence, as the readers treat it.
def _containers(at: str) -> tuple[tuple[str, str], ...]:
    found: list[tuple[str, str]] = []
    for key in ("containers", "initContainers"):
        found += [(f"{at}.{key}", "list"), (f"{at}.{key}.*", "object")]
        found += [(f"{at}.{key}.*.resources", "object")]
        for kind in ("requests", "limits"):
            found += [(f"{at}.{key}.*.resources.{kind}", "object")]
            found += [(f"{at}.{key}.*.resources.{kind}.*", "quantity")]
    return (*found, (f"{at}.nodeName", "string"))


_CONDITIONS = (("status.conditions.*.message", "string"), ("status.conditions.*.reason", "string"))
_PODSETS = "spec.podSets.*"
_ASSIGNED = "status.admission.podSetAssignments.*"
_USAGE = "status.flavorsUsage.*"
_QUOTAS = ("nominalQuota", "borrowingLimit", "lendingLimit")
FIELDS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("", "pods"): (*_containers("spec"), ("status.phase", "string")),
    (KUEUE, "workloads"): (
        ("spec.podSets", "list"),
        (_PODSETS, "object"),
        (f"{_PODSETS}.count", "integer"),
        (f"{_PODSETS}.template", "object"),
        (f"{_PODSETS}.template.spec", "object"),
        *_containers(f"{_PODSETS}.template.spec"),
        ("spec.priority", "integer"),
        ("spec.active", "boolean"),
        ("status.admission", "object"),
        ("status.admission.clusterQueue", "string"),
        ("status.admission.podSetAssignments", "list"),
        (_ASSIGNED, "object"),
        (f"{_ASSIGNED}.flavors", "object"),
        (f"{_ASSIGNED}.flavors.*", "string"),
        (f"{_ASSIGNED}.resourceUsage", "object"),
        (f"{_ASSIGNED}.resourceUsage.*", "quantity"),
        *_CONDITIONS,
    ),
    (KUEUE, "clusterqueues"): (
        ("status.flavorsUsage", "list"),
        (_USAGE, "object"),
        (f"{_USAGE}.name!", "string"),
        (f"{_USAGE}.resources", "list"),
        (f"{_USAGE}.resources.*", "object"),
        (f"{_USAGE}.resources.*.name!", "string"),
        (f"{_USAGE}.resources.*.total", "quantity"),
        (f"{_USAGE}.resources.*.borrowed", "quantity"),
        ("spec.resourceGroups", "list"),
        ("spec.resourceGroups.*", "object"),
        ("spec.resourceGroups.*.flavors", "list"),
        ("spec.resourceGroups.*.flavors.*", "object"),
        ("spec.resourceGroups.*.flavors.*.resources", "list"),
        ("spec.resourceGroups.*.flavors.*.resources.*", "object"),
        *((f"spec.resourceGroups.*.flavors.*.resources.*.{q}", "quantity") for q in _QUOTAS),
    ),
    ("", "nodes"): (
        ("status.allocatable", "object"),
        ("status.allocatable.*", "quantity"),
        ("status.capacity", "object"),
        ("status.capacity.*", "quantity"),
    ),
    ("", "events"): (
        ("involvedObject", "object"),
        *((f"involvedObject.{key}", "string") for key in ("kind", "name", "namespace")),
        *((key, "string") for key in ("reason", "message", "type")),
    ),
    ("", "configmaps"): (("data", "object"), ("data.*", "string")),
    ("scheduling.volcano.sh", "podgroups"): (
        ("spec.minMember", "integer"),
        ("spec.queue", "string"),
        *_CONDITIONS,
    ),
}
# A Kubernetes quantity (apimachinery resource.Quantity), not negative: requests, capacity
# and usage never are. Its value must fit the int64 Kubernetes keeps it in.
# ASCII digits only, as apimachinery's parseQuantityString reads them (`\d` also matches '٨').
QUANTITY = re.compile(r"\+?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")
_LARGEST = Decimal(2**63)


def _fields(item: Mapping[str, Any], fields: tuple[tuple[str, str], ...]) -> str | None:
    for pattern, kind in fields:
        required = pattern.endswith("!")
        for at, value in _walk(item, pattern.rstrip("!").split("."), ""):
            if value is None and required:
                return f"{at} is missing"
            if value is None and at.endswith("]"):  # an item of a list or map is no absence
                return f"{at} is null, not {'an' if kind == 'object' else 'a'} {kind}"
            found = None if value is None else _typed(value, kind)
            if found:
                return f"{at} is {found}"
    return None


def _walk(value: Any, parts: list[str], at: str) -> Iterator[tuple[str, Any]]:
    """(place, value) of each match of `parts` under `value`; a parent of the wrong type (named
    by its own pattern, checked first) or absent matches nothing."""
    if not parts:
        yield at, value
        return
    head, rest = parts[0], parts[1:]
    if head == "*" and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, rest, f"{at}[{index}]")
    elif head == "*" and isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, rest, f"{at}[{key!r}]")
    elif head != "*" and isinstance(value, Mapping) and (value.get(head) is not None or not rest):
        yield from _walk(value.get(head), rest, f"{at}.{head}" if at else head)


def _typed(value: Any, kind: str) -> str | None:
    """What is wrong with `value` as a `kind`, or None."""
    if kind == "quantity":
        return _quantity(value)
    if kind == "integer" and not (isinstance(value, int) and not isinstance(value, bool)):
        return f"{_a(value)}, not an integer"
    if kind == "integer" and abs(value) >= 2**63:
        return "a number out of range"
    wanted = {"object": Mapping, "list": list, "string": str, "boolean": bool}.get(kind)
    if wanted is not None and not isinstance(value, wanted):
        return f"{_a(value)}, not {'an' if kind == 'object' else 'a'} {kind}"
    return None


def _quantity(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return f"{_a(value)}, not a quantity"
    text = value if isinstance(value, str) else str(value)
    number = QUANTITY.fullmatch(text)
    if number is None:
        return f"{text[:40]!r}, not a quantity (negative or unreadable)"
    exponent = number.group(2) or ""
    try:  # the digits alone (and a decimal exponent): a suffix never makes it readable
        amount = Decimal(number.group(1) + (exponent if exponent[:1] in "eE" else ""))
    except InvalidOperation:
        return f"{text[:40]!r}, not a quantity"
    return f"{text[:40]!r}, a quantity out of range" if amount >= _LARGEST else None


def _crd(crd: Mapping[str, Any]) -> str | None:
    """What `live.kinds.Catalogue` and `import` read of a CustomResourceDefinition."""
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
    if found:  # before the loop: `versions: true` is no list to walk
        return found
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
    if found:  # before the loop: `conditions: 0.5` is no list to walk
        return found
    for index, condition in enumerate(status.get("conditions") or []):
        at = f"status.conditions[{index}]."
        found = found or _strings(condition, ("type", "status"), at)
        found = found or _times(condition, ("lastTransitionTime",), at)
    return found


def _times(obj: Mapping[str, Any], keys: tuple[str, ...], at: str) -> str | None:
    """metav1.Time: RFC 3339 with its offset, as the readers parse it (explain's queue-order
    and admission times, drift's managedFields times); a stamp they cannot read, or one
    without an offset (naive: not comparable with the others), is no time."""
    for key in keys:
        value = obj.get(key)
        if value is None:
            continue
        try:
            stamp = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            stamp = None
        if not isinstance(value, str) or stamp is None or stamp.tzinfo is None:
            return f"{at}{key} is {str(value)[:40]!r}, not an RFC 3339 time"
    return None


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
