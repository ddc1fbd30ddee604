"""Adopt stage: policy documents from cluster objects.

ResourceFlavors with accelerator nodes (or accelerator quota) become Pools named after the
flavor, keeping its exact nodeLabels (`spec.kueue.nodeLabels`); accelerator nodes no flavor
selects become pools of their card type and taints. ClusterQueues become Teams of the same
name: the namespaces of their LocalQueues, quotas per flavor in whole cards or MIG slices,
cpu and memory per card, limits, cohort, preemption, stop policy and namespaceSelector as the
cluster has them. WorkloadPriorityClasses and PriorityClasses become PriorityTiers. What the
language cannot say is not guessed: the round trip (`roundtrip`) reports it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hetgitops.adopt import multikueue, nvidia
from hetgitops.adopt import nodes as nodeinfo
from hetgitops.adopt.findings import finding
from hetgitops.adopt.kueue_config import adopt_configuration
from hetgitops.adopt.sources import KUEUE, Imported
from hetgitops.adopt.volcano import NODEGROUP_LABEL, VOLCANO, PoolRef, adopt_queues
from hetgitops.adopt.volcano_scheduler import adopt_scheduler
from hetgitops.diagnostics import Diagnostic, Span
from hetgitops.model import quantities

TRANSLATED = {
    "Node",
    "Namespace",
    "PriorityClass",
    "ResourceFlavor",
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "WorkloadPriorityClass",
    "Topology",
    "Queue",
}
NOT_TRANSLATED = {"AdmissionCheck", "MultiKueueCluster", "MultiKueueConfig"}
HOST = ("cpu", "memory")
# The render rounds a team's cpu up to whole CPUs and its memory to whole GiB (plan.quota_plan),
# counted here in integer base units: milli-cpus and bytes.
UNITS = {"cpu": 1000, "memory": 1}
STEPS = {"cpu": 1000, "memory": 1024**3}
# The grids a per-card amount is looked for on, coarsest first (base units).
GRIDS = {"cpu": (1000, 100, 10, 1), "memory": (1024**3, 1024**2, 1024, 1)}
# (amount, card-equivalents as numerator and denominator), in base units.
Bound = tuple[int, int, int]
DEFAULT_TIER = "standard"
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}


@dataclass
class Inferred:
    """Policy documents by file (fleet, cards, pools, teams, tiers) and the notes for a
    reader, keyed by (kind, name): written as comments above the document."""

    fleet: dict[str, Any]
    cards: list[dict[str, Any]] = field(default_factory=list)
    pools: list[dict[str, Any]] = field(default_factory=list)
    teams: list[dict[str, Any]] = field(default_factory=list)
    tiers: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def note(self, kind: str, name: str, text: str) -> None:
        self.notes.setdefault((kind, name), []).append(text)


def document(kind: str, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "hetgitops.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": dict(spec),
    }


@dataclass
class _Pool:
    name: str
    card: nodeinfo.CardMatch
    node_objs: list[Imported]
    flavor: Imported | None
    cards_per_node: int = 0
    quota_cards: int = 0  # whole cards the ClusterQueues give this flavor (no Node read)
    mig_profiles: tuple[str, ...] = ()  # the MIG layout's profiles, when it has one
    strategy: str = "mixed"
    replicas: int = 1  # time-slicing or MPS replicas per card
    renamed: bool = False  # time-slicing renameByDefault: replicas are <resource>.shared
    mig_table: str = ""  # the card's MIG profile table
    isolated: bool = False  # Pool.spec.isolated: every quota on it borrows and lends 0
    lend_percent: int | None = None  # Pool.spec.lending.maxPercent
    weights: dict[str, Fraction] = field(default_factory=dict)  # card-equivalents of a unit

    @property
    def main_resource(self) -> str:
        return f"{self.card.resource}.shared" if self.renamed else self.card.resource


def infer(
    objects: Sequence[Imported],
    catalogue: Mapping[str, Mapping[str, Any]],
    *,
    cluster: str,
    versions: Mapping[str, str],
) -> Inferred:
    by_kind: dict[str, list[Imported]] = {}
    for item in objects:
        by_kind.setdefault(item.kind, []).append(item)
    inferred = Inferred(_fleet(by_kind, cluster, versions))
    for kind in sorted(by_kind):
        if kind in multikueue.KINDS:
            continue  # reported with the Cluster documents they would be (adopt.multikueue)
        if kind in NOT_TRANSLATED or (kind not in TRANSLATED and _is_queueing(by_kind[kind])):
            inferred.diagnostics.extend(
                finding("import-kind-not-imported", _not_imported(kind, item.name), item.span)
                for item in by_kind[kind]
                if not multikueue.is_multikueue_check(item)
            )
    inferred.diagnostics.extend(multikueue.report(by_kind))
    gpu = nvidia.read(by_kind)
    pools = _pools(by_kind, catalogue, inferred, gpu)
    _gpu_operator(gpu, pools, inferred)
    flavor_pool = {p.flavor.name: p for p in pools if p.flavor is not None}
    _cards(pools, catalogue, inferred)
    _lending(by_kind, flavor_pool, inferred)
    tiers = _tiers(by_kind, inferred)
    local_queues: dict[str, list[Imported]] = {}
    for lq in by_kind.get("LocalQueue", []):  # by ClusterQueue: one pass, not one per queue
        local_queues.setdefault(str((lq.obj.get("spec") or {}).get("clusterQueue")), []).append(lq)
    for queue in sorted(by_kind.get("ClusterQueue", []), key=lambda q: q.name):
        _team(queue, local_queues, flavor_pool, tiers, inferred)
    _volcano(by_kind, pools, tiers, inferred)
    _namespace_quotas(by_kind, inferred)
    _cohorts(by_kind, inferred)
    _topology(by_kind, inferred)
    kueue = inferred.fleet["spec"].get("kueue")
    if isinstance(kueue, dict):  # a Kueue cluster: what its Configuration says the policy needs
        inferred.diagnostics.extend(adopt_configuration(by_kind.get("ConfigMap", []), kueue))
    return inferred


def _namespace_quotas(by_kind: Mapping[str, list[Imported]], inferred: Inferred) -> None:
    """A team namespace's ResourceQuota that caps accelerators becomes the team's
    `spec.namespaceQuota` (its name, its other limits kept; the accelerator limits are the
    queue's reach, compared by the round trip). Every other quota in a team namespace stays
    as it is, reported."""
    by_namespace: dict[str, list[Imported]] = {}
    for quota in by_kind.get("ResourceQuota", []):
        by_namespace.setdefault(quota.namespace, []).append(quota)
    for team in inferred.teams:
        chosen: Imported | None = None
        for namespace in team["spec"]["namespaces"]:
            for quota in sorted(by_namespace.get(namespace, []), key=lambda q: q.name):
                hard = (quota.obj.get("spec") or {}).get("hard") or {}
                caps = [k for k in hard if _accelerator_limit(str(k))]
                if caps and (chosen is None or quota.name == chosen.name):
                    chosen = chosen or quota
                    continue
                why = (
                    f"it caps {', '.join(sorted(caps))} beside the team's {chosen.name}"
                    if caps and chosen is not None
                    else "it caps no accelerator"
                )
                inferred.diagnostics.append(
                    finding(
                        "import-object-not-adopted",
                        f"ResourceQuota {namespace}/{quota.name}: {why}; it stays as it is, "
                        "outside the policy",
                        quota.span,
                    )
                )
        if chosen is None:
            continue
        hard = (chosen.obj.get("spec") or {}).get("hard") or {}
        spec: dict[str, Any] = {}
        if chosen.name != "hetgitops-accelerators":
            spec["name"] = chosen.name
        other = {str(k): str(v) for k, v in sorted(hard.items()) if not _accelerator_limit(str(k))}
        if other:
            spec["hard"] = other
        if spec:
            team["spec"]["namespaceQuota"] = spec


def _accelerator_limit(key: str) -> bool:
    return (
        key.removeprefix("requests.")
        .removeprefix("limits.")
        .startswith(nodeinfo.ACCELERATOR_PREFIXES)
    )


def _volcano(
    by_kind: Mapping[str, list[Imported]],
    pools: Sequence[_Pool],
    tiers: Sequence[str],
    inferred: Inferred,
) -> None:
    """Volcano Queues into the teams (`adopt.volcano`); the Fleet gains the volcano target, and
    loses kueue when the cluster has no Kueue object at all."""
    queues = [
        q for q in by_kind.get("Queue", []) if str(q.obj.get("apiVersion")).startswith(VOLCANO)
    ]
    if not queues:
        return
    refs = _pool_refs(pools)
    teams = {t["metadata"]["name"]: t for t in inferred.teams}
    adopted = adopt_queues(queues, refs, teams, tiers)
    inferred.diagnostics.extend(adopted.diagnostics)
    for team in adopted.teams:
        inferred.teams.append(team)
        name = team["metadata"]["name"]
        inferred.note("Team", name, f"Imported from Volcano Queue {name} (no Kueue ClusterQueue).")
    if not adopted.queues:
        return
    spec = inferred.fleet["spec"]
    kueue = any(_is_queueing(items) for items in by_kind.values())
    # The targets found so far stay (gpu-operator, for a cluster with the operator's configs:
    # overwritten here, a Volcano cluster's MIG and device-plugin ConfigMaps were left out of
    # the policy and reported by drift as orphans once labelled).
    others = [t for t in spec["targets"] if t not in ("core", "kueue", "volcano")]
    spec["targets"] = [*(["core", "kueue"] if kueue else ["core"]), "volcano", *others]
    if not kueue:
        spec.pop("kueue", None)
    scheduler: dict[str, Any] = {}
    documents = {d["metadata"]["name"]: d["spec"] for d in inferred.pools}
    binpack = {  # the accelerators the render's binpack plugin is told (compilers' _binpack)
        p.card.resource
        for p in pools
        if documents.get(p.name, {}).get(
            "placement",
            "binpack" if documents.get(p.name, {}).get("purpose") == "training" else "spread",
        )
        == "binpack"
    }
    configs = by_kind.get("ConfigMap", [])
    inferred.diagnostics.extend(adopt_scheduler(configs, scheduler, binpack=binpack))
    if scheduler:
        spec["volcano"] = scheduler


def _pool_refs(pools: Sequence[_Pool]) -> list[PoolRef]:
    return [
        PoolRef(
            p.name,
            p.card.resource,
            frozenset(n.labels.get(NODEGROUP_LABEL, "") for n in p.node_objs) - {""},
        )
        for p in pools
    ]


def _lending(
    by_kind: Mapping[str, list[Imported]], flavor_pool: Mapping[str, _Pool], inferred: Inferred
) -> None:
    """Pool-wide lending, from what every queue on the pool's flavor says:
    `isolated` when every resource of every cohort member's entry (cpu, memory, the card
    resources, the zero entries of resources the pool lacks) borrows and lends 0 and every
    Volcano queue bound to the pool is not reclaimable; else `lending.maxPercent` when one
    percentage gives every lendingLimit of the resources no quota limit bounds (a MIG pool's
    other profiles and whole cards), as the render computes them: floor(nominal x p / 100)."""
    entries: dict[str, list[dict[str, Mapping[str, Any]]]] = {}
    for queue in by_kind.get("ClusterQueue", []):
        spec = queue.obj.get("spec") or {}
        if not (spec.get("cohortName") or spec.get("cohort")):
            continue  # Kueue allows no limit without a cohort: they say nothing
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                if str(flavor.get("name")) in flavor_pool:
                    resources = {str(r.get("name")): r for r in flavor.get("resources") or []}
                    entries.setdefault(str(flavor.get("name")), []).append(resources)
    reclaimable = _reclaimable_by_pool(by_kind, list(flavor_pool.values()))
    documents = {d["metadata"]["name"]: d for d in inferred.pools}
    for flavor, found in sorted(entries.items()):
        pool = flavor_pool[flavor]
        spec = documents[pool.name]["spec"]
        limits = [r.get(k) for e in found for r in e.values() for k in QUANTITY_LIMITS]
        if all(v is not None and _int(v) == 0 for v in limits) and True not in reclaimable.get(
            pool.name, set()
        ):
            pool.isolated = True
            spec["isolated"] = True
            continue
        percent = _lend_percent(pool, found)
        if percent is not None:
            pool.lend_percent = percent
            spec["lending"] = {"maxPercent": percent}


QUANTITY_LIMITS = ("borrowingLimit", "lendingLimit")


def _lend_percent(pool: _Pool, entries: Sequence[Mapping[str, Mapping[str, Any]]]) -> int | None:
    """The one percentage (round ones first) that gives the lendingLimit of every claimed
    accelerator resource a quota limit does not bound; None when one of them has none or
    there is no such resource."""
    seen: list[tuple[int, int]] = []
    for resources in entries:
        claimed = {
            n: _int(r.get("nominalQuota"))
            for n, r in resources.items()
            if n not in HOST and _int(r.get("nominalQuota"))
        }
        bound = {pool.main_resource} if pool.main_resource in claimed else set(claimed)
        for name, nominal in claimed.items():
            if name in bound:
                continue
            limit = resources[name].get("lendingLimit")
            if limit is None:
                return None
            seen.append((nominal, _int(limit)))
    if not seen:
        return None
    fits = [p for p in range(101) if all(n * p // 100 == lent for n, lent in seen)]
    for grain in (25, 10, 5, 1):
        round_ones = [p for p in fits if p % grain == 0]
        if round_ones:
            return max(round_ones)
    return None


def _reclaimable_by_pool(
    by_kind: Mapping[str, list[Imported]], pools: Sequence[_Pool]
) -> dict[str, set[bool]]:
    from hetgitops.adopt.volcano import leaf_pools

    queues = [
        q for q in by_kind.get("Queue", []) if str(q.obj.get("apiVersion")).startswith(VOLCANO)
    ]
    found: dict[str, set[bool]] = {}
    for queue, pool in leaf_pools(queues, _pool_refs(pools)):
        found.setdefault(pool.name, set()).add(
            (queue.obj.get("spec") or {}).get("reclaimable") is not False
        )
    return found


def _not_imported(kind: str, name: str) -> str:
    if kind == "AdmissionCheck":  # teams name it (spec.kueue.admissionChecks); it is not rendered
        return (
            f"AdmissionCheck {name}: teams name it in spec.kueue.admissionChecks, but the "
            "policy does not render the check itself; it stays as it is, with its controller"
        )
    return (
        f"{kind} {name}: import does not translate {kind} objects yet; it stays as it is, "
        "outside the policy"
    )


def _topology(by_kind: Mapping[str, list[Imported]], inferred: Inferred) -> None:
    """The Topology the flavors name becomes the Fleet's, with its exact name and level
    labels; any other Topology stays outside the policy (a Fleet has one)."""
    used = nodeinfo.most_common(
        str((f.obj.get("spec") or {}).get("topologyName"))
        for f in by_kind.get("ResourceFlavor", [])
        if (f.obj.get("spec") or {}).get("topologyName")
    )
    for item in by_kind.get("Topology", []):
        if item.name != used:
            inferred.diagnostics.append(
                finding(
                    "import-kind-not-imported",
                    f"Topology {item.name}: no imported flavor names it (a Fleet has one "
                    "Topology); it stays as it is, outside the policy",
                    item.span,
                )
            )
            continue
        labels = [
            str(level.get("nodeLabel"))
            for level in (item.obj.get("spec") or {}).get("levels") or []
        ]
        inferred.fleet["spec"]["topology"] = {
            "name": item.name,
            "topologyName": item.name,
            "nodeLabels": labels,
        }


def _is_queueing(items: list[Imported]) -> bool:
    return any(str(i.obj.get("apiVersion", "")).startswith(KUEUE) for i in items)


def _api_versions(by_kind: Mapping[str, list[Imported]]) -> set[str]:
    return {
        str(i.obj.get("apiVersion"))
        for items in by_kind.values()
        for i in items
        if str(i.obj.get("apiVersion", "")).startswith(KUEUE)
    }


_KUBELET = re.compile(r"v?(\d+)\.(\d+)(?:[.+-]|$)")


def _fleet(
    by_kind: Mapping[str, list[Imported]], cluster: str, versions: Mapping[str, str]
) -> dict[str, Any]:
    found = dict(versions)
    if _api_versions(by_kind) == {f"{KUEUE}/v1beta1"}:
        found["kueue"] = "0.14.0"  # the last release that serves v1beta1 alone
    kubelets = [
        str(((n.obj.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""))
        for n in by_kind.get("Node", [])
    ]
    # A kubelet that is not Kubernetes' own (kwok's fake nodes say `kwok-v0.8.0`, a node
    # agent may say anything) tells nothing: the bundled minor stays, for the reader to review.
    minors = (_KUBELET.match(k) for k in kubelets)
    kubelet = nodeinfo.most_common(f"{m[1]}.{m[2]}" for m in minors if m)
    if kubelet:
        found["kubernetes"] = kubelet
    queues = [q.obj.get("spec") or {} for q in by_kind.get("ClusterQueue", [])]
    spec: dict[str, Any] = {"cluster": cluster, "versions": found, "targets": ["core", "kueue"]}
    kueue: dict[str, Any] = {"queueingStrategy": "BestEffortFIFO"}
    fungibility = nodeinfo.most_common(
        tuple(sorted((q.get("flavorFungibility") or {}).items())) for q in queues
    )
    if fungibility:
        values = {k: v for k, v in fungibility if k in ("whenCanBorrow", "whenCanPreempt")}
        values = {
            k: {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}.get(v, v)
            for k, v in values.items()
        }
        if values:
            kueue["flavorFungibility"] = values
    spec["kueue"] = kueue
    return document("Fleet", cluster, spec)


def _pools(
    by_kind: Mapping[str, list[Imported]],
    catalogue: Mapping[str, Mapping[str, Any]],
    inferred: Inferred,
    gpu: nvidia.GpuConfigs,
) -> list[_Pool]:
    gpu_nodes = [n for n in by_kind.get("Node", []) if nodeinfo.accelerators(n.obj)]
    node_labels = {id(n): n.labels.items() for n in gpu_nodes}
    by_label: dict[tuple[str, str], list[Imported]] = {}  # a flavor's first label narrows
    for node in gpu_nodes:
        for pair in node_labels[id(node)]:
            by_label.setdefault(pair, []).append(node)
    taken: set[str] = set()
    pools: list[_Pool] = []
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
        name = _nodegroup(selected) or _pool_name(flavor.name, wanted)
        pool = _Pool(name, card, selected, flavor)
        pool.quota_cards = flavor_cards.get((flavor.name, card.resource), 0)
        taken.update(n.name for n in selected)
        pools.append(pool)
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
    names = {p.name for p in pools}
    for (card_name, _taints, group), members in sorted(rest.items()):
        name = card_name = group or card_name
        index = 2
        while name in names:
            name, index = f"{card_name}-{index}", index + 1
        names.add(name)
        pools.append(_Pool(name, _card_of(members, catalogue, []), members, None))
    for pool in pools:
        inferred.pools.append(_pool_document(pool, inferred, gpu, catalogue))
    return pools


def _gpu_operator(gpu: nvidia.GpuConfigs, pools: Sequence[_Pool], inferred: Inferred) -> None:
    """A custom MIG or device-plugin ConfigMap becomes the Fleet's (gpu-operator target,
    names and namespace kept, so the round trip compares it); the MIG strategy is the
    ClusterPolicy's, else what the nodes advertise."""
    strategy = gpu.strategy
    if not strategy and any(p.mig_profiles for p in pools):
        mixed = any(
            r.startswith("nvidia.com/mig-")
            for p in pools
            for n in p.node_objs
            for r in nodeinfo.accelerators(n.obj)
        )
        strategy = "mixed" if mixed else "single"
    operator: dict[str, Any] = {}
    maps = [m for m in (gpu.mig_map, gpu.sharing_map) if m is not None]
    if maps:
        operator["namespace"] = maps[0].namespace or "gpu-operator"
    if gpu.mig_map is not None:
        operator["migConfigName"] = gpu.mig_map.name
    if gpu.sharing_map is not None and gpu.sharing_map.namespace == operator.get("namespace"):
        operator["devicePluginConfigName"] = gpu.sharing_map.name
    if strategy in ("none", "single", "mixed"):
        operator["migStrategy"] = strategy
    for pool in pools:
        pool.strategy = strategy or "mixed"
    if operator:
        inferred.fleet["spec"]["gpuOperator"] = operator
    if maps:
        targets = inferred.fleet["spec"]["targets"]
        if "gpu-operator" not in targets:
            targets.append("gpu-operator")


