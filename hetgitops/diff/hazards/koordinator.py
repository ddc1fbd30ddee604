"""Diff stage, day-2 hazards of Koordinator's quota trees (ElasticQuota, ElasticQuotaProfile):
what Koordinator v1.8.0's quota webhook (pkg/webhook/elasticquota) refuses whichever order the
objects are applied in, each with the staged sequence that gets there."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hetgitops.diff.hazards.reading import by_kind, kept, spec_of
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.output.manifests import Manifest

PREFIX = "quota.scheduling.koordinator.sh"
QUOTA, PROFILE = "ElasticQuota", "ElasticQuotaProfile"


def _labels(m: Manifest) -> Mapping[str, Any]:
    meta = m.obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _label(m: Manifest, name: str) -> str:
    return str(_labels(m).get(f"{PREFIX}/{name}", ""))


def _label_changes(
    before: Sequence[Manifest], after: Sequence[Manifest], kinds: Sequence[str], name: str
) -> Iterator[tuple[str, Manifest, str, str]]:
    """Objects of `kinds` on both sides whose label `quota.scheduling.koordinator.sh/<name>`
    changes: (kind, the object as after, the value before, the value after)."""
    for kind in kinds:
        for _, was, now in kept(before, after, kind):
            old, new = _label(was, name), _label(now, name)
            if old != new:
                yield kind, now, old, new


def _keys(m: Manifest) -> set[str]:
    if m.kind == PROFILE:
        meta = m.obj.get("metadata") or {}
        text = (meta.get("annotations") or {}).get(f"{PREFIX}/resource-keys")
        try:
            return {str(k) for k in json.loads(text)} if text else {"cpu", "memory"}
        except (TypeError, ValueError):
            return set()
    found = spec_of(m).get("max")
    return {str(k) for k in found} if isinstance(found, Mapping) else set()


@hazard_rule(
    "koordinator-key-set-changed",
    when=(
        "A Koordinator quota tree gains or loses a resource key (a card type, MIG profile or "
        "sharing mode added to or removed from a pool): the quota webhook requires a quota's "
        "max keys to equal its parent's and its children's on every update, so the change is "
        "refused whichever object is applied first (koordinator issue #1747)."
    ),
    fix=(
        "turn on koord-manager's ElasticQuotaEnableUpdateResourceKey gate, sync in order "
        "(to add a key: the profile, wait for its root quota, then parents, then leaves; to "
        "remove one: leaves, parents, then the profile), then turn the gate off."
    ),
)
def key_set_changed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """checkSubAndParentGroupQuotaKey (quota_topology_check.go:209-260): without the alpha gate
    ElasticQuotaEnableUpdateResourceKey a quota's max keys must be the same set as its
    parent's (:221-224) and its children's (:245-248). The profile's root is written by the
    controller through the same webhook, so even the profile cannot go first."""
    for kind in (PROFILE, QUOTA):
        for _, was, now in kept(before, after, kind):
            added = sorted(_keys(now) - _keys(was))
            removed = sorted(_keys(was) - _keys(now))
            if not added and not removed:
                continue
            said = "; ".join(
                part
                for part in (
                    f"adds {', '.join(added)}" if added else "",
                    f"drops {', '.join(removed)}" if removed else "",
                )
                if part
            )
            yield Hazard(
                rule="koordinator-key-set-changed",
                subject=f"{kind} {now.name}",
                message=f"{said}: Koordinator's webhook refuses any quota whose max keys differ "
                "from "
                "its parent's or children's, so neither the parent nor the children can be "
                "updated first",
                action="enable ElasticQuotaEnableUpdateResourceKey on koord-manager, then sync "
                + (
                    "the profile, its root, the parents and the leaves in that order"
                    if added
                    else "the leaves, the parents and the profile in that order"
                )
                + ", then disable the gate",
                span=now.origin,
            )


def _children(manifests: Mapping[str, Manifest]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for m in manifests.values():
        found.setdefault(_label(m, "parent"), []).append(m.name)
    return found


@hazard_rule(
    "koordinator-quota-removed",
    when=(
        "An ElasticQuota leaves the policy (a team, cohort or pool removed or renamed): the "
        "webhook refuses to delete a quota that still has child quotas or pods bound to it, "
        "and the pods of a removed leaf fall into koordinator-default-quota."
    ),
    fix=(
        "drain the quota first: move or finish its pods (jobs labelled with it, pods in the "
        "namespaces it binds), delete its children before it, then sync."
    ),
)
def quota_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """ValidDeleteQuota (quota_topology.go:159-205): a quota with children or bound pods
    cannot be deleted; GitOps pruning deletes it anyway and is refused until it is empty."""
    old, new = by_kind(before, QUOTA), by_kind(after, QUOTA)
    kids = _children(old)
    named = {m.name: m for m in new.values()}
    for name in sorted(set(old) - set(new)):
        m = old[name]
        staying = sorted(
            k for k in kids.get(m.name, []) if k in named and _label(named[k], "parent") == m.name
        )
        parent = _label(m, "is-parent") == "true"
        what = (
            f"still has the children {', '.join(staying)} in the new policy"
            if staying
            else ("has children until they are deleted" if parent else "may have pods bound")
        )
        yield Hazard(
            rule="koordinator-quota-removed",
            subject=f"ElasticQuota {m.name}",
            message=f"is removed, but Koordinator's webhook refuses to delete a quota that {what}; "
            "its pods would fall into koordinator-default-quota",
            action="move its pods to their new quota (relabel "
            "quota.scheduling.koordinator.sh/name) "
            "or let them finish, and move or delete its children first; then sync",
            span=m.origin,
        )


@hazard_rule(
    "koordinator-is-parent-flipped",
    when=(
        "An ElasticQuota turns from parent to leaf or back (a cohort made a team or the "
        "reverse): the webhook refuses is-parent false while it has children and true while "
        "pods are bound to it."
    ),
    fix=(
        "to make a leaf a parent, drain its pods first; to make a parent a leaf, move its "
        "children to another parent first (a separate sync), then flip it."
    ),
)
def is_parent_flipped(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """checkIsParentChange (quota_topology_check.go:163-184)."""
    for _, m, _was, now in _label_changes(before, after, (QUOTA,), "is-parent"):
        if now == "true":
            message = "becomes a parent; the webhook refuses it while pods are bound to it"
            action = "drain the quota's pods (or move them to their new leaf), then sync"
        else:
            message = "becomes a leaf; the webhook refuses it while it has children"
            action = "move its children to their new parent in one sync, then flip it in the next"
        yield Hazard(
            rule="koordinator-is-parent-flipped",
            subject=f"ElasticQuota {m.name}",
            message=message,
            action=action,
            span=m.origin,
        )


@hazard_rule(
    "koordinator-tree-changed",
    when=(
        "An ElasticQuota or ElasticQuotaProfile keeps its name but changes its tree-id (it "
        "moves to another pool's tree, or a profile is recreated under another id): the "
        "webhook refuses any change of a quota's tree id."
    ),
    fix=(
        "give the quota a new name in the new tree (a new object), move its pods to it, then "
        "remove the old one."
    ),
)
def tree_changed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """checkTreeID (quota_topology_check.go:131-161): a quota's tree id never changes, and
    equals its parent's and children's."""
    for kind, m, was, now in _label_changes(before, after, (PROFILE, QUOTA), "tree-id"):
        yield Hazard(
            rule="koordinator-tree-changed",
            subject=f"{kind} {m.name}",
            message=f"changes tree-id {was or '(none)'} to {now or '(none)'}; Koordinator's "
            "webhook refuses a quota whose tree id changes",
            action="create the quota under a new name in the new tree, move its pods there, then "
            "remove the old quota",
            span=m.origin,
        )
