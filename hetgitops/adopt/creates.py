"""Adopt stage: what the first sync of an imported policy creates. The round trip (`roundtrip`)
says what it changes and what it leaves unmanaged; a rendered object with no counterpart in
what was read is new to the cluster (a team namespace's accelerator ResourceQuota, a LocalQueue
for a team without one), and a reviewer should see it before the first sync, not after."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from hetgitops.adopt.findings import finding
from hetgitops.adopt.roundtrip import key
from hetgitops.adopt.sources import Imported
from hetgitops.diagnostics import Diagnostic
from hetgitops.output.manifests import Manifest

SHOWN = 8  # names listed per kind; the rest are counted


def first_sync_creates(
    imported: Sequence[Imported], manifests: Iterable[Manifest]
) -> Iterator[Diagnostic]:
    """One finding per kind the render writes and the input lacks, naming the objects, at the
    policy line of the first; a kind of which the input holds nothing at all is said to be
    unread (a dump that left it out cannot tell whether the cluster has them)."""
    read = {key(i.kind, i.namespace, i.name) for i in imported}
    kinds_read = {i.kind for i in imported}
    new: dict[str, list[tuple[str, Manifest]]] = {}
    for manifest in manifests:
        if not manifest.applied:
            continue  # node label plans and Helm values are not objects a sync applies
        meta = manifest.obj.get("metadata") or {}
        kind = str(manifest.obj.get("kind", ""))
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        if key(kind, namespace, name) in read:
            continue
        new.setdefault(kind, []).append((f"{namespace}/{name}" if namespace else name, manifest))
    for kind, found in sorted(new.items()):
        names = sorted(name for name, _ in found)
        shown = ", ".join(names[:SHOWN])
        if len(names) > SHOWN:
            shown += f" and {len(names) - SHOWN} more"
        unread = (
            ""
            if kind in kinds_read
            else f" (the input holds no {kind} at all: if the cluster has some, they were not "
            "read, and the sync may meet them)"
        )
        first = min(found, key=lambda item: item[0])[1]
        yield finding(
            "import-first-sync-creates",
            f"the first sync creates {len(names)} {kind}: {shown}{unread}",
            first.origin,
        )
