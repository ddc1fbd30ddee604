"""Adopt stage, first phase: the pools. ResourceFlavors with accelerator nodes (or accelerator
quota) become Pools named after the flavor, keeping its exact nodeLabels; accelerator nodes no
flavor selects become pools of their card type and taints. Each pool's facts (card, nodes,
cards per node, MIG layout, sharing replicas) are read here once and frozen: the later phases
(cards, lending, teams) take them and never change them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hetgitops.adopt import dra as dra_read
from hetgitops.adopt import nodes as nodeinfo
from hetgitops.adopt import nvidia
from hetgitops.adopt.findings import finding
from hetgitops.adopt.infer import pool_spec
from hetgitops.adopt.infer.documents import Inferred, whole
from hetgitops.adopt.sources import Imported
from hetgitops.adopt.volcano import NODEGROUP_LABEL, PoolRef
from hetgitops.compilers.kueue_queues import queue_flavors, queue_quotas
from hetgitops.plan import dra
from hetgitops.plan.node_labels import pool_label

Catalogue = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Pool:
    """What the nodes and the flavor say about one pool. `spec` is its Pool document's spec
    as far as they tell it (the lending phase adds what the queues agree on)."""

    name: str
    card: nodeinfo.CardMatch
    nodes: tuple[Imported, ...]
    flavor: Imported | None
    cards_per_node: int
    mig_profiles: tuple[str, ...]  # the MIG layout's profiles, when it has one
    replicas: int  # time-slicing or MPS replicas per card
    renamed: bool  # time-slicing renameByDefault: replicas are <resource>.shared
    spec: Mapping[str, Any]
    # A claims pool's Kueue quota resources -> the device-plugin names they stand for.
    aliases: Mapping[str, str] = field(default_factory=dict)
    # Its MIG config's entries name no device-filter (nvidia.mig_unfiltered).
    mig_unfiltered: bool = False

    @property
    def main_resource(self) -> str:
        return f"{self.card.resource}.shared" if self.renamed else self.card.resource

    def resources(self, by_resource: Mapping[str, Any]) -> dict[str, Any]:
        """A flavor's resources under the names the quota phases read (DRA quota resources
        of this pool's card as the device-plugin resources they count; those win over a
        device-plugin resource of the same name, which a cohort's other pools cover)."""
        if not self.aliases:
            return dict(by_resource)
        taken = set(self.aliases.values())
        found = {k: v for k, v in by_resource.items() if k not in taken | self.aliases.keys()}
        found.update({self.aliases[k]: v for k, v in by_resource.items() if k in self.aliases})
        return found


@dataclass(frozen=True)
class Pools:
    """The first phase's result: the pools in document order and the MIG strategy the GPU
    operator runs them under ('' when nothing says one)."""

    pools: tuple[Pool, ...]
    strategy: str


def find_pools(
    by_kind: Mapping[str, list[Imported]],
    catalogue: Catalogue,
    inferred: Inferred,
    gpu: nvidia.GpuConfigs,
    claimed: dra_read.DraRead | None = None,
) -> Pools:
    gpu_nodes = [n for n in by_kind.get("Node", []) if nodeinfo.accelerators(n.obj)]
    claimed = claimed or dra_read.DraRead()
    pools = _flavor_pools(by_kind, gpu_nodes, catalogue, inferred, gpu, claimed)
    taken = {n.name for p in pools for n in p.nodes}
    pools += _node_pools(gpu_nodes, taken, {p.name for p in pools}, catalogue, inferred, gpu)
    return Pools(tuple(pools), _mig_strategy(gpu, pools))


def _flavor_pools(
    by_kind: Mapping[str, list[Imported]],
    gpu_nodes: list[Imported],
    catalogue: Catalogue,
    inferred: Inferred,
    gpu: nvidia.GpuConfigs,
    claimed: dra_read.DraRead,
) -> list[Pool]:
    node_labels = {id(n): n.labels.items() for n in gpu_nodes}
    by_label: dict[tuple[str, str], list[Imported]] = {}  # a flavor's first label narrows
    for node in gpu_nodes:
        for pair in node_labels[id(node)]:
            by_label.setdefault(pair, []).append(node)
    pools: list[Pool] = []
    queued = _flavor_resources(by_kind)
    flavor_cards = _flavor_cards(by_kind)
    for flavor in sorted(by_kind.get("ResourceFlavor", []), key=lambda f: f.name):
        wanted = {
            str(k): str(v)
            for k, v in ((flavor.obj.get("spec") or {}).get("nodeLabels") or {}).items()
        }
        first = next(iter(sorted(wanted.items())), None)
        candidates = gpu_nodes if first is None else by_label.get(first, [])
        selected = [n for n in candidates if wanted.items() <= node_labels[id(n)]]
        accel = [
            r for r in queued.get(flavor.name, set()) if r.startswith(nodeinfo.ACCELERATOR_PREFIXES)
        ]
        if not selected and wanted and claimed.resources & queued.get(flavor.name, set()):
            # Nodes whose GPUs DRA's driver publishes advertise no accelerator resource.
            selected = [n for n in by_kind.get("Node", []) if wanted.items() <= n.labels.items()]
        if not selected and not accel:
            inferred.diagnostics.append(
                finding(
                    "import-flavor-without-accelerators",
                    f"ResourceFlavor {flavor.name} selects no accelerator node and carries no "
                    "accelerator quota: it is left out of the policy",
                    flavor.span,
                )
            )
            continue
        card = _card_of(selected, catalogue, accel, wanted)
        name = nodegroup(selected) or _pool_name(flavor.name, wanted)
        quota_cards = flavor_cards.get((flavor.name, card.resource), 0)
        pools.append(
            _pool(
                name,
                card,
                selected,
                flavor,
                quota_cards=quota_cards,
                catalogue=catalogue,
                inferred=inferred,
                gpu=gpu,
                claimed=claimed,
            )
        )
    return pools


