"""Compile stage, shared: the Argo CD annotations that order tree-shaped objects.

Argo CD applies lower sync waves first and prunes in reverse wave order, so a wave equal to the
depth in the tree creates parents before children and deletes children before parents (Volcano
refuses a child whose parent is missing and deleting a queue that has children).
"""

from __future__ import annotations

from dataclasses import replace

from hetgitops.output.manifests import Manifest

SYNC_WAVE = "argocd.argoproj.io/sync-wave"


def sync_wave(depth: int) -> dict[str, str]:
    """Annotations for an object `depth` levels below the top of its tree."""
    return {SYNC_WAVE: str(depth)}


def with_sync_wave(manifest: Manifest) -> Manifest:
    """`manifest` with its own `depth` as the sync wave (for objects built elsewhere)."""
    meta = dict(manifest.obj.get("metadata", {}))
    annotations = {**meta.get("annotations", {}), **sync_wave(manifest.depth)}
    meta["annotations"] = dict(sorted(annotations.items()))
    return replace(manifest, obj={**manifest.obj, "metadata": meta})
