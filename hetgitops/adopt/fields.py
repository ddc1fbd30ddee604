"""Adopt stage: the one typed, bounded reader of what import reads from an object's fields.

Every object is checked here as it is read (`sources`), before any phase sees it: each field
the phases read (`SHAPES`, by kind) must have the type they read it as, a quantity must parse
and stay within bounds, an accelerator count must be a whole, non-negative, plausible number.
An object that breaks one is left out with an `import-unreadable` finding at its location
naming the field, so no phase ever meets a wrong type (a crash) and nothing goes without a word.
YAML embedded in ConfigMap data (mig-parted, device-plugin, Kueue and Volcano configs) is read
by the project's bounded loader (`embedded`) and checked against its own shape the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from hetgitops.diagnostics import Diagnostic
from hetgitops.load.yamlbuild import Parsed
from hetgitops.load.yamlread import read_documents
from hetgitops.model import accelerators, quantities

# The one list every reader uses (model/accelerators.py). import kept its own copy until
# 2026-12-05, which named `intel.com/gpu` (no plugin advertises it) and missed Intel's
# `gpu.intel.com/i915` and `gpu.intel.com/xe`.
ACCELERATOR_PREFIXES = accelerators.PREFIXES
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
# Beyond these a value is no real cluster's: a quantity Kubernetes stores in an int64, an
# accelerator count no node advertises (8 GPUs x 7 MIG slices x 48 time-slicing replicas is
# under 3,000), a priority an int32.
MAX_QUANTITY = Decimal(2**63 - 1)
MAX_COUNT = 100_000
MAX_PRIORITY = 2**31 - 1
_DEPTH = 12  # how deep a shape walks; SHAPES are shallower, this bounds a mistake in them

Check = Callable[[Any], str]  # '' when the value is fine, else what is wrong with it
Shape = Any  # a Check, a dict of field -> Shape ('*': any key) or a one-item list [Shape]


def _type(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def text(value: Any) -> str:
    return "" if value is None or isinstance(value, str) else f"{_type(value)}, not a string"


def scalar(value: Any) -> str:
    return f"{_type(value)}, not a string" if isinstance(value, dict | list) else ""


def boolean(value: Any) -> str:
    return "" if value is None or isinstance(value, bool) else f"{_type(value)}, not a boolean"


def integer(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{_type(value)}, not an integer"
    return "" if abs(value) <= MAX_PRIORITY else f"{value} is out of range"


def quantity(value: Any) -> str:
    """A non-negative Kubernetes quantity Kubernetes could store ('' when it is one)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"{_type(value)}, not a quantity"
    try:
        number = quantities.value_of(value)
    except (ValueError, ArithmeticError):
        return f"{str(value)[:40]!r} is not a Kubernetes quantity"
    if not number.is_finite() or number < 0 or number > MAX_QUANTITY:
        return f"{str(value)[:40]!r} is negative or out of range"
    return ""


def optional_quantity(value: Any) -> str:
    return "" if value is None else quantity(value)


def count_of(value: Any, *, most: int = MAX_COUNT) -> int | None:
    """An accelerator count read as a Kubernetes quantity (`1k` is 1000, `8.0` is 8), or None
    when it is not a whole, non-negative number up to `most`."""
    if quantity(value):
        return None
    try:
        number = quantities.value_of(value)
    except (ValueError, ArithmeticError, InvalidOperation):  # pragma: no cover - checked above
        return None
    if number != number.to_integral_value() or number > most:
        return None
    return int(number)


def count(value: Any) -> str:
    if count_of(value) is not None:
        return ""
    return quantity(value) or f"{str(value)[:40]!r} is not a whole number of accelerators"


def resources(value: Any) -> str:
    """A node's allocatable or capacity: accelerator entries are counts; the rest unread."""
    return "" if isinstance(value, dict) else f"{_type(value)}, not a mapping"


def _resource_entries(value: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        (str(name), problem)
        for name, amount in value.items()
        if str(name).startswith(ACCELERATOR_PREFIXES) and (problem := count(amount))
    ]


_RESOURCE = {
    "name": text,
    "nominalQuota": quantity,
    "borrowingLimit": optional_quantity,
    "lendingLimit": optional_quantity,
}
_FAIR = {"weight": optional_quantity}
_AMOUNTS = {"*": quantity}  # Volcano's deserved, capability, guarantee
_TOLERATION = {"key": text, "value": scalar, "effect": text, "operator": text}
METADATA = {"name": text, "namespace": text, "labels": {"*": scalar}}
SHAPES: dict[str, Shape] = {
    "Node": {
        "spec": {"taints": [_TOLERATION]},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "nodeInfo": {"kubeletVersion": scalar},
        },
    },
    "ResourceFlavor": {
        "spec": {
            "nodeLabels": {"*": scalar},
            "nodeTaints": [_TOLERATION],
            "tolerations": [_TOLERATION],
            "topologyName": text,
        }
    },
    "ClusterQueue": {
        "spec": {
            "cohort": text,
            "cohortName": text,
            "resourceGroups": [
                {
                    "coveredResources": [scalar],
                    "flavors": [{"name": text, "resources": [_RESOURCE]}],
                }
            ],
            "flavorFungibility": {"*": scalar},
            "preemption": {
                "withinClusterQueue": text,
                "reclaimWithinCohort": text,
                "borrowWithinCohort": {"policy": text, "maxPriorityThreshold": integer},
            },
            "fairSharing": _FAIR,
            "namespaceSelector": {"*": lambda v: ""},
            "admissionChecks": [scalar],
            "admissionChecksStrategy": {"admissionChecks": [{"name": text, "onFlavors": [scalar]}]},
            "stopPolicy": text,
            "queueingStrategy": text,
        }
    },
    "LocalQueue": {"spec": {"clusterQueue": text, "stopPolicy": text}},
    "Cohort": {"spec": {"parentName": text, "fairSharing": _FAIR}},
    "PriorityClass": {
        "value": integer,
        "preemptionPolicy": text,
        "globalDefault": boolean,
        "description": scalar,
    },
    "WorkloadPriorityClass": {"value": integer, "description": scalar},
    "Topology": {"spec": {"levels": [{"nodeLabel": text}]}},
    "ResourceQuota": {"spec": {"hard": {"*": quantity}}},
    "Queue": {
        "spec": {
            "parent": text,
            "weight": scalar,
            "reclaimable": boolean,
            "deserved": _AMOUNTS,
            "capability": _AMOUNTS,
            "guarantee": {"resource": _AMOUNTS},
            "affinity": {
                "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [scalar]}
            },
        }
    },
    "ClusterPolicy": {
        "spec": {
            "migManager": {"config": {"name": text}},
            "devicePlugin": {"config": {"name": text, "default": text}},
            "mig": {"strategy": text},
        }
    },
    "ConfigMap": {"data": {"*": scalar}},
    "AdmissionCheck": {"spec": {"controllerName": text, "parameters": {"name": text}}},
    "MultiKueueConfig": {"spec": {"clusters": [scalar]}},
    "MultiKueueCluster": {
        "spec": {
            "clusterSource": {
                "clusterProfileRef": {"name": text},
                "kubeConfig": {"locationType": text, "location": text},
            },
            "clusterProfileRef": {"name": text},
            "kubeConfig": {"locationType": text, "location": text},
        }
    },
}