def _node_pools(
    gpu_nodes: list[Imported],
    taken: set[str],
    names: set[str],
    catalogue: Catalogue,
    inferred: Inferred,
    gpu: nvidia.GpuConfigs,
) -> list[Pool]:
    """Accelerator nodes no flavor selects, grouped by card type, taints and nodegroup."""
    rest: dict[tuple[str, tuple[Any, ...], str], list[Imported]] = {}
    for node in gpu_nodes:
        if node.name in taken:
            continue
        match = nodeinfo.match_card(node.obj, catalogue)
        if match is None:
            continue
        taints = tuple(
            sorted(
                (str(t.get("key")), str(t.get("value", "")), str(t.get("effect")))
                for t in (node.obj.get("spec") or {}).get("taints") or []
                if not str(t.get("key", "")).startswith("node.kubernetes.io/")
            )
        )
        group = node.labels.get(NODEGROUP_LABEL, "")
        rest.setdefault((match.name, taints, group), []).append(node)
    pools: list[Pool] = []
    for (card_name, _taints, group), members in sorted(rest.items()):
        name = card_name = group or card_name
        index = 2
        while name in names:
            name, index = f"{card_name}-{index}", index + 1
        names.add(name)
        card = _card_of(members, catalogue, [])
        pools.append(
            _pool(
                name,
                card,
                members,
                None,
                quota_cards=0,
                catalogue=catalogue,
                inferred=inferred,
                gpu=gpu,
            )
        )
    return pools


def _mig_strategy(gpu: nvidia.GpuConfigs, pools: Sequence[Pool]) -> str:
    """The ClusterPolicy's MIG strategy, else what the nodes of MIG pools advertise."""
    if gpu.strategy or not any(p.mig_profiles for p in pools):
        return gpu.strategy
    mixed = any(
        r.startswith("nvidia.com/mig-")
        for p in pools
        for n in p.nodes
        for r in nodeinfo.accelerators(n.obj)
    )
    return "mixed" if mixed else "single"


def pool_refs(pools: Sequence[Pool]) -> list[PoolRef]:
    """The pools as `adopt.volcano` binds Volcano queues to them."""
    return [
        PoolRef(
            p.name,
            p.card.resource,
            frozenset(n.labels.get(NODEGROUP_LABEL, "") for n in p.nodes) - {""},
        )
        for p in pools
    ]


def nodegroup(members: Sequence[Imported]) -> str:
    """The Volcano nodegroup every member carries (the pool is named after it: the nodes
    target labels a pool's nodes with the pool's name), or ''."""
    groups = {n.labels.get(NODEGROUP_LABEL, "") for n in members}
    return groups.pop() if len(groups) == 1 else ""


def _flavor_cards(by_kind: Mapping[str, list[Imported]]) -> dict[tuple[str, str], int]:
    """Nominal quota per (flavor, resource) over every ClusterQueue, in one pass."""
    totals: dict[tuple[str, str], int] = {}
    for queue in by_kind.get("ClusterQueue", []):
        for quota in queue_quotas(queue.obj.get("spec")):
            at = (quota.flavor, quota.resource)
            totals[at] = totals.get(at, 0) + whole(quota.nominal)
    return totals


