"""Drift stage: objects the policy renders that already exist without hetgitops' labels (the
first sync adopts them), and unmanaged queues that compete for the managed flavors' nodes.

Read from the same LIST as the managed objects of those kinds (listed without the label
selector, filtered here), so adoption costs no request."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hetgitops.compilers.kueue_queues import queue_flavors
from hetgitops.diagnostics import Diagnostic, listing
from hetgitops.drift.compare import compare
from hetgitops.drift.findings import finding, shown
from hetgitops.drift.normalise import strip_live
from hetgitops.drift.objects import desired_form, ident, object_name
from hetgitops.model.policy import Fleet
from hetgitops.output.manifests import MANAGED_BY, Manifest

# Kinds listed whole, so that an unlabelled object of a rendered name is seen: the queueing
# kinds (few objects in any cluster), ConfigMaps and ResourceQuotas (what `hetgitops import`
# adopts: the GPU Operator's and Volcano's configs, team namespaces' quotas; one LIST either
# way, of every namespace's), and Namespaces: a team namespace made by hand is adopted too,
# and listed by label selector it was reported "not in the cluster" (seen on the busy
# simulated fleet after import).
ADOPTABLE = frozenset({"ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "Topology",
                       "WorkloadPriorityClass", "PriorityClass", "Queue", "ConfigMap",
                       "ResourceQuota", "Namespace"})  # fmt: skip
MAX_FIELDS_SHOWN = 6


def managed(obj: Mapping[str, Any], fleet: Fleet) -> bool:
    """What the drift label selector selects: managed-by hetgitops, this fleet."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(
        labels.get("app.kubernetes.io/managed-by") == MANAGED_BY
        and labels.get(fleet.label("fleet")) == fleet.cluster
    )


def adopts(
    manifest: Manifest, live: Mapping[str, Any], schema: Mapping[str, Any] | None
) -> Diagnostic:
    """`live` has the manifest's name but not hetgitops' labels: the first sync takes it over
    and changes the listed fields."""
    diffs, extras = compare(desired_form(manifest.obj, schema), strip_live(live), schema=schema)
    changes = [f"{d.display} to {shown(d.desired)} (live {shown(d.live)})"
               for d in diffs if not d.path or d.path[0] != "metadata"]  # fmt: skip
    changes += [".".join(str(p) for p in path) + " (not in the policy)"
                for path, _ in extras if path and path[0] != "metadata"]  # fmt: skip
    if changes:
        what = f"; it sets {listing(changes, MAX_FIELDS_SHOWN, sep='; ')}"
    else:
        what = "; no field of its spec changes"
    return finding(
        "drift-unmanaged",
        f"{object_name(manifest)} exists, unmanaged (no hetgitops labels): the first sync "
        f"adopts it{what}",
        manifest.origin,
        path=object_name(manifest),
    )


def competing(
    desired: Iterable[Manifest], unmanaged: Mapping[str, list[dict[str, Any]]], fleet: Fleet
) -> Iterator[Diagnostic]:
    """Unmanaged ClusterQueues with quota on a managed ResourceFlavor, and unmanaged Volcano
    Queues bound to a managed pool's nodegroup: their quota competes for the same nodes."""
    rendered = {(m.kind, ident(m.obj)) for m in desired}
    flavors = {m.name: m for m in desired if m.kind == "ResourceFlavor"}
    for queue in unmanaged.get("ClusterQueue", []):
        if ("ClusterQueue", ident(queue)) in rendered:
            continue  # adopted, reported by `adopts`
        for flavor in queue_flavors(queue.get("spec")):
            manifest = flavors.get(flavor.name)
            if manifest is None:
                continue
            quota = ", ".join(f"{q.resource} {q.nominal}" for q in flavor.quotas)
            yield finding(
                "drift-competing-queue",
                f"unmanaged {object_name(queue)} holds quota on managed ResourceFlavor "
                f"{manifest.name} ({quota}): it competes with the policy's teams for "
                "those nodes",
                manifest.origin,
                path=object_name(queue),
            )
    pools = {group: m for m in desired if m.kind == "Queue"
             for group in _node_groups(m.obj)}  # fmt: skip
    for queue in unmanaged.get("Queue", []):
        if ("Queue", ident(queue)) in rendered:
            continue
        for group in _node_groups(queue):
            manifest = pools.get(group)
            if manifest is None:
                continue
            capability = (queue.get("spec") or {}).get("capability") or {}
            yield finding(
                "drift-competing-queue",
                f"unmanaged {object_name(queue)} is bound to managed pool {group} "
                f"(capability {shown(capability)}): it competes with the policy's queues for "
                "those nodes",
                manifest.origin,
                path=object_name(queue),
            )


def _node_groups(queue: Mapping[str, Any]) -> list[str]:
    """The nodegroups a Volcano Queue binds to (a managed pool's: `Pool.node_group`)."""
    affinity = ((queue.get("spec") or {}).get("affinity") or {}).get("nodeGroupAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    preferred = affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return [str(g) for g in [*required, *preferred]]
