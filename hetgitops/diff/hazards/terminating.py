"""Diff stage, day-2 hazard read from the live cluster (`diff --kubeconfig`): an object the
change adds or updates whose live copy is being deleted.

An apply does not stop a deletion: the API server keeps `metadata.deletionTimestamp` and the
object goes once its finalizers are done, whatever the sync wrote into it; only a sync after that
creates it again. Kueue's `kueue.x-k8s.io/resource-in-use` finalizer keeps a deleted ClusterQueue
until no workload it admitted is left, and Kueue admits nothing to it meanwhile (its Active
condition is False, reason Terminating): putting a removed or renamed team back while its old
queue still runs work, as a revert does, leaves the team's pending work waiting until that work
ends (seen in the busy simulated fleet: the rename-team revert, 2026-12-06).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hetgitops.diagnostics import NOWHERE, Span
from hetgitops.diff.hazards.registry import Hazard, hazard_rule

Obj = Mapping[str, Any]


@hazard_rule(
    "object-terminating",
    when="`diff --kubeconfig`: the change adds or updates an object whose live copy is being "
    "deleted (deletionTimestamp set, finalizers pending). The sync's apply does not stop the "
    "deletion: the object goes when its finalizers are done, and only a later sync creates it "
    "again. A ClusterQueue waits for its admitted workloads to finish (Kueue's resource-in-use "
    "finalizer) and admits nothing until then.",
    fix="sync again once the object is gone (`kubectl get KIND NAME` says NotFound); to have it "
    "back sooner, let the work that holds it finish or move it elsewhere. A revert of a change "
    "that removed a ClusterQueue meets this while the queue's admitted work still runs.",
)
def object_terminating(new: Obj, live: Obj, *, span: Span = NOWHERE) -> Iterator[Hazard]:
    """One hazard when the live copy of a rendered object has a deletionTimestamp."""
    meta = live.get("metadata") or {}
    since = meta.get("deletionTimestamp")
    if not since:
        return
    kind, name = str(new.get("kind", "")), str((new.get("metadata") or {}).get("name", ""))
    namespace = (new.get("metadata") or {}).get("namespace")
    subject = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    where = f" -n {namespace}" if namespace else ""
    finalizers = ", ".join(str(f) for f in meta.get("finalizers") or []) or "none left"
    waits = (
        "; Kueue admits nothing to it until every workload it admitted has finished"
        if kind == "ClusterQueue"
        else ""
    )
    yield Hazard(
        rule="object-terminating",
        subject=subject,
        message=f"is being deleted in the cluster (since {since}; finalizers: {finalizers}): the "
        f"sync's apply does not stop that, so it stays Terminating and goes when the finalizers "
        f"are done, and only the next sync after that creates it again{waits}",
        action=f"sync again once `kubectl get {kind.lower()} {name}{where}` says NotFound; to "
        "have it back sooner, let the work that holds it finish or move it elsewhere",
        span=span,
    )