def _flavor_resources(by_kind: Mapping[str, list[Imported]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for queue in by_kind.get("ClusterQueue", []):
        for flavor in queue_flavors(queue.obj.get("spec")):
            found.setdefault(flavor.name, set()).update(q.resource for q in flavor.quotas)
    return found


def _pool_name(flavor: str, node_labels: Mapping[str, str]) -> str:
    """A flavor hetgitops rendered selects `<domain>/pool: <pool>` and may carry a digest in
    its name (`<pool>-<digest>`): the pool keeps its own name, the flavor keeps its name
    through `spec.kueue.flavorName`."""
    pool = pool_label(node_labels, None)
    return pool if pool is not None and flavor.startswith(pool) else flavor


def _card_of(
    members: list[Imported],
    catalogue: Catalogue,
    resources: list[str],
    node_labels: Mapping[str, str] | None = None,
) -> nodeinfo.CardMatch:
    matches = [m for m in (nodeinfo.match_card(n.obj, catalogue) for n in members) if m]
    found = nodeinfo.most_common(matches)
    if isinstance(found, nodeinfo.CardMatch):
        return found
    for value in (node_labels or {}).values():  # a flavor that selects on a card label
        for name, doc in catalogue.items():
            spec = doc.get("spec") or {}
            known = {name, str(spec.get("model", "")), *(spec.get("productNames") or [])}
            if nodeinfo.simple(value) in {nodeinfo.simple(k) for k in known}:
                return nodeinfo.CardMatch(name, True, str(spec.get("resourceName")), "")
    resource = next((r for r in resources if not r.startswith("nvidia.com/mig-")), "nvidia.com/gpu")
    same = [
        n for n, d in catalogue.items() if (d.get("spec") or {}).get("resourceName") == resource
    ]
    if len(same) == 1:
        return nodeinfo.CardMatch(same[0], True, resource, "")
    return nodeinfo.CardMatch(nodeinfo._new_name(resource), False, resource, "")


def _pool(
    name: str,
    card: nodeinfo.CardMatch,
    members: list[Imported],
    flavor: Imported | None,
    *,
    quota_cards: int,  # whole cards the ClusterQueues give the flavor (when no Node is read)
    catalogue: Catalogue,
    inferred: Inferred,
    gpu: nvidia.GpuConfigs,
    claimed: dra_read.DraRead | None = None,
) -> Pool:
    """The pool's facts and its document's spec, read together: the spec states the facts."""
    shared = nvidia.sharing(gpu, members)
    replicas = int(shared[1]["replicas"]) if shared else 1
    card_spec = (catalogue.get(card.name) or {}).get("spec") or {}
    layout = nvidia.mig_layout(gpu, members, card_spec.get("pciDeviceIds") or [])
    counts = [nvidia.cards_per_node(n, replicas, layout) for n in members]
    cards_per_node = nodeinfo.most_common(counts) or 8
    spec: dict[str, Any] = {
        "cardType": card.name,
        "purpose": "training",
        "cardsPerNode": cards_per_node,
    }
    profiles: tuple[str, ...] = ()
    if layout is not None:
        spec["mig"] = layout
        profiles = tuple(sorted({p for d in layout["devices"] for p in d["profiles"]}))
        inferred.note(
            "Pool",
            name,
            f"MIG layout from mig-parted config {layout['configName']} (the nodes' "
            "nvidia.com/mig.config label), kept under its name.",
        )
    if shared is not None:
        spec[shared[0]] = shared[1]
    spec["nodes"] = pool_spec.inventory(name, members, quota_cards, cards_per_node, inferred)
    group = nodegroup(members)
    if group:  # the nodes carry it already: no nodes target needed to bind Volcano's queues
        spec["volcano"] = {"nodeGroup": group}
    pool_spec.placement(name, members, flavor, spec, inferred)
    aliases = _devices(name, card, card_spec, members, claimed, spec, inferred)
    spec["purpose"] = "training"
    inferred.note(
        "Pool",
        name,
        "purpose: training is a guess (it only shapes node labels "
        "and placement): set training, inference, batch or dev.",
    )
    renamed = shared is not None and bool(shared[1].get("renameByDefault"))
    return Pool(
        name, card, tuple(members), flavor, cards_per_node, profiles, replicas, renamed, spec,
        aliases, layout is not None and nvidia.mig_unfiltered(gpu, members),
    )  # fmt: skip


def _devices(
    name: str,
    card: nodeinfo.CardMatch,
    card_spec: Mapping[str, Any],
    members: Sequence[Imported],
    claimed: dra_read.DraRead | None,
    spec: dict[str, Any],
    inferred: Inferred,
) -> dict[str, str]:
    """`spec.devices` from the DRA objects read: the claims path when a mapped DeviceClass
    selects the card, the extended-resource path when a class serves the card's resource on
    nodes that run no device plugin; `migratingFrom: devicePlugin` while a claims pool's
    nodes do not switch the device plugin off. Returns the claims path's resource aliases."""
    if claimed is None or card.resource != "nvidia.com/gpu":
        return {}
    plugin_off = bool(members) and all(
        n.labels.get(dra.DEVICE_PLUGIN_SWITCH) == "false" for n in members
    )
    aliases = claimed.claims_aliases(
        architecture=str(card_spec.get("architecture", "")),
        product_names=[str(p) for p in card_spec.get("productNames") or []],
        resource=card.resource,
    )
    if aliases:
        spec["devices"] = {"allocation": dra.CLAIMS}
        if not plugin_off:
            spec["devices"]["migratingFrom"] = dra.DEVICE_PLUGIN
        inferred.note(
            "Pool",
            name,
            f"On DRA: DeviceClasses mapped in Kueue's deviceClassMappings select this card; "
            f"migratingFrom is set while its nodes lack {dra.DEVICE_PLUGIN_SWITCH}=false.",
        )
    elif plugin_off and claimed.serves_extended(card.resource):
        spec["devices"] = {"allocation": dra.EXTENDED}
        inferred.note(
            "Pool",
            name,
            f"On DRA's extended-resource path: a DeviceClass serves {card.resource} and the "
            "nodes switch the device plugin off.",
        )
    return aliases
