"""Adopt stage: the namespace labels a ClusterQueue's namespaceSelector matches. The round trip
compares specs, and a Namespace has none: labels the written policy does not render are named here,
so a selector that would match nothing on a cluster built from the policy is no silent change (the
policy language cannot say namespace labels yet: issue 32 item 5). Kueue admits a workload only from
a namespace whose labels its ClusterQueue's selector matches (ErrNamespaceMismatch)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from hetgitops.adopt.findings import finding
from hetgitops.adopt.sources import Imported
from hetgitops.diagnostics import Diagnostic
from hetgitops.output.manifests import Manifest


def _match_labels(queue: Imported) -> dict[str, str]:
    selector = (queue.obj.get("spec") or {}).get("namespaceSelector") or {}
    labels = selector.get("matchLabels") if isinstance(selector, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def unrendered_labels(
    imported: Sequence[Imported], manifests: Iterable[Manifest]
) -> Iterator[Diagnostic]:
    """A finding per rendered Namespace that lacks labels an imported ClusterQueue's
    `namespaceSelector.matchLabels` selects it by in the cluster."""
    rendered = {
        str((m.obj.get("metadata") or {}).get("name")): m
        for m in manifests
        if m.obj.get("kind") == "Namespace"
    }
    selectors = [(q.name, _match_labels(q)) for q in imported if q.kind == "ClusterQueue"]
    for namespace in (i for i in imported if i.kind == "Namespace" and i.name in rendered):
        has = (namespace.obj.get("metadata") or {}).get("labels") or {}
        manifest = rendered[namespace.name]
        gets = (manifest.obj.get("metadata") or {}).get("labels") or {}
        for queue, wanted in selectors:
            if not wanted or any(has.get(k) != v for k, v in wanted.items()):
                continue
            missing = sorted(f"{k}={v}" for k, v in wanted.items() if gets.get(k) != v)
            if missing:
                yield finding(
                    "import-field-changes",
                    f"Namespace {namespace.name}: the policy renders it without "
                    f"{', '.join(missing)}, which ClusterQueue {queue}'s namespaceSelector "
                    "selects it by; a server-side sync keeps the cluster's labels, but a "
                    "namespace created from the policy would not match and the queue would "
                    "admit nothing from it (the policy cannot say namespace labels yet)",
                    manifest.origin,
                    path="metadata.labels",
                )
