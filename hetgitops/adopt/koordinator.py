"""Adopt stage: Koordinator's quota trees (ElasticQuotaProfiles and ElasticQuotas), read and
reported, not yet translated.

The `koordinator` target renders them, but import does not read them back into pools, teams
and lending yet: until it does, every object of a tree is named with what it holds (its pool
selector and ratio, its parent, min, max and namespaces), so that nothing read is left out in
silence. Koordinator's own quotas (the reserved names, apis/extension/elastic_quota.go:30-32)
are Koordinator's and not reported; a profile's root quota (its `spec.quotaName`) is written
by the profile controller (pkg/quota-controller/profile/profile_controller.go:140-177) and is
reported with the profile that makes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hetgitops.adopt.findings import finding
from hetgitops.adopt.sources import Imported
from hetgitops.diagnostics import Diagnostic
from hetgitops.plan.koordinator_quota import RESERVED_NAMES

PROFILE = "ElasticQuotaProfile"
QUOTA = "ElasticQuota"
KINDS = (PROFILE, QUOTA)
_PREFIX = "quota.scheduling.koordinator.sh"
_WHY = (
    "import does not read Koordinator quota trees back into the policy yet; it stays as it "
    "is, outside the policy"
)


def _spec(item: Imported) -> Mapping[str, Any]:
    spec = item.obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _annotation(item: Imported, name: str) -> str:
    metadata = item.obj.get("metadata")
    notes = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return str(notes.get(f"{_PREFIX}/{name}", "")) if isinstance(notes, Mapping) else ""


def _selector(spec: Mapping[str, Any]) -> str:
    selector = spec.get("nodeSelector")
    labels = selector.get("matchLabels") if isinstance(selector, Mapping) else None
    if not isinstance(labels, Mapping) or not labels:
        return "no nodeSelector labels"
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items(), key=str))


def _amounts(value: Any) -> str:
    if not isinstance(value, Mapping) or not value:
        return "{}"
    return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"


def _profile(item: Imported) -> str:
    spec = _spec(item)
    return (
        f"ElasticQuotaProfile {item.name} (nodes {_selector(spec)}, resourceRatio "
        f"{spec.get('resourceRatio', 'unset (1)')}, root quota {spec.get('quotaName', '?')}): "
        f"{_WHY}"
    )


def _quota(item: Imported, roots: Mapping[str, str]) -> str:
    if item.name in roots:
        return (
            f"ElasticQuota {item.name}: the root quota the profile controller writes for "
            f"ElasticQuotaProfile {roots[item.name]}; it follows the profile, which {_WHY}"
        )
    spec = _spec(item)
    parent = item.labels.get(f"{_PREFIX}/parent") or "koordinator-root-quota"
    role = "parent quota" if item.labels.get(f"{_PREFIX}/is-parent") == "true" else "quota"
    lent = item.labels.get(f"{_PREFIX}/allow-lent-resource", "unset (true)")
    namespaces = _annotation(item, "namespaces") or "none"
    return (
        f"ElasticQuota {item.name} ({role} under {parent}, min {_amounts(spec.get('min'))}, "
        f"max {_amounts(spec.get('max'))}, allow-lent-resource {lent}, namespaces "
        f"{namespaces}): {_WHY}"
    )


def report(by_kind: Mapping[str, Sequence[Imported]]) -> list[Diagnostic]:
    """A finding per profile and per quota of a tree (Koordinator's own quotas excepted)."""
    profiles = sorted(by_kind.get(PROFILE, ()), key=lambda i: (i.namespace, i.name))
    roots = {str(_spec(p).get("quotaName")): p.name for p in profiles if _spec(p).get("quotaName")}
    found = [finding("import-kind-not-imported", _profile(p), p.span) for p in profiles]
    for item in sorted(by_kind.get(QUOTA, ()), key=lambda i: (i.namespace, i.name)):
        if item.name in RESERVED_NAMES:
            continue
        found.append(finding("import-kind-not-imported", _quota(item, roots), item.span))
    return found
