"""Diff stage, day-2 hazards read from the live cluster (`diff --kubeconfig`): a field the change
removes that two field managers own, so the API server keeps it.

Server-side apply removes a field the applier applied before and omits now only when no other
manager (applier or updater) owns it; otherwise only the applier's ownership goes and the field
stays. Which fields are removed is read from the live object's managedFields
(`live.managed_fields`): an owned path the base render holds and the head render does not,
reported at the outermost field that goes (a map key, or a list entry by its merge key). An
atomic value (a ClusterQueue's `resourceGroups`) is one field and is replaced, not removed, so
it never fires. The Fleet does not say which GitOps tool applies it, so any two managers owning a
removed field are the hazard.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from hetgitops.diagnostics import NOWHERE, Span
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.live.managed_fields import FieldPath, json_pointer, locate, owners, present, shown

Obj = Mapping[str, Any]


def removed_owned(old: Obj, new: Obj, live: Obj) -> dict[FieldPath, tuple[str, ...]]:
    """Per field the change removes (its outermost path), every manager the live object's
    managedFields show owning it or anything inside it."""
    found: dict[FieldPath, set[str]] = {}
    for path, managers in owners(live).items():
        root = _removed_root(path, old, new)
        if root is not None:
            found.setdefault(root, set()).update(managers)
    return {root: tuple(sorted(managers)) for root, managers in sorted(found.items())}


def _removed_root(path: FieldPath, old: Obj, new: Obj) -> FieldPath | None:
    for end in range(1, len(path) + 1):
        prefix = path[:end]
        if not present(prefix, new):
            return prefix if present(prefix, old) else None
    return None


@hazard_rule(
    "field-co-owned",
    when="`diff --kubeconfig`: the change removes a field (a map key such as a Volcano Queue's "
    "capability or a ResourceQuota's hard key, or a list entry by its merge key) that the live "
    "object's managedFields show owned by two field managers (or more). Server-side apply "
    "removes a field only when no other manager owns it, so the sync leaves it in place: the "
    "old value keeps its effect, and a webhook that compares the object with others (Volcano's "
    "queue hierarchy, Koordinator's quota key sets) may refuse the sync.",
    fix="make the other manager let go: apply once as that manager without the field "
    "(`kubectl apply --server-side --field-manager=MANAGER` of the object without it; of just "
    "apiVersion, kind and name when that manager should own nothing), or remove the field with "
    "a JSON patch (`kubectl patch --type=json`, op remove), and stop that manager from applying "
    "it again (a second GitOps tool on the same object re-adds it).",
)
def field_co_owned(old: Obj, new: Obj, live: Obj, *, span: Span = NOWHERE) -> Iterator[Hazard]:
    """One hazard per removed field that two managers or more own."""
    for path, managers in removed_owned(old, new, live).items():
        if len(managers) < 2:
            continue
        subject = f"{_name(live)}: {shown(path)}"
        yield Hazard(
            rule="field-co-owned",
            subject=subject,
            message=f"leaves the policy, but {', '.join(managers)} own it: the API "
            "server keeps the field after the sync (server-side apply removes a field only "
            "when no other manager owns it)",
            action=_fix(live, path, managers),
            span=span,
        )


def _fix(live: Obj, path: FieldPath, managers: tuple[str, ...]) -> str:
    concrete = locate(path, live, strict=True)
    pointer = json_pointer(concrete) if concrete is not None else ""
    meta = live.get("metadata") or {}
    where = f" -n {meta['namespace']}" if meta.get("namespace") else ""
    kind = str(live.get("kind", "")).lower()
    group = str(live.get("apiVersion", "")).rpartition("/")[0]
    resource = f"{kind}.{group}" if group else kind
    patch = json.dumps([{"op": "remove", "path": pointer}])
    return (
        f"after the sync, remove it: `kubectl patch {resource} {meta.get('name', '')}{where} "
        f"--type=json -p '{patch}'`; or have each of {', '.join(managers)} that is not the "
        "sync's applier apply the object once without the field (`kubectl apply --server-side "
        "--field-manager=NAME`); either way, stop that manager from applying the field again"
    )


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    name = (
        f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
    )
    return f"{obj.get('kind')} {name}"
