"""Drift stage, objects: one rendered object against its live copy (read-only mode), and the
findings about missing and orphaned objects, worded with the live object's field managers."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from hetgitops.compilers.argocd import NEVER_PRUNE
from hetgitops.diagnostics import Diagnostic, Span
from hetgitops.drift.compare import FieldDiff, attribute, compare, display
from hetgitops.drift.findings import finding, shown, writers_text
from hetgitops.drift.ignore import Ignores
from hetgitops.drift.normalise import BUILTIN_DEFAULTS, drop_tracking, strip_live
from hetgitops.drift.ownership import Ownership, Path
from hetgitops.drift.schema import apply_defaults
from hetgitops.live.kinds import KindKey
from hetgitops.model.policy import DriftIgnore, Fleet
from hetgitops.output.manifests import Manifest


def ident(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def object_name(manifest_or_obj: Manifest | Mapping[str, Any]) -> str:
    obj = manifest_or_obj.obj if isinstance(manifest_or_obj, Manifest) else manifest_or_obj
    namespace, name = ident(obj)
    return f"{obj.get('kind')} {namespace}/{name}" if namespace else f"{obj.get('kind')} {name}"


def missing(manifest: Manifest) -> Diagnostic:
    return finding(
        "drift-missing",
        f"{object_name(manifest)} is not in the cluster",
        manifest.origin,
        path=object_name(manifest),
        hint="sync the GitOps application (or apply the rendered tree); an object of a kind "
        "listed by label (Namespace, ConfigMap, ResourceQuota) that lost hetgitops' labels is "
        "not seen either",
    )


def terminating(manifest: Manifest, live: Mapping[str, Any]) -> Diagnostic | None:
    """A finding when the live object is being deleted (deletionTimestamp set): in sync
    field by field, it is still on its way out."""
    meta = live.get("metadata") or {}
    since = meta.get("deletionTimestamp")
    if not since:
        return None
    finalizers = [str(f) for f in meta.get("finalizers") or []]
    held = f"; held by {', '.join(finalizers)}" if finalizers else ""
    return finding(
        "drift-terminating",
        f"{object_name(manifest)} is being deleted (since {since}){held}",
        manifest.origin,
        path=object_name(manifest),
        hint="it goes once the finalizer's controller lets go (a ClusterQueue waits for its "
        "admitted workloads); then sync to create it again, after finding who deleted it",
    )


def orphan(obj: Mapping[str, Any], fleet: Fleet) -> Diagnostic:
    writer = Ownership(obj).latest()
    by = f"; last written by {writer}" if writer else ""
    return finding(
        "drift-orphan",
        f"{object_name(obj)} carries this fleet's labels but the policy no longer renders it{by}",
        fleet.origin.span,
        path=object_name(obj),
        hint=_orphan_hint(obj),
    )


def _orphan_hint(obj: Mapping[str, Any]) -> str:
    """How the object goes. hetgitops marks what it must never lose by accident (Namespaces:
    every workload, PVC and Secret in them) as never pruned; no GitOps tool removes those."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if any(annotations.get(key) == value for key, value in NEVER_PRUNE.items()):
        return (
            "no GitOps tool prunes it (hetgitops marks it never to be pruned: "
            + ", ".join(f"{k}: {v}" for k, v in NEVER_PRUNE.items())
            + "); move or drop what runs in it, then delete it by hand"
        )
    return "delete it, or let the GitOps tool prune it"


