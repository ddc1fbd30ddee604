"""Adopt stage: the namespace labels a ClusterQueue's namespaceSelector matches. Import keeps them
as the team's `namespaceLabels` (`kept_labels`: the labels the selector names that every one of the
team's namespaces carries alike). The round trip compares specs, and a Namespace has none: labels
the written policy still does not render (namespaces of one team labelled differently) are named
here, so a selector that would match nothing on a cluster built from the policy is no silent
change. Kueue admits a workload only from a namespace whose labels its ClusterQueue's selector
matches (ErrNamespaceMismatch, plan.namespace_labels)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from hetgitops.adopt.findings import finding
from hetgitops.adopt.sources import Imported
from hetgitops.diagnostics import Diagnostic
from hetgitops.output.manifests import Manifest
from hetgitops.plan.namespace_labels import selects

# The label the core target writes anyway on an imported team's namespaces (the imported Fleet
# keeps the default labelDomain, model/build_fleet.py).
_TEAM_LABEL = "hetgitops.io/team"


def _mapping(value: object) -> dict[str, str]:
    """A map of strings from what the input holds (a wrong-typed field is none)."""
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _mapping_of(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _selector_keys(selector: Mapping[str, Any]) -> set[str]:
    keys = set(_mapping(selector.get("matchLabels")))
    expressions = selector.get("matchExpressions")
    if not isinstance(expressions, list):
        return keys
    return keys | {str(e.get("key")) for e in expressions if isinstance(e, Mapping)}


def kept_labels(
    team: str, selector: Mapping[str, Any], namespaces: Sequence[Imported]
) -> dict[str, str]:
    """The team's `namespaceLabels`: each label the ClusterQueue's selector names that every
    one of the team's Namespaces it selects carries with one value. With none (a dump without
    Namespaces), the namespaces are taken to carry the selector's matchLabels: the team's
    LocalQueues are there, and a server-side sync of labels a namespace has changes nothing."""
    if not isinstance(selector, Mapping):
        return {}
    keys = _selector_keys(selector)
    found: list[dict[str, str]] = []
    for namespace in namespaces:
        labels = _labels(namespace.obj)
        if selects(selector, labels):  # one the queue does not admit from says nothing of it
            found.append({k: v for k, v in labels.items() if k in keys})
    if not found:
        found.append(_mapping(selector.get("matchLabels")))
    common = {k: v for k, v in found[0].items() if all(f.get(k) == v for f in found[1:])}
    if common.get(_TEAM_LABEL) == team:
        del common[_TEAM_LABEL]  # rendered anyway
    return dict(sorted(common.items()))


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return _mapping(_mapping_of(obj.get("metadata")).get("labels"))


def _selector(queue: Imported) -> Mapping[str, Any] | None:
    selector = _mapping_of(queue.obj.get("spec")).get("namespaceSelector")
    return selector if isinstance(selector, Mapping) else None


def unrendered_labels(
    imported: Sequence[Imported], manifests: Iterable[Manifest]
) -> Iterator[Diagnostic]:
    """A finding per rendered Namespace whose labels change what an imported ClusterQueue's
    namespaceSelector selects: a server-side sync merges the rendered labels into the
    cluster's, and a namespace created from the policy has the rendered ones alone."""
    rendered = {
        str(_mapping_of(m.obj.get("metadata")).get("name")): m
        for m in manifests
        if m.obj.get("kind") == "Namespace"
    }
    selectors = [(q.name, _selector(q)) for q in imported if q.kind == "ClusterQueue"]
    for namespace in (i for i in imported if i.kind == "Namespace" and i.name in rendered):
        has, manifest = _labels(namespace.obj), rendered[namespace.name]
        gets = _labels(manifest.obj)
        for queue, selector in selectors:
            if not selector:  # absent selects nothing, {} everything, whatever the labels
                continue
            why = _changed(queue, selector, has, gets)
            if why:
                yield finding(
                    "import-field-changes",
                    f"Namespace {namespace.name}: {why}",
                    manifest.origin,
                    path="metadata.labels",
                )


def _changed(
    queue: str, selector: Mapping[str, Any], has: Mapping[str, str], gets: Mapping[str, str]
) -> str:
    """What the rendered labels change for ClusterQueue `queue`, in words; "" for nothing."""
    before, synced = selects(selector, has), selects(selector, {**has, **gets})
    if before and not synced:
        return (
            f"the first sync relabels it so that ClusterQueue {queue}'s namespaceSelector no "
            "longer selects it: Kueue admits no new workload from it (admitted ones keep running)"
        )
    if not before and synced:
        return (
            f"the first sync labels it so that ClusterQueue {queue}'s namespaceSelector "
            "selects it: Kueue starts admitting its workloads to that queue"
        )
    if before and not selects(selector, gets):
        keys = _selector_keys(selector)
        missing = sorted(f"{k}={v}" for k, v in has.items() if k in keys and gets.get(k) != v)
        return (
            f"the policy renders it without {', '.join(missing)}, by which ClusterQueue "
            f"{queue}'s namespaceSelector selects it; a server-side sync keeps the cluster's "
            "labels, but a namespace created from the policy would not match and the queue "
            "would admit nothing from it (the team's namespaces are labelled differently: "
            "spec.namespaceLabels gives them all one set)"
        )
    return ""