def anything(value: Any) -> str:
    return ""


def _filters(value: Any) -> str:
    return "" if isinstance(value, str) else next((p for _, p in problems(value, [scalar])), "")


def _gpus(value: Any) -> str:
    if value == "all":
        return ""
    return next((p for _, p in problems(value, [integer])), "")


_SHARED = {
    "renameByDefault": boolean,
    "failRequestsGreaterThanOne": boolean,
    "resources": [{"name": text, "replicas": count}],
}
# The embedded configs import reads: mig-parted's, the device plugin's, Kueue's Configuration
# and Volcano's scheduler config (the parts each reader reads; the rest stays text).
MIG_CONFIG = {
    "mig-configs": {
        "*": [
            {
                "device-filter": _filters,
                "devices": _gpus,
                "mig-enabled": boolean,
                "mig-devices": {"*": count},
            }
        ]
    }
}
SHARING_CONFIG = {
    "flags": {"migStrategy": text},
    "sharing": {"timeSlicing": _SHARED, "mps": _SHARED},
}
KUEUE_CONFIG = {
    "apiVersion": text,
    "kind": text,
    "integrations": {"frameworks": [scalar]},
    "fairSharing": {"enable": boolean},
    "waitForPodsReady": {"enable": boolean},
    "resources": {"*": anything},
}
VOLCANO_CONFIG = {
    "actions": scalar,
    "tiers": [{"plugins": [{"name": scalar, "arguments": {"*": anything}}]}],
    "configurations": [{"name": scalar, "arguments": {"*": anything}}],
    "metrics": {"*": scalar},
}


def problems(value: Any, shape: Shape, path: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """(field path, what is wrong) for every field of `value` that `shape` types wrongly."""
    if depth > _DEPTH:
        return []
    if callable(shape):
        problem = shape(value)
        if problem or shape is not resources:
            return [(path, problem)] if problem else []
        return [(f"{path}[{name}]", p) for name, p in _resource_entries(value)]
    if value is None:  # an empty (null) mapping or list: nothing in it to read
        return []
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [(path, f"{_type(value)}, not a list")]
        listed: list[tuple[str, str]] = []
        for index, item in enumerate(value):
            if item is None and not callable(shape[0]):
                listed.append((f"{path}[{index}]", "null, not a mapping"))
            listed += problems(item, shape[0], f"{path}[{index}]", depth + 1)
        return listed
    if not isinstance(value, dict):
        return [(path, f"{_type(value)}, not a mapping")]
    found: list[tuple[str, str]] = []
    for key, item in value.items():
        inner = shape.get(key, shape.get("*")) if isinstance(key, str) else shape.get("*")
        if inner is not None:
            where = f"{path}.{key}" if path else str(key)
            found += problems(item, inner, where, depth + 1)
    return found


def object_problems(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What is wrong with the fields import reads of one object (its kind known a string)."""
    found = problems(obj.get("metadata"), METADATA, "metadata")
    found += problems(dict(obj), SHAPES.get(str(obj.get("kind")), {}))
    labels = (obj.get("metadata") or {}).get("labels") if not found else None
    if obj.get("kind") == "Node" and isinstance(labels, dict) and GPU_COUNT_LABEL in labels:
        problem = count(labels[GPU_COUNT_LABEL])
        if problem:
            found.append((f"metadata.labels[{GPU_COUNT_LABEL}]", problem))
    return found


def embedded(name: str, value: Any, shape: Shape) -> tuple[Any, str]:
    """The one YAML document of a ConfigMap value, read by the bounded loader (duplicate keys,
    aliases and depth bounded) and checked against `shape`; (None, what is wrong) when it
    cannot be read so."""
    data: Any = None
    if not isinstance(value, str):
        return None, f"{_type(value)}, not a string"
    for part in read_documents(name, value):
        if isinstance(part, Diagnostic):
            return None, f"not readable YAML: {part.message} (line {part.span.line} of the value)"
        if isinstance(part, Parsed) and data is None:
            data = part.data
    found = problems(data, shape)
    if found:
        path, problem = found[0]
        return None, f"{path or 'the value'} is {problem}"
    return data, ""