def desired_form(obj: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The desired object as the API server would store it: CRD schema defaults (read from
    the live CRD), or the built-in kinds' server defaults."""
    key = KindKey.of(obj)
    result = apply_defaults(dict(obj), schema)
    default = BUILTIN_DEFAULTS.get((key.group, key.kind)) if schema is None else None
    if default is not None:
        result = copy.deepcopy(result)
        default(result)
    return dict(result)


def compare_object(
    manifest: Manifest,
    live: Mapping[str, Any],
    schema: Mapping[str, Any] | None,
    *,
    managers: tuple[str, ...],
    ignore: Sequence[DriftIgnore] = (),
) -> list[Diagnostic]:
    """Findings about one live object against its manifest (read-only mode)."""
    want = desired_form(manifest.obj, schema)
    have = strip_live(live)
    drop_tracking(have, want)
    diffs, extras = compare(want, have, schema=schema)
    if not diffs and not extras:
        return []
    ownership = Ownership(live)
    found = []
    for diff in (attribute(d, ownership) for d in diffs):
        if not Ignores.skips(ignore, diff.path, diff.writers):
            where = manifest.origin_of(desired_path(want, have, diff.path))
            found.append(_changed(manifest, diff, ownership, managers, where))
    for path, value in extras:
        writers = ownership.under(path)
        # Nobody wrote it: the server or a default filled it in, or the ignore rules allow it.
        if writers and not Ignores.skips(ignore, path, writers):
            diff = FieldDiff("extra", path, display(live, path), live=value, writers=tuple(writers))
            where = manifest.origin_of(desired_path(want, have, path))
            found.append(_extra(manifest, diff, managers, where))
    return found


def desired_path(want: Any, have: Any, path: Path) -> Path:
    """`path` into the live object as a path into the desired one: a list entry with a `name`
    (a ClusterQueue's flavors and resources) is where the desired list has that name, since
    the live list may hold them in another order; other positions stay as they are."""
    out: list[str | int] = []
    for step in path:
        if isinstance(step, int) and isinstance(have, list) and isinstance(want, list):
            item = have[step] if step < len(have) else None
            name = item.get("name") if isinstance(item, dict) else None
            named = [
                i for i, w in enumerate(want) if name is not None and isinstance(w, dict)
                and w.get("name") == name
            ]  # fmt: skip
            step = named[0] if named else step
            out.append(step)
            have, want = item, want[step] if step < len(want) else None
        elif isinstance(step, str) and isinstance(have, dict):
            out.append(step)
            have, want = have.get(step), want.get(step) if isinstance(want, dict) else None
        else:
            out.append(step)
            have = want = None
    return tuple(out)


def _changed(
    manifest: Manifest,
    diff: FieldDiff,
    ownership: Ownership,
    managers: tuple[str, ...],
    where: Span,
) -> Diagnostic:
    name = object_name(manifest)
    secret = manifest.kind == "Secret"
    if diff.change == "missing":
        latest = ownership.latest(excluding=managers)
        by = f"; last updated by {latest}" if latest else ""
        return finding(
            "drift-field-missing",
            f"{name}: {diff.display} is absent (desired {_value(diff.desired, secret)}){by}",
            where,
            path=f"{name}: {diff.display}",
        )
    return finding(
        "drift-changed",
        f"{name}: {diff.display}: desired {_value(diff.desired, secret)}, live "
        f"{_value(diff.live, secret)}; changed by {writers_text(diff.writers)}",
        where,
        path=f"{name}: {diff.display}",
        hint=_manager_hint(diff, managers),
    )


def _extra(
    manifest: Manifest, diff: FieldDiff, managers: tuple[str, ...], where: Span
) -> Diagnostic:
    name = object_name(manifest)
    appliers = [w for w in diff.writers if w.manager in managers and w.operation == "Apply"]
    secret = manifest.kind == "Secret"
    if appliers and len({w.manager for w in diff.writers}) > 1:
        return finding(
            "drift-co-owned",
            f"{name}: {diff.display} is no longer in the policy but still live "
            f"({_value(diff.live, secret)}), owned by {writers_text(diff.writers)}: a sync "
            "never removes it (server-side apply removes a field only when no other manager "
            "owns it)",
            where,
            path=f"{name}: {diff.display}",
            hint="make every other manager let go: apply once as it without the field "
            "(kubectl apply --server-side --field-manager=NAME), or remove the field with a "
            "JSON patch (kubectl patch --type=json, op remove)",
        )
    if appliers:
        return finding(
            "drift-removed",
            f"{name}: {diff.display} is no longer in the policy but still live "
            f"({_value(diff.live, secret)}), owned by {writers_text(appliers)}",
            where,
            path=f"{name}: {diff.display}",
            hint="sync with pruning so the applier drops the field, or remove it by hand",
        )
    return finding(
        "drift-added",
        f"{name}: {diff.display} = {_value(diff.live, secret)} is not in the policy; set by "
        f"{writers_text(diff.writers)}",
        where,
        path=f"{name}: {diff.display}",
        hint="remove it, or add an ignore rule to the Fleet (spec.drift.ignore) if another "
        "team owns it deliberately",
    )


def _manager_hint(diff: FieldDiff, managers: tuple[str, ...]) -> str:
    if diff.writers and all(w.manager in managers for w in diff.writers):
        return "the applier wrote this value: the cluster runs an older render; sync it"
    return "a sync restores the policy's value; change the policy if the live value is right"


def _value(value: Any, secret: bool) -> str:
    """Secret data is never printed."""
    return "<redacted>" if secret else shown(value)
