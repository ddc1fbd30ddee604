"""Whether tolerations tolerate a taint: Kubernetes' rule, the one copy every stage uses.

Kubernetes `k8s.io/api/core/v1` `Toleration.ToleratesTaint`: a toleration with an effect
matches only that effect (none: every effect); with a key only that key (none: every key, which
validation allows only with `Exists`); then `Exists` tolerates any value, `Equal` (or no
operator) only the taint's own value, and any other operator nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def tolerates_taint(
    toleration: Mapping[str, Any], key: str, value: str | None, effect: str
) -> bool:
    """One toleration against one taint (`ToleratesTaint`)."""
    if toleration.get("effect") and toleration["effect"] != effect:
        return False
    if toleration.get("key") and toleration["key"] != key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (value or "")


def tolerates(
    tolerations: Iterable[Mapping[str, Any]], key: str, value: str | None, effect: str
) -> bool:
    """Any of `tolerations` tolerates the taint `key=value:effect` (kube-scheduler's
    TaintToleration, the kubelet's NoExecute eviction, Kueue's flavor taint check)."""
    return any(tolerates_taint(t, key, value, effect) for t in tolerations)
