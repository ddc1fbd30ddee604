"""Adopt stage, pools phase: the parts of a Pool document's spec the nodes and the flavor
write directly (the node inventory, taints, the flavor's name and labels), with the notes that
tell a reader where each came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hetgitops.adopt import nodes as nodeinfo
from hetgitops.adopt.infer.documents import Inferred
from hetgitops.adopt.sources import Imported
from hetgitops.model import ranges


def inventory(
    name: str, members: list[Imported], quota_cards: int, cards_per_node: int, inferred: Inferred
) -> list[dict[str, Any]]:
    """`spec.nodes`: the members' names compacted into ranges, by zone."""
    entries: list[dict[str, Any]] = []
    by_zone: dict[str, list[str]] = {}
    for node in members:
        by_zone.setdefault(node.labels.get(nodeinfo.ZONE_LABEL, ""), []).append(node.name)
    for zone, names in sorted(by_zone.items()):
        for compacted in ranges.compact(names, sort=True):
            entry: dict[str, Any] = {"names": compacted}
            if zone:
                entry["zone"] = zone
            entries.append(entry)
    if entries:
        return entries
    # A GitOps repository holds no Node objects: the inventory is the reader's to fill in;
    # as many placeholders as the quota on the flavor needs keep validate going.
    count = max(1, -(-quota_cards // cards_per_node))
    inferred.note(
        "Pool",
        name,
        f"TODO: no Node was read for this pool; {count} placeholder node(s) hold its "
        "quota: list the real ones in spec.nodes.",
    )
    return [{"names": f"{name}-[1:{count}]" if count > 1 else f"{name}-1"}]


def placement(
    name: str,
    members: list[Imported],
    flavor: Imported | None,
    spec: dict[str, Any],
    inferred: Inferred,
) -> None:
    """Taints and the flavor: the flavor's own (name, nodeLabels, tolerations) when one
    selects the pool, else the first member's taints and a flavor the first sync creates."""
    if flavor is not None:
        fspec = flavor.obj.get("spec") or {}
        taints = [_taint(t) for t in fspec.get("tolerations") or []]
        if any(taints):
            spec["taints"] = [t for t in taints if t]
        node_labels = {str(k): str(v) for k, v in (fspec.get("nodeLabels") or {}).items()}
        spec["kueue"] = {"nodeLabels": dict(sorted(node_labels.items()))}
        if fspec.get("nodeTaints") and fspec["nodeTaints"] == spec.get("taints"):
            # The pool's taints, listed as the flavor's nodeTaints too (plan.flavors.node_taints
            # renders them back in the same order and spelling); any other list stays a
            # field the first sync changes, named by the round trip.
            spec["kueue"]["flavorNodeTaints"] = True
        # With a topologyName the default name carries a digest: keep the flavor's own.
        if flavor.name != name or fspec.get("topologyName"):
            spec["kueue"] = {"flavorName": flavor.name, **spec["kueue"]}
        inferred.note(
            "Pool",
            name,
            f"Imported from ResourceFlavor {flavor.name}: the "
            "flavor keeps its name and selects exactly spec.kueue.nodeLabels.",
        )
        return
    taints = [_node_taint(t) for t in (members[0].obj.get("spec") or {}).get("taints") or []]
    if any(taints):
        spec["taints"] = [t for t in taints if t]
    inferred.note(
        "Pool",
        name,
        "Nodes no ResourceFlavor selected, grouped by card type "
        "and taints: the first sync creates this pool's flavor.",
    )


def _taint(toleration: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pool taint a flavor toleration stands for (Kueue renders it back the same way)."""
    effect, key = toleration.get("effect"), toleration.get("key")
    if not effect or not key:
        return None
    if toleration.get("operator") == "Exists":
        return {"key": str(key), "effect": str(effect)}
    return {"key": str(key), "value": str(toleration.get("value", "")), "effect": str(effect)}


def _node_taint(taint: Mapping[str, Any]) -> dict[str, Any] | None:
    if str(taint.get("key", "")).startswith("node.kubernetes.io/"):
        return None
    found = {"key": str(taint.get("key")), "effect": str(taint.get("effect"))}
    if taint.get("value"):
        found["value"] = str(taint["value"])
    return found
