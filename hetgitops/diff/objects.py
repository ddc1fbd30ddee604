"""Diff stage, objects: which generated objects are added, removed, renamed or changed per
target, field by field (see `structure`), with ConfigMap data diffed as embedded YAML."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from hetgitops.diff.structure import FieldChange, apply, diff, same
from hetgitops.output.manifests import Manifest

# cluster ("" for one cluster), target, API group, kind, namespace, name
ObjectKey = tuple[str, str, str, str, str, str]
# Below this share of identical fields a removed and an added object are not one renamed.
RENAME_SIMILARITY = 0.75
# Pairing is quadratic per kind: past this many candidates, renames show as remove + add.
MAX_RENAME_CANDIDATES = 200


@dataclass(frozen=True)
class ObjectChange:
    """One object's change. `fields` replays `before` into `after` (a rename includes the
    metadata.name change); `embedded` holds ConfigMap data keys diffed as YAML documents."""

    op: str  # added, removed, changed, renamed
    target: str
    kind: str
    namespace: str
    name: str
    file: str
    applied: bool
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    fields: tuple[FieldChange, ...] = ()
    old_name: str = ""
    embedded: Mapping[str, tuple[FieldChange, ...]] = field(default_factory=dict)
    cluster: str = ""  # multi-cluster fleets: whose tree the object is in

    @property
    def place(self) -> str:
        """Where the object is applied: the target, under its cluster in a multi-cluster fleet."""
        return f"{self.cluster}/{self.target}" if self.cluster else self.target

    @property
    def title(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        if self.op == "renamed":
            return f"{self.kind} {where}{self.old_name} -> {self.name}"
        return f"{self.kind} {where}{self.name}"


def object_key(manifest: Manifest) -> ObjectKey:
    """Objects are the same when cluster, target, API group, kind, namespace and name match
    (an apiVersion bump is a field change, not a new object; the same ClusterQueue on two
    clusters is two objects); files without a kind (Helm values) or a name (Kueue's
    Configuration fragment) by their file name."""
    cluster = manifest.cluster or ""
    if not manifest.kind or (not manifest.name and manifest.filename):
        return (cluster, manifest.target, "", "", "", manifest.relative_path())
    group = str(manifest.obj.get("apiVersion", "")).rpartition("/")[0]
    return (cluster, manifest.target, group, manifest.kind, manifest.namespace, manifest.name)


def _index(manifests: Iterable[Manifest]) -> dict[ObjectKey, Manifest]:
    return {object_key(m): m for m in manifests}


def _kind(manifest: Manifest) -> str:
    return manifest.kind or "File"


def _name(manifest: Manifest) -> str:
    return manifest.name or manifest.relative_path()


def _change(op: str, before: Manifest | None, after: Manifest | None) -> ObjectChange:
    shown = after or before
    assert shown is not None
    old, new = (before.obj if before else None), (after.obj if after else None)
    fields = tuple(diff(old, new)) if old is not None and new is not None else ()
    return ObjectChange(
        op,
        shown.target,
        _kind(shown),
        shown.namespace,
        _name(shown),
        shown.relative_path(),
        shown.applied,
        old,
        new,
        fields,
        old_name=_name(before) if before and op == "renamed" else "",
        embedded=_embedded(old, new) if old is not None and new is not None else {},
        cluster=shown.cluster or "",
    )


def _embedded(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> dict[str, tuple[FieldChange, ...]]:
    """ConfigMap values that are YAML documents (mig-parted, device-plugin, scheduler
    configs) diffed structurally, so a reviewer sees `mig-devices` change, not a text blob."""
    if after.get("kind") != "ConfigMap":
        return {}
    old, new = before.get("data") or {}, after.get("data") or {}
    found: dict[str, tuple[FieldChange, ...]] = {}
    for key in sorted(set(old) & set(new)):
        if old[key] == new[key]:
            continue
        left, right = _parsed(old[key]), _parsed(new[key])
        if isinstance(left, dict | list) and isinstance(right, dict | list):
            found[key] = tuple(diff(left, right))
    return found


def _parsed(text: Any) -> Any:
    try:
        return yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None


def _leaves(value: Any, prefix: str = "") -> set[tuple[str, str]]:
    if isinstance(value, Mapping):
        return {leaf for k, v in value.items() for leaf in _leaves(v, f"{prefix}.{k}")}
    if isinstance(value, list):
        return {leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{prefix}[{i}]")}
    return {(prefix, repr(value))}


def _similarity(before: Manifest, after: Manifest) -> float:
    def body(m: Manifest) -> set[tuple[str, str]]:
        meta = {k: v for k, v in m.obj.get("metadata", {}).items() if k != "name"}
        return _leaves({**m.obj, "metadata": meta})

    left, right = body(before), body(after)
    return len(left & right) / max(len(left | right), 1)


def _pair_renames(
    removed: dict[ObjectKey, Manifest], added: dict[ObjectKey, Manifest]
) -> list[tuple[ObjectKey, ObjectKey]]:
    """Greedy best-first pairing of removed and added objects of one kind by content."""
    pairs: list[tuple[ObjectKey, ObjectKey]] = []
    kinds = {k[:5] for k in removed} & {k[:5] for k in added}
    for kind in sorted(kinds):
        olds = [k for k in removed if k[:5] == kind]
        news = [k for k in added if k[:5] == kind]
        if len(olds) * len(news) > MAX_RENAME_CANDIDATES**2 // 4:
            continue
        scored = sorted(
            ((-_similarity(removed[o], added[n]), o, n) for o in olds for n in news),
        )
        used: set[ObjectKey] = set()
        for score, old, new in scored:
            if -score < RENAME_SIMILARITY:
                break
            if old not in used and new not in used:
                used.update((old, new))
                pairs.append((old, new))
    return pairs


def object_changes(before: Sequence[Manifest], after: Sequence[Manifest]) -> list[ObjectChange]:
    """Every object-level change, in apply order of the head side (removals at the end)."""
    old, new = _index(before), _index(after)
    changes: list[ObjectChange] = []
    for key, manifest in new.items():
        if key in old and not same(old[key].obj, manifest.obj):
            changes.append(_change("changed", old[key], manifest))
    removed = {k: m for k, m in old.items() if k not in new}
    added = {k: m for k, m in new.items() if k not in old}
    for old_key, new_key in _pair_renames(removed, added):
        changes.append(_change("renamed", removed.pop(old_key), added.pop(new_key)))
    changes += [_change("added", None, m) for m in added.values()]
    changes += [_change("removed", m, None) for m in removed.values()]
    return sorted(changes, key=_order)


_OPS = {"added": 0, "renamed": 1, "changed": 2, "removed": 3}


def _order(change: ObjectChange) -> tuple[str, str, int, str, str, str]:
    return (
        change.cluster,
        change.target,
        _OPS[change.op],
        change.kind,
        change.namespace,
        change.name,
    )


def ignored(change: ObjectChange, patterns: Sequence[str]) -> bool:
    """`--ignore KIND` or `KIND/NAME` (NAME may be a glob); kinds match case-insensitively."""
    for pattern in patterns:
        kind, _, name = pattern.partition("/")
        if kind.lower() != change.kind.lower():
            continue
        names = (change.name, change.old_name) if change.old_name else (change.name,)
        if not name or any(fnmatch.fnmatchcase(n, name) for n in names):
            return True
    return False


def replay(before: Sequence[Manifest], changes: Sequence[ObjectChange]) -> dict[ObjectKey, Any]:
    """The base side's objects with `changes` applied, keyed like `object_key`: equal (by
    `same`) to the head side's objects when the diff is complete."""
    objects: dict[ObjectKey, Any] = {object_key(m): m.obj for m in before}
    for change in changes:
        old_name = change.old_name or change.name
        old_key = _key_of(change, change.before, old_name)
        new_key = _key_of(change, change.after, change.name)
        if change.op == "removed":
            del objects[old_key]
        elif change.op == "added":
            objects[new_key] = change.after
        else:
            objects[new_key] = apply(objects.pop(old_key), change.fields)
    return objects


def _key_of(change: ObjectChange, obj: Mapping[str, Any] | None, name: str) -> ObjectKey:
    if obj is None or not obj.get("kind") or not (obj.get("metadata") or {}).get("name"):
        return (change.cluster, change.target, "", "", "", change.file)
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return (change.cluster, change.target, group, change.kind, change.namespace, name)
