"""A pod's node selection against a node's labels: Kubernetes' rule, the one copy every stage
uses (explain's placement and Kueue flavor replay, diff's "jobs no flavor admits" hazard).

`k8s.io/component-helpers/scheduling/corev1/nodeaffinity`: a NodeSelectorRequirement's `In`,
`NotIn`, `Exists` and `DoesNotExist` compare label values as strings; `Gt` and `Lt` take one
value, and both it and the node's label must parse as a base-10 int64 (`strconv.ParseInt`:
ASCII digits, an optional sign, nothing else), or the requirement does not hold. kube-scheduler
and Kueue's flavorSelector both match with this code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_INT64 = re.compile(r"[+-]?[0-9]+")


def label_integer(value: Any) -> int | None:
    """`value` as Go's strconv.ParseInt(value, 10, 64) reads it, or None where Go errs."""
    text = str(value)
    if not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -(1 << 63) <= number < (1 << 63) else None


def requirement_holds(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One NodeSelectorRequirement against a node's labels; an unknown operator holds nowhere
    (the API server refuses it before any node is matched)."""
    key, operator = str(requirement.get("key", "")), requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or ()]
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and key in labels and len(values) == 1:
        have, bound = label_integer(labels[key]), label_integer(values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False
