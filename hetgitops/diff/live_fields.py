"""Diff stage, `diff --kubeconfig`: the live copies of the objects a change adds or updates,
read for their managedFields and their deletion, and the `field-co-owned`
(diff/hazards/coowned.py) and `object-terminating` (diff/hazards/terminating.py) hazards they
give.

Read-only: one LIST per kind of an added or updated object (and one of the CRDs when a custom
kind is among them, to find where it is served). A kind the cluster does not serve, or the
credentials may not list, has no live copies here, and is returned as unread for the CLI to say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hetgitops.diff.hazards import Hazard
from hetgitops.diff.hazards.coowned import field_co_owned
from hetgitops.diff.hazards.terminating import object_terminating
from hetgitops.live.client import Cluster, Forbidden, NotServed, Resource
from hetgitops.live.kinds import BUILTIN, CRD_RESOURCE, Catalogue, KindKey
from hetgitops.live.session import reading
from hetgitops.output.manifests import Manifest

Ident = tuple[KindKey, str, str]  # kind, namespace, name


def updated(
    before: Sequence[Manifest], after: Sequence[Manifest]
) -> list[tuple[Manifest, Manifest]]:
    """The objects on both sides whose rendered form changes, in a stable order."""
    old = {_ident(m.obj): m for m in before}
    pairs = [(old[key], m) for m in after if (key := _ident(m.obj)) in old]
    changed = [(was, now) for was, now in pairs if was.obj != now.obj]
    return sorted(changed, key=lambda pair: (str(_ident(pair[1].obj)[0]), *_ident(pair[1].obj)[1:]))


def _ident(obj: Mapping[str, Any]) -> Ident:
    meta = obj.get("metadata") or {}
    return KindKey.of(obj), str(meta.get("namespace") or ""), str(meta.get("name") or "")


def read_live(
    cluster: Cluster, kinds: set[KindKey]
) -> tuple[dict[Ident, dict[str, Any]], tuple[str, ...]]:
    """The live objects of `kinds`, by kind, namespace and name, and the kinds that could not
    be read (not served, or the credentials may not list them)."""
    unread: list[str] = []
    custom = any((key.group, key.kind) not in BUILTIN for key in kinds)
    crds = _listed(cluster, CRD_RESOURCE, unread, "CustomResourceDefinition") if custom else []
    catalogue = Catalogue.from_crds(crds)
    found: dict[Ident, dict[str, Any]] = {}
    for key in sorted(kinds, key=str):
        resource = catalogue.resource(key)
        if resource is None:
            unread.append(str(key))
            continue
        for item in _listed(cluster, resource, unread, str(key)):
            found[_ident(item)] = item
    return found, tuple(sorted(set(unread)))


def _listed(
    cluster: Cluster, resource: Resource, unread: list[str], name: str
) -> list[dict[str, Any]]:
    """A LIST, or nothing (noted in `unread`) when the kind is not served or the credentials
    may not list it (the blast radius needs only Workloads, Pods and PodGroups)."""
    try:
        return cluster.list(resource)
    except (NotServed, Forbidden):
        unread.append(name)
        return []


def co_owned(
    before: Sequence[Manifest],
    after: Sequence[Manifest],
    *,
    kubeconfig: Any = None,
    context: str | None = None,
) -> tuple[list[Hazard], int, tuple[str, ...]]:
    """The field-co-owned hazards of the updated objects and the object-terminating ones of the
    updated and added objects, the requests made, and the kinds that could not be read."""
    pairs = updated(before, after)
    known = {_ident(m.obj) for m in before}
    added = [m for m in after if _ident(m.obj) not in known]
    if not pairs and not added:
        return [], 0, ()
    kinds = {_ident(now.obj)[0] for _, now in pairs} | {_ident(m.obj)[0] for m in added}
    with reading(kubeconfig, context) as cluster:
        live, unread = read_live(cluster, kinds)
        requests = cluster.requests
    found: list[Hazard] = []
    for was, now in pairs:
        obj = live.get(_ident(now.obj))
        if obj is not None:
            found += field_co_owned(was.obj, now.obj, obj, span=now.origin)
    for now in [*(now for _, now in pairs), *added]:
        obj = live.get(_ident(now.obj))
        if obj is not None:
            found += object_terminating(now.obj, obj, span=now.origin)
    return found, requests, unread
