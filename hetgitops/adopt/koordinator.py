"""Adopt stage: Koordinator's quota trees (ElasticQuotaProfiles and ElasticQuotas).

A tree is adopted when its profile selects one imported pool by the pool label (what the
`koordinator` target writes): the Fleet then renders the `koordinator` target, with the
profiles' common `resourceRatio`, and the round trip compares every profile and quota of the
tree with the render (`compared`). The tiers' in-band PriorityClasses (`<tier>-koord`) are the
target's, not tiers of their own. The teams, their min and max, lending, namespaces and
cohorts come from the same policy as Kueue's and Volcano's: a quota that says something else
is a located `import-field-changes`, one the policy does not render `import-object-not-adopted`.

A tree no profile of which selects an imported pool (a hand-written tree on its own) is not
translated: every object of it is named with what it holds (its pool selector and ratio, its
parent, min, max and namespaces), so that nothing read is left out in silence. Koordinator's
own quotas (the reserved names) are Koordinator's and
not reported; a profile's root quota (its `spec.quotaName`) is written by the profile
controller: reported with the
profile that makes it, and never compared.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from hetgitops.adopt.findings import finding
from hetgitops.adopt.sources import Imported
from hetgitops.diagnostics import Diagnostic
from hetgitops.drift.normalise import KOORDINATOR_ANNOTATIONS
from hetgitops.model import quantities
from hetgitops.plan.koordinator_priority import SUFFIX, band_of
from hetgitops.plan.koordinator_quota import RESERVED_NAMES

GROUPS = ("quota.koordinator.sh", "scheduling.sigs.k8s.io")
TARGET = "koordinator"
PROFILE = "ElasticQuotaProfile"
QUOTA = "ElasticQuota"
KINDS = (PROFILE, QUOTA)
_PREFIX = "quota.scheduling.koordinator.sh"
_RATIO = re.compile(r"0\.[0-9]*[1-9][0-9]*|1(\.0+)?")
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


def _pool_selected(
    profile: Imported, pools: Mapping[str, Sequence[Mapping[str, str]]]
) -> str | None:
    """The imported pool a profile selects: by the pool label the target writes, or by
    labels that select every node of exactly one pool and no node of another; else None."""
    selector = _spec(profile).get("nodeSelector")
    labels = selector.get("matchLabels") if isinstance(selector, Mapping) else None
    if not isinstance(labels, Mapping) or not labels:
        return None
    if len(labels) == 1:
        ((key, value),) = labels.items()
        if str(key).endswith("/pool") and str(value) in pools:
            return str(value)
    wanted = {str(k): str(v) for k, v in labels.items()}

    def selects(node: Mapping[str, str]) -> bool:
        return all(node.get(k) == v for k, v in wanted.items())

    hits = {name for name, nodes in pools.items() if any(selects(n) for n in nodes)}
    if len(hits) != 1:
        return None
    name = hits.pop()
    return name if all(selects(n) for n in pools[name]) else None


def adopt(
    by_kind: Mapping[str, Sequence[Imported]],
    pools: Mapping[str, Sequence[Mapping[str, str]]],
    fleet: dict[str, Any],
) -> set[str]:
    """Turns the `koordinator` target on in `fleet` (its spec) when a profile selects one of
    `pools` (name -> its nodes' labels); returns the PriorityClass names that are the
    target's (none when it stays off)."""
    adopted = [p for p in by_kind.get(PROFILE, ()) if _pool_selected(p, pools) is not None]
    if not adopted:
        return set()
    targets = fleet["targets"]
    if TARGET not in targets:
        targets.append(TARGET)
    ratios = {str(_spec(p).get("resourceRatio", "1")) for p in adopted}
    # One ratio the policy can say (in (0, 1], schemas/fleet.schema.json); several, or one
    # the policy refuses, stay at the default and the round trip reports each profile's.
    if len(ratios) == 1 and ratios != {"1"} and _RATIO.fullmatch(next(iter(ratios))):
        fleet["koordinator"] = {"resourceRatio": ratios.pop()}
    classes = {c.name for c in by_kind.get("PriorityClass", ())}
    return {n for n in classes if n.endswith(SUFFIX) and n.removesuffix(SUFFIX) in classes}


def not_rendered(item: Imported) -> str:
    """Why a profile or quota of an adopted tree has no counterpart in the render."""
    if item.kind == PROFILE:
        return (
            f"ElasticQuotaProfile {item.name}: the policy writes one profile per pool, named "
            "after the pool and selecting its nodes by the pool label, with root quota "
            "pool-<pool>; this one stays unmanaged beside it (two profiles over the same nodes "
            "make two trees: delete this one after the first sync)"
        )
    spec = _spec(item)
    return (
        f"ElasticQuota {item.name} (parent {item.labels.get(f'{_PREFIX}/parent', 'none')}, min "
        f"{_amounts(spec.get('min'))}, max {_amounts(spec.get('max'))}): the policy names a "
        "team's quota <team>-<pool> and a cohort's cohort-<cohort>-<pool>, under its pool's "
        "profile; this one is not the policy's and stays unmanaged"
    )


def adopted(targets: Sequence[str]) -> bool:
    return TARGET in targets


def roots(imported: Sequence[Imported]) -> set[str]:
    """The root quotas the profile controller writes (each profile's quotaName), and
    Koordinator's own: neither is the policy's."""
    named = {str(_spec(p).get("quotaName")) for p in imported if p.kind == PROFILE}
    return named | set(RESERVED_NAMES)


def _kept(obj: Mapping[str, Any], field: str, ignored: tuple[str, ...]) -> dict[str, str]:
    """Koordinator's labels or annotations of the object, without what its controllers write."""
    values = (obj.get("metadata") or {}).get(field) or {}
    return {
        str(k): str(v)
        for k, v in values.items()
        if str(k).startswith(f"{_PREFIX}/") and str(k) not in ignored
    }


def compared(obj: Mapping[str, Any], *, live: bool) -> dict[str, Any]:
    """What the round trip compares of a profile or quota: its spec (quantities normalised
    on the imported side) and Koordinator's labels and annotations, which carry the tree
    (parent, is-parent, tree-id, allow-lent-resource, namespaces, resource-keys); what the
    controllers write (drift's list) is left out."""
    spec = obj.get("spec")
    spec = dict(spec) if isinstance(spec, Mapping) else {}
    if live:
        for field in ("min", "max"):
            if isinstance(spec.get(field), Mapping):
                spec[field] = {r: quantities.normalize(str(q)) for r, q in spec[field].items()}
    found: dict[str, Any] = {"spec": spec}
    labels = _kept(obj, "labels", ())
    notes = _kept(obj, "annotations", KOORDINATOR_ANNOTATIONS)
    if obj.get("kind") == QUOTA and live:
        # What an absent label means: the webhook writes the root as the parent of a quota
        # that names none (pkg/webhook/elasticquota/quota_topology.go:230-233); is-parent is
        # "true" or not a parent, allow-lent-resource anything but "false" lends
        # (apis/extension/elastic_quota.go:69-75).
        labels.setdefault(f"{_PREFIX}/parent", "koordinator-root-quota")
        labels.setdefault(f"{_PREFIX}/is-parent", "false")
        labels.setdefault(f"{_PREFIX}/allow-lent-resource", "true")
    if labels:
        found["labels"] = labels
    if notes:
        found["annotations"] = notes
    return found


def preemptible(
    by_kind: Mapping[str, Sequence[Imported]], classes: set[str], tiers: Sequence[dict[str, Any]]
) -> None:
    """A tier whose own value lies outside every band and whose in-band class is in
    koord-batch is preemptible: the target maps exactly the preemptible tiers there
    (plan/koordinator_priority.py), and nothing else in the cluster says it."""
    values = {c.name: c.obj.get("value") for c in by_kind.get("PriorityClass", ())}
    for tier in tiers:
        name = str(tier["metadata"]["name"])
        own, mapped = values.get(name), values.get(f"{name}{SUFFIX}")
        if f"{name}{SUFFIX}" not in classes or not isinstance(mapped, int):
            continue
        if isinstance(own, int) and band_of(own) is None and band_of(mapped) == "koord-batch":
            tier["spec"]["preemptible"] = True