def _nodegroup(members: Sequence[Imported]) -> str:
    """The Volcano nodegroup every member carries (the pool is named after it: the nodes
    target labels a pool's nodes with the pool's name), or ''."""
    groups = {n.labels.get(NODEGROUP_LABEL, "") for n in members}
    return groups.pop() if len(groups) == 1 else ""


def _flavor_cards(by_kind: Mapping[str, list[Imported]]) -> dict[tuple[str, str], int]:
    """Nominal quota per (flavor, resource) over every ClusterQueue, in one pass."""
    totals: dict[tuple[str, str], int] = {}
    for queue in by_kind.get("ClusterQueue", []):
        for group in (queue.obj.get("spec") or {}).get("resourceGroups") or []:
            for entry in group.get("flavors") or []:
                for item in entry.get("resources") or []:
                    at = (str(entry.get("name")), str(item.get("name")))
                    totals[at] = totals.get(at, 0) + _int(item.get("nominalQuota"))
    return totals


def _flavor_resources(by_kind: Mapping[str, list[Imported]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for queue in by_kind.get("ClusterQueue", []):
        for group in (queue.obj.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                names = {str(r.get("name")) for r in flavor.get("resources") or []}
                found.setdefault(str(flavor.get("name")), set()).update(names)
    return found


def _pool_name(flavor: str, node_labels: Mapping[str, str]) -> str:
    """A flavor hetgitops rendered selects `<domain>/pool: <pool>` and may carry a digest in
    its name (`<pool>-<digest>`): the pool keeps its own name, the flavor keeps its name
    through `spec.kueue.flavorName`."""
    for key, value in node_labels.items():
        if key.endswith("/pool") and flavor.startswith(value):
            return value
    return flavor


def _card_of(
    members: list[Imported],
    catalogue: Mapping[str, Mapping[str, Any]],
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


def _pool_document(
    pool: _Pool,
    inferred: Inferred,
    gpu: nvidia.GpuConfigs,
    catalogue: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    shared = nvidia.sharing(gpu, pool.node_objs)
    replicas = pool.replicas = int(shared[1]["replicas"]) if shared else 1
    card_spec = (catalogue.get(pool.card.name) or {}).get("spec") or {}
    pool.mig_table = str((card_spec.get("mig") or {}).get("profileTable") or "")
    layout = nvidia.mig_layout(gpu, pool.node_objs, card_spec.get("pciDeviceIds") or [])
    counts = [nvidia.cards_per_node(n, replicas, layout) for n in pool.node_objs]
    pool.cards_per_node = nodeinfo.most_common(counts) or 8
    spec: dict[str, Any] = {
        "cardType": pool.card.name,
        "purpose": "training",
        "cardsPerNode": pool.cards_per_node,
    }
    if layout is not None:
        spec["mig"] = layout
        pool.mig_profiles = tuple(sorted({p for d in layout["devices"] for p in d["profiles"]}))
        inferred.note(
            "Pool",
            pool.name,
            f"MIG layout from mig-parted config {layout['configName']} (the nodes' "
            "nvidia.com/mig.config label), kept under its name.",
        )
    if shared is not None:
        spec[shared[0]] = shared[1]
        pool.renamed = bool(shared[1].get("renameByDefault"))
    entries: list[dict[str, Any]] = []
    by_zone: dict[str, list[str]] = {}
    for node in pool.node_objs:
        by_zone.setdefault(node.labels.get(nodeinfo.ZONE_LABEL, ""), []).append(node.name)
    for zone, members in sorted(by_zone.items()):
        for names in nodeinfo.compact(members):
            entry: dict[str, Any] = {"names": names}
            if zone:
                entry["zone"] = zone
            entries.append(entry)
    if not entries:
        # A GitOps repository holds no Node objects: the inventory is the reader's to fill in;
        # as many placeholders as the quota on the flavor needs keep validate going.
        count = max(1, -(-pool.quota_cards // pool.cards_per_node))
        entries = [{"names": f"{pool.name}-[1:{count}]" if count > 1 else f"{pool.name}-1"}]
        inferred.note(
            "Pool",
            pool.name,
            f"TODO: no Node was read for this pool; {count} placeholder node(s) hold its "
            "quota: list the real ones in spec.nodes.",
        )
    spec["nodes"] = entries
    group = _nodegroup(pool.node_objs)
    if group:  # the nodes carry it already: no nodes target needed to bind Volcano's queues
        spec["volcano"] = {"nodeGroup": group}
    if pool.flavor is not None:
        fspec = pool.flavor.obj.get("spec") or {}
        taints = [_taint(t) for t in fspec.get("tolerations") or []]
        if any(taints):
            spec["taints"] = [t for t in taints if t]
        node_labels = {str(k): str(v) for k, v in (fspec.get("nodeLabels") or {}).items()}
        spec["kueue"] = {"nodeLabels": dict(sorted(node_labels.items()))}
        # With a topologyName the default name carries a digest: keep the flavor's own.
        if pool.flavor.name != pool.name or fspec.get("topologyName"):
            spec["kueue"] = {"flavorName": pool.flavor.name, **spec["kueue"]}
        inferred.note(
            "Pool",
            pool.name,
            f"Imported from ResourceFlavor {pool.flavor.name}: the "
            "flavor keeps its name and selects exactly spec.kueue.nodeLabels.",
        )
    else:
        taints = [
            _node_taint(t) for t in (pool.node_objs[0].obj.get("spec") or {}).get("taints") or []
        ]
        if any(taints):
            spec["taints"] = [t for t in taints if t]
        inferred.note(
            "Pool",
            pool.name,
            "Nodes no ResourceFlavor selected, grouped by card type "
            "and taints: the first sync creates this pool's flavor.",
        )
    spec["purpose"] = "training"
    inferred.note(
        "Pool",
        pool.name,
        "purpose: training is a guess (it only shapes node labels "
        "and placement): set training, inference, batch or dev.",
    )
    return document("Pool", pool.name, spec)


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


def _cards(
    pools: list[_Pool], catalogue: Mapping[str, Mapping[str, Any]], inferred: Inferred
) -> None:
    for name in sorted({p.card.name for p in pools}):
        pool = next(p for p in pools if p.card.name == name)
        if pool.card.known:
            inferred.cards.append(document("CardType", name, dict(catalogue[name]["spec"])))
            continue
        vendor = pool.card.resource.split("/")[0].split(".")[0]
        spec = {
            "vendor": vendor
            if vendor in ("nvidia", "amd", "huawei", "cambricon", "intel")
            else "nvidia",
            "model": pool.card.product or name,
            "resourceName": pool.card.resource,
            "memoryGiB": _memory_gib(pool),
            "lifecycle": "production",
        }
        if pool.card.product:
            spec["productNames"] = [pool.card.product]
        table = _profile_table([m for p in pools if p.card.name == name for m in p.mig_profiles])
        if table:  # the card's nodes run MIG: the first table with every profile they use
            spec["mig"] = {"profileTable": table}
            for each in pools:  # a slice's share of a card (cpu per card) is the table's
                if each.card.name == name:
                    each.mig_table = table
        # A placeholder the reader must replace: quota in normalized units would be wrong.
        spec["performance"] = {
            "coefficient": 1.0,
            "reference": name,
            "benchmark": "TODO",
            "coefficientSet": "TODO",
        }
        inferred.cards.append(document("CardType", name, spec))
        inferred.note(
            "CardType",
            name,
            "TODO: not in hetgitops' catalogue. Measure the card "
            "and add spec.performance (coefficient against the fleet's reference); "
            "check vendor, memoryGiB and the MIG profile table (the first with every "
            "profile its nodes use).",
        )
        span = (
            pool.node_objs[0].span
            if pool.node_objs
            else (pool.flavor.span if pool.flavor else Span("<import>"))
        )
        inferred.diagnostics.append(
            finding(
                "import-unknown-card",
                f"card {pool.card.product or pool.card.resource} of pool {pool.name} is not in the "
                f"catalogue: written as new CardType {name} without a performance coefficient",
                span,
            )
        )


def _profile_table(profiles: Sequence[str]) -> str:
    from hetgitops.model import mig

    if not profiles:
        return ""
    wanted = {mig.gpu_instance_profile(p) for p in profiles}
    return next((n for n, t in mig.TABLES.items() if wanted <= set(t.profiles)), "")


def _memory_gib(pool: _Pool) -> int:
    for node in pool.node_objs:
        mib = node.labels.get(nodeinfo.MEMORY_LABEL, "")
        if mib.isdigit():
            return max(1, round(int(mib) / 1024))
    return 16


def _tiers(by_kind: Mapping[str, list[Imported]], inferred: Inferred) -> list[str]:
    found: dict[str, dict[str, Any]] = {}
    for item in by_kind.get("PriorityClass", []):
        if item.name.startswith("system-"):
            continue
        spec: dict[str, Any] = {"value": int(item.obj.get("value", 0))}
        spec["preemptionPolicy"] = str(item.obj.get("preemptionPolicy") or "PreemptLowerPriority")
        if item.obj.get("globalDefault"):
            spec["globalDefault"] = True
        if item.obj.get("description"):
            spec["description"] = str(item.obj["description"])
        found[item.name] = spec
    for item in by_kind.get("WorkloadPriorityClass", []):
        spec = found.setdefault(item.name, {"value": int(item.obj.get("value", 0))})
        if item.obj.get("description") and "description" not in spec:
            spec["description"] = str(item.obj["description"])
    if not found:
        found[DEFAULT_TIER] = {
            "value": 1000,
            "preemptionPolicy": "Never",
            "description": "Every team's work.",
        }
        inferred.note(
            "PriorityTier",
            DEFAULT_TIER,
            "The cluster has no priority class: every "
            "team needs a tier, so the first sync creates this one.",
        )
    for name, spec in sorted(found.items()):
        inferred.tiers.append(document("PriorityTier", name, spec))
    return sorted(found)


def _team(
    queue: Imported,
    local_queues: Mapping[str, list[Imported]],
    flavor_pool: Mapping[str, _Pool],
    tiers: list[str],
    inferred: Inferred,
) -> None:
    spec_in = queue.obj.get("spec") or {}
    locals_ = sorted(local_queues.get(queue.name, []), key=lambda lq: (lq.namespace, lq.name))
    namespaces = sorted({lq.namespace for lq in locals_} - SYSTEM_NAMESPACES)
    for lq in locals_:
        if lq.namespace in SYSTEM_NAMESPACES:
            inferred.diagnostics.append(
                finding(
                    "import-system-namespace",
                    f"LocalQueue {lq.namespace}/{lq.name}: a team cannot own system namespace "
                    f"{lq.namespace}; the queue stays unmanaged",
                    lq.span,
                )
            )
    spec: dict[str, Any] = {}
    if not namespaces:
        namespaces = [queue.name]
        inferred.diagnostics.append(
            finding(
                "import-team-without-namespace",
                f"ClusterQueue {queue.name} has no LocalQueue: the team gets namespace "
                f"{queue.name}",
                queue.span,
            )
        )
    spec["namespaces"] = namespaces
    cohort = spec_in.get("cohortName") or spec_in.get("cohort")
    if cohort:
        spec["cohort"] = str(cohort)
    quotas, per_card = _quotas(spec_in, flavor_pool)
    if not quotas:
        # No accelerator quota on an imported pool (a CPU-only queue): not a team; the round
        # trip reports the queue and its LocalQueues as not adopted.
        return
    spec["quotas"] = quotas
    spec["tiers"] = list(tiers)
    cards = {c["metadata"]["name"]: c["spec"].get("lifecycle") for c in inferred.cards}
    pools = {p.name: p.card.name for p in flavor_pool.values()}
    stages = {str(cards.get(pools.get(q["pool"], ""))) for q in quotas} - {"None"}
    if stages - {"production", "deprecated"}:  # the Fleet's default stages
        spec["lifecycleStages"] = sorted(stages | {"production", "deprecated"})
    spec.update(per_card)
    preemption = _preemption(spec_in.get("preemption") or {})
    if preemption:
        spec["preemption"] = preemption
    strategy = spec_in.get("queueingStrategy")
    if strategy and strategy != "BestEffortFIFO":
        spec["queueingStrategy"] = strategy
    kueue: dict[str, Any] = {}
    names = {lq.name for lq in locals_}
    if len(names) == 1 and names != {queue.name}:
        kueue["localQueueName"] = names.pop()
    elif len(names) > 1:
        inferred.note(
            "Team",
            queue.name,
            "Its LocalQueues have several names "
            f"({', '.join(sorted(names))}); the policy gives every namespace one.",
        )
    stop = spec_in.get("stopPolicy")
    if stop and stop != "None":
        kueue["stopPolicy"] = stop
    kueue["namespaceSelector"] = spec_in.get("namespaceSelector") or {}
    fair = spec_in.get("fairSharing")
    if isinstance(fair, Mapping):  # Kueue defaults the weight of a present fairSharing to 1
        kueue["fairSharingWeight"] = quantities.normalize(str(fair.get("weight", 1)))
    checks = _admission_checks(spec_in, flavor_pool)
    if checks:
        kueue["admissionChecks"] = checks
    spec["kueue"] = kueue
    inferred.teams.append(document("Team", queue.name, spec))
    inferred.note("Team", queue.name, f"Imported from ClusterQueue {queue.name}.")


def _admission_checks(
    spec: Mapping[str, Any], flavor_pool: Mapping[str, _Pool]
) -> list[dict[str, Any]]:
    """`admissionChecksStrategy` (v1beta2, v1beta1) or v1beta1's plain `admissionChecks`
    names; `onFlavors` as the pools those flavors became (a flavor that is no pool cannot be
    named: the round trip reports the difference)."""
    strategy = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    entries = [dict(c) for c in strategy if isinstance(c, Mapping) and c.get("name")]
    entries += [{"name": str(n)} for n in spec.get("admissionChecks") or [] if isinstance(n, str)]
    found: list[dict[str, Any]] = []
    for entry in entries:
        check: dict[str, Any] = {"name": str(entry["name"])}
        pools = [flavor_pool[f].name for f in entry.get("onFlavors") or [] if f in flavor_pool]
        if pools:
            check["onPools"] = pools
        found.append(check)
    return found


def _quotas(
    spec: Mapping[str, Any], flavor_pool: Mapping[str, _Pool]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    quotas: list[dict[str, Any]] = []
    cpu: list[Fraction] = []
    memory: list[Fraction] = []
    bounds: dict[str, list[Bound]] = {"cpu": [], "memory": []}
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            pool = flavor_pool.get(str(flavor.get("name")))
            if pool is None:
                continue
            resources = {str(r.get("name")): r for r in flavor.get("resources") or []}
            whole = resources.get(pool.main_resource)
            mig = {
                k.removeprefix("nvidia.com/mig-"): r
                for k, r in resources.items()
                if k.startswith("nvidia.com/mig-")
            }
            entry: dict[str, Any] = {"pool": pool.name}
            cards = _int(whole.get("nominalQuota")) if whole else 0
            # Covered resources the pool lacks are listed with 0 (Kueue's webhook wants every
            # covered resource in every flavor): they are no quota.
            if not pool.mig_profiles:
                mig = {}
            elif pool.strategy == "single" and len(pool.mig_profiles) == 1:
                # Under migStrategy single the card resource counts the one profile's slices.
                mig = {pool.mig_profiles[0]: whole} if whole is not None and cards else {}
                whole = None if mig else whole
                cards = 0 if mig else cards
            else:
                mig = {p: r for p, r in mig.items() if _int(r.get("nominalQuota"))}
            if whole is not None and (cards or not mig):
                entry["cards"] = cards
                entry.update(_limits(pool, [whole]))
            if mig:
                entry["mig"] = {p: _int(r.get("nominalQuota")) for p, r in sorted(mig.items())}
                if "cards" not in entry:  # a MIG-only quota's limits bound each profile it claims
                    entry.update(_limits(pool, list(mig.values())))
            if whole is None and not mig:
                continue
            # cpu and memory go with card-equivalents: a replica is 1/replicas of a card, a
            # MIG instance its compute share (plan.capacity.unit_weight), as the render counts.
            equivalents = Fraction(cards, pool.replicas) + sum(
                (n * _share(pool, p) for p, n in entry.get("mig", {}).items()), start=Fraction(0)
            )
            if equivalents:
                for name, into in (("cpu", cpu), ("memory", memory)):
                    if name in resources:
                        value = quantities.value_of(str(resources[name].get("nominalQuota")))
                        into.append(Fraction(value) / equivalents)
                        bounds[name].append(_bound(value, equivalents, name))
                        bounds[name].extend(_limit_bounds(pool, resources, name))
            quotas.append(entry)
    per_card: dict[str, Any] = {}
    for name, key, seen in (("cpu", "cpuPerCard", cpu), ("memory", "memoryPerCard", memory)):
        if seen:
            fitted = _per_card(bounds[name], name) if bounds[name] else None
            chosen = fitted if fitted is not None else _decimal(seen[0])
            per_card[key] = quantities.canonical(chosen, binary=name == "memory")
    return quotas, per_card


def _limits(pool: _Pool, resources: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """A quota's borrowingLimit / lendingLimit from the resources it bounds (its card
    resource, or each MIG profile it claims), when they all say one value; none on an
    isolated pool (it borrows and lends nothing), and no lendingLimit where the pool's
    lending.maxPercent gives exactly the cluster's."""
    found: dict[str, int] = {}
    if pool.isolated:
        return found
    for key in ("borrowingLimit", "lendingLimit"):
        values = [r.get(key) for r in resources]
        if any(v is None for v in values):
            continue
        numbers = {_int(v) for v in values}
        if key == "lendingLimit" and pool.lend_percent is not None:
            floors = [_int(r.get("nominalQuota")) * pool.lend_percent // 100 for r in resources]
            if [_int(v) for v in values] == floors:
                continue
        if len(numbers) == 1:
            found[key] = numbers.pop()
    return found


def _bound(amount: Decimal, equivalents: Fraction, host: str) -> Bound:
    return int(amount * UNITS[host]), equivalents.numerator, equivalents.denominator


def _per_card(bounds: Sequence[Bound], host: str) -> Decimal | None:
    """The per-card amount every flavor's quota of the team rounds up to exactly: each
    (amount, card-equivalents p/q) says ceil(x * p/q / step) * step == amount, so x lies in
    ((amount - step) * q/p, amount * q/p]. The largest value on the coarsest grid (whole
    cpus or GiB, then finer) inside every interval, or None when they do not meet (the
    round trip reports the difference). Integer arithmetic: 1,000 teams, a dozen bounds each."""
    step = STEPS[host]
    if any(amount % step for amount, _, _ in bounds):
        return None  # not rounded as the render rounds: no per-card amount gives it
    for grid in GRIDS[host]:
        most = min(amount * q // (grid * p) for amount, p, q in bounds)
        if most > 0 and all(most * grid * p > (amount - step) * q for amount, p, q in bounds):
            return Decimal(most * grid) / UNITS[host]
    return None


def _limit_bounds(
    pool: _Pool, resources: Mapping[str, Mapping[str, Any]], host: str
) -> list[Bound]:
    """cpu / memory limits go with the card-equivalents of the accelerator limits (every
    accelerator resource of the flavor bounded, as the render counts them)."""
    found = []
    accelerators = [r for n, r in resources.items() if n not in HOST]
    for key in ("borrowingLimit", "lendingLimit"):
        limit = resources[host].get(key)
        values = [r.get(key) for r in accelerators]
        if limit is None or not values or any(v is None for v in values):
            continue
        whole, parts = 0, Fraction(0)  # whole cards add as ints (the common case, fast)
        for value, resource in zip(values, accelerators, strict=True):
            weight = _weight(pool, str(resource.get("name")))
            if weight == 1:
                whole += _int(value)
            else:
                parts += _int(value) * weight
        equivalents = parts + whole
        if equivalents:
            found.append(_bound(quantities.value_of(str(limit)), equivalents, host))
    return found


def _weight(pool: _Pool, resource: str) -> Fraction:
    found = pool.weights.get(resource)
    if found is None:
        found = pool.weights[resource] = _weight_of(pool, resource)
    return found


def _weight_of(pool: _Pool, resource: str) -> Fraction:
    if resource.startswith("nvidia.com/mig-"):
        return _share(pool, resource.removeprefix("nvidia.com/mig-"))
    return Fraction(1, pool.replicas)


def _share(pool: _Pool, profile: str) -> Fraction:
    from hetgitops.model import mig

    table = mig.TABLES.get(pool.mig_table)
    return mig.gpu_share(table, profile) if table is not None else Fraction(1)


def _decimal(value: Fraction) -> Decimal:
    return Decimal(value.numerator) / Decimal(value.denominator)


def _int(value: Any) -> int:
    try:
        return int(quantities.value_of(str(value)))
    except (ValueError, ArithmeticError):
        return 0


def _preemption(found: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key in ("withinClusterQueue", "reclaimWithinCohort"):
        result[key] = str(found.get(key) or "Never")
    borrow = found.get("borrowWithinCohort") or {}
    result["borrowWithinCohort"] = {"policy": str(borrow.get("policy") or "Never")}
    if borrow.get("maxPriorityThreshold") is not None:
        result["borrowWithinCohort"]["maxPriorityThreshold"] = int(borrow["maxPriorityThreshold"])
    return result


def _cohorts(by_kind: Mapping[str, list[Imported]], inferred: Inferred) -> None:
    parents: dict[str, str | None] = {}
    weights: dict[str, str] = {}
    for item in by_kind.get("Cohort", []):
        cohort = item.obj.get("spec") or {}
        parent = cohort.get("parentName")
        parents[item.name] = str(parent) if parent else None
        if isinstance(cohort.get("fairSharing"), Mapping):
            weight = cohort["fairSharing"].get("weight", 1)
            weights[item.name] = quantities.normalize(str(weight))
    for team in inferred.teams:
        name = team["spec"].get("cohort")
        if name:
            parents.setdefault(name, None)
    for parent in [p for p in parents.values() if p]:
        parents.setdefault(parent, None)
    if parents:
        inferred.fleet["spec"]["cohorts"] = [
            {
                "name": n,
                **({"parent": p} if p else {}),
                **({"fairSharingWeight": weights[n]} if n in weights else {}),
            }
            for n, p in sorted(parents.items())
        ]
