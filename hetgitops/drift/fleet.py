"""Drift stage: the fleet itself against the policy: nodes, their labels, taints and
accelerators, MIG state, and ClusterQueue usage above a quota the policy has cut."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hetgitops.compilers import nvidia
from hetgitops.compilers.kueue_queues import queue_flavors, queue_quotas
from hetgitops.compilers.nodes import NODEGROUP_LABEL, desired_node_labels
from hetgitops.diagnostics import Diagnostic, listing
from hetgitops.drift.findings import finding
from hetgitops.drift.ownership import Ownership
from hetgitops.model import quantities
from hetgitops.model.policy import CardType, Node, Policy, Pool
from hetgitops.model.ranges import compact
from hetgitops.output.manifests import Manifest
from hetgitops.plan.capacity import node_units
from hetgitops.plan.flavors import flavor_name, topology_levels
from hetgitops.plan.node_labels import flavor_node_labels

MIG_STATE_LABEL = "nvidia.com/mig.config.state"
# Items of a pool's node finding named in its message; `details` (JSON, --verbose) has all.
SHOWN = 3
ACCELERATOR_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-", "amd.com/gpu", "huawei.com/")


def check(
    policy: Policy,
    nodes: Sequence[Mapping[str, Any]],
    cluster_queues: Sequence[Mapping[str, Any]],
    *,
    now: dt.datetime,
    mig_pending_timeout: dt.timedelta,
) -> list[Diagnostic]:
    """Node findings, one per pool and rule with the nodes as ranges (an NFD or node outage
    takes thousands of nodes at once; a line each would bury every other finding); each
    finding's `details` has a line per node."""
    live = {str(n["metadata"]["name"]): n for n in nodes}
    found: list[Diagnostic] = []
    pooled: set[str] = set()
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        absent = [n for n in pool.nodes if n.name not in live]
        if absent:
            found.append(_absent(pool, absent))
        labels: list[_Off] = []
        taints: list[_Off] = []
        short: list[_Short] = []
        for node in pool.nodes:
            pooled.add(node.name)
            obj = live.get(node.name)
            if obj is None:
                continue
            labels += _labels(policy, pool, node, obj)
            taints += _taints(pool, node, obj)
            found += _mig_state(node, obj, now, mig_pending_timeout)
            if card is not None:
                short += _short(policy, pool, card, node, obj)
        layouts = [off for off in labels if off.what.startswith(nvidia.MIG_CONFIG_LABEL + "=")]
        if layouts:  # a finding of its own: the MIG manager acts on that label
            found.append(_mig_config(pool, layouts))
        if len(layouts) < len(labels):
            found.append(
                _labels_finding(policy, pool, [off for off in labels if off not in layouts])
            )
        if taints:
            found.append(_taints_finding(pool, taints))
        if short:
            found.append(_accelerators(policy, pool, short, live, cluster_queues))
    resources = {c.resource_name for c in policy.card_types.values()}
    found += [
        _unpooled(policy, n)
        for name, n in live.items()
        if name not in pooled and _has_gpus(n, resources)
    ]
    return found


@dataclass(frozen=True)
class _Off:
    """One node's label or taint that is not as its pool says: `what` is the item (a label
    `key='value'`, a taint `key=value:effect`), `state` "lacks" or "has ... instead of"; the
    pool's finding names the nodes per item as ranges."""

    node: Node
    what: str
    missing: bool
    state: str
    after: str = ""  # who set a wrong value, when known
    have: str | None = None  # the live value, when there is one
    item: str = ""  # what the pool's message groups by: a label's key (values differ per rack)

    @property
    def named(self) -> str:
        return self.item or self.what

    @property
    def line(self) -> str:
        return f"node {self.node.name} {self.state} {self.what}{self.after}"

    def of(self, pool: Pool) -> str:
        """The line as a pool's only finding says it."""
        return f"node {self.node.name} {self.state} {self.what} of pool {pool.name}{self.after}"


def _absent(pool: Pool, nodes: Sequence[Node]) -> Diagnostic:
    """One finding per pool, the missing nodes as ranges."""
    if len(nodes) == 1:
        what = f"node {nodes[0].name} of pool {pool.name} is not in the cluster"
    else:
        shown = ", ".join(compact([n.name for n in nodes], sort=False))
        what = f"{len(nodes)} nodes of pool {pool.name} are not in the cluster: {shown}"
    return finding(
        "drift-node-absent",
        what,
        nodes[0].origin.span,
        path=f"Node {nodes[0].name}",
        hint="remove them from the pool, or bring the nodes back",
        details=[f"node {n.name} is not in the cluster" for n in nodes] if len(nodes) > 1 else (),
    )


def _summary(offs: Sequence[_Off]) -> str:
    """`a, b missing on gpu-[01:16]; another value of c on gpu-05`: the items that are off on
    the same nodes in one part, at most SHOWN of them named (labels by key: the value may
    differ per node, `details` has each)."""
    by_item: dict[tuple[str, bool], list[str]] = {}
    for off in offs:
        by_item.setdefault((off.named, off.missing), []).append(off.node.name)
    by_nodes: dict[tuple[tuple[str, ...], bool], list[str]] = {}
    for (what, missing), names in by_item.items():
        by_nodes.setdefault((tuple(names), missing), []).append(what)
    parts = []
    for (on, missing), whats in by_nodes.items():
        items = listing(whats, SHOWN)
        shown = f"{items} missing" if missing else f"another value of {items}"
        parts.append(f"{shown} on {', '.join(compact(on, sort=False))}")
    return "; ".join(parts)


def _some(nodes: Sequence[Node]) -> str:
    return f"node {nodes[0].name}" if len(nodes) == 1 else f"{len(nodes)} nodes"


def _nodes_of(offs: Sequence[_Off]) -> list[Node]:
    return list({off.node.name: off.node for off in offs}.values())


def _labels(policy: Policy, pool: Pool, node: Node, obj: Mapping[str, Any]) -> Iterator[_Off]:
    """The node's labels that are not as its pool says."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    desired = promised_labels(policy, pool, node)
    for key, value in desired.items():
        have = labels.get(key)
        if have == value:
            continue
        writers = Ownership(obj).at(("metadata", "labels", key))
        state = "lacks" if have is None else f"has {key}={have!r} instead of"
        by = f"; set by {writers[0]}" if writers and have is not None else ""
        yield _Off(node, f"{key}={value!r}", have is None, state, by, have, key)


def promised_labels(policy: Policy, pool: Pool, node: Node) -> dict[str, str]:
    """The labels the policy promises on `node`. With the nodes target it applies them all
    (taxonomy, topology, the agents' config selectors). Without it (an imported cluster, a
    fleet whose nodes another tool labels) nothing hetgitops renders writes a taxonomy label,
    so only what its rendered objects select on is promised: the pool's flavor labels and
    topology levels (kueue), the MIG and sharing config labels (gpu-operator), the node group
    (volcano). An imported cluster whose nodes carry other taxonomy values was reported as
    label drift that no sync would ever correct."""
    desired = desired_node_labels(policy, pool, node)
    targets = policy.fleet.targets if policy.fleet else ()
    if policy.fleet is None or "nodes" in targets:
        return desired
    selected: set[str] = set()
    promised: dict[str, str] = {}
    if "kueue" in targets:
        flavor = pool.flavor_node_labels
        promised.update(flavor if flavor is not None else flavor_node_labels(policy, pool))
        selected.update(topology_levels(policy, policy.fleet))
    if "gpu-operator" in targets:
        selected.update((nvidia.MIG_CONFIG_LABEL, nvidia.DEVICE_PLUGIN_LABEL))
    if "volcano" in targets:
        selected.add(NODEGROUP_LABEL)
    promised.update({k: v for k, v in desired.items() if k in selected})
    return dict(sorted(promised.items()))


def _mig_config(pool: Pool, offs: Sequence[_Off]) -> Diagnostic:
    """The nodes whose nvidia.com/mig.config is not the layout the policy gives them."""
    first = offs[0]
    if len(offs) == 1:
        value = first.what.partition("=")[2]
        shown = "no nvidia.com/mig.config label" if first.missing else f"mig.config {first.have!r}"
        message = (
            f"node {first.node.name} has {shown}; the policy's layout for pool {pool.name} "
            f"is {value}"
        )
    else:
        # Named with the layout: one pool's nodes mostly share it.
        message = _pool_message(pool, [replace(off, item="") for off in offs], "MIG layout")
    return finding(
        "drift-mig-config",
        message,
        pool.origin.at("spec", "mig") if pool.mig else pool.origin.span,
        path=f"Node {first.node.name}: metadata.labels.{nvidia.MIG_CONFIG_LABEL}",
        hint="the MIG manager re-partitions a node once the label matches (drain it first)",
        details=[off.line for off in offs] if len(offs) > 1 else (),
    )


def _labels_finding(policy: Policy, pool: Pool, offs: Sequence[_Off]) -> Diagnostic:
    nodes = _nodes_of(offs)
    message = _pool_message(pool, offs, "labels")
    own = policy.fleet is None or "nodes" in policy.fleet.targets
    return finding(
        "drift-node-labels",
        message,
        nodes[0].origin.span,
        path=f"Node {nodes[0].name}: metadata.labels",
        hint="NFD (the nodes target's NodeFeatureRule) or `kubectl apply --server-side "
        "-f nodes/plan/` restores them"
        if own
        else "the policy renders no nodes target: label the nodes as the flavors select "
        "them, or add the nodes target",
        details=[off.line for off in offs] if len(offs) > 1 else (),
    )


def _pool_message(pool: Pool, offs: Sequence[_Off], noun: str) -> str:
    """A pool's one finding: the node's own sentence when one item of one node is off, else
    the count of nodes and each item's nodes as ranges."""
    if len(offs) == 1:
        return offs[0].of(pool)
    nodes = _nodes_of(offs)
    who = _some(nodes)
    verb = "lacks or contradicts" if len(nodes) == 1 else "lack or contradict"
    return f"{who} of pool {pool.name} {verb} its {noun}: {_summary(offs)}"


def _taints(pool: Pool, node: Node, obj: Mapping[str, Any]) -> Iterator[_Off]:
    live = (obj.get("spec") or {}).get("taints") or []
    for taint in pool.taints:
        same = [t for t in live if t.get("key") == taint.key and t.get("effect") == taint.effect]
        if any(t.get("value") == taint.value for t in same):
            continue
        want = f"{taint.key}={taint.value or ''}:{taint.effect}"
        state = "lacks" if not same else f"has {taint.key}={same[0].get('value')!r} instead of"
        yield _Off(node, f"the taint {want}", not same, state)


def _taints_finding(pool: Pool, offs: Sequence[_Off]) -> Diagnostic:
    nodes = _nodes_of(offs)
    message = _pool_message(pool, offs, "taints")
    return finding(
        "drift-node-taints",
        message,
        pool.origin.at("spec", "taints"),
        path=f"Node {nodes[0].name}: spec.taints",
        hint="taint the nodes as their pool says, or change the pool's taints",
        details=[off.line for off in offs] if len(offs) > 1 else (),
    )


def _mig_state(
    node: Node, obj: Mapping[str, Any], now: dt.datetime, timeout: dt.timedelta
) -> Iterator[Diagnostic]:
    state = ((obj.get("metadata") or {}).get("labels") or {}).get(MIG_STATE_LABEL)
    if state == "failed":
        yield finding(
            "drift-mig-failed",
            f"node {node.name}: the MIG manager reports {MIG_STATE_LABEL}=failed",
            node.origin.span,
            path=f"Node {node.name}: metadata.labels.{MIG_STATE_LABEL}",
            hint="read the nvidia-mig-manager log on the node; the layout may not fit the GPU",
        )
    elif state == "pending":
        since = _label_time(obj, MIG_STATE_LABEL)
        if since is not None and now - since > timeout:
            minutes = int((now - since).total_seconds() // 60)
            yield finding(
                "drift-mig-pending",
                f"node {node.name}: {MIG_STATE_LABEL}=pending for {minutes} min (since "
                f"{since.isoformat()}), longer than the {timeout} allowed",
                node.origin.span,
                path=f"Node {node.name}: metadata.labels.{MIG_STATE_LABEL}",
                hint="GPU pods still running block the re-partition; drain the node",
            )


def _label_time(obj: Mapping[str, Any], key: str) -> dt.datetime | None:
    """When the label got its value: the time of the managedFields entry that owns it."""
    writers = Ownership(obj).at(("metadata", "labels", key))
    if not writers or not writers[0].time:
        return None
    return dt.datetime.fromisoformat(writers[0].time.replace("Z", "+00:00"))


def node_resources(policy: Policy, pool: Pool, card: CardType, node: Node) -> dict[str, int]:
    """Accelerator units the device plugin should advertise on `node`: during a staged
    sharing reduction the old replicas it is still configured with."""
    units = node_units(pool, card, policy.fleet, node.cards, replicas="advertised")
    return {name: count for name, count in units.items() if count}


def _advertised(obj: Mapping[str, Any], resource: str) -> int:
    status = obj.get("status") or {}
    values = status.get("allocatable") or status.get("capacity") or {}
    try:
        return int(quantities.value_of(values.get(resource, 0)))
    except quantities.QuantityError:
        return 0


@dataclass(frozen=True)
class _Short:
    """A node advertising fewer units of `resource` than the policy counts."""

    node: Node
    resource: str
    have: int
    want: int

    @property
    def line(self) -> str:
        return f"node {self.node.name} advertises {self.have} of {self.want} {self.resource}"


def _short(
    policy: Policy, pool: Pool, card: CardType, node: Node, obj: Mapping[str, Any]
) -> Iterator[_Short]:
    for resource, want in node_resources(policy, pool, card, node).items():
        have = _advertised(obj, resource)
        if have < want:
            yield _Short(node, resource, have, want)


def _accelerators(
    policy: Policy,
    pool: Pool,
    short: Sequence[_Short],
    live: Mapping[str, Mapping[str, Any]],
    cluster_queues: Sequence[Mapping[str, Any]],
) -> Diagnostic:
    """One finding per pool: the nodes short of each resource, and what that does to the
    pool's live quota against its live capacity (counted once per resource)."""
    by_resource: dict[str, list[_Short]] = {}
    for item in short:
        by_resource.setdefault(item.resource, []).append(item)
    parts, impacts = [], []
    for resource, items in by_resource.items():
        have, want = sum(i.have for i in items), sum(i.want for i in items)
        names = ", ".join(compact([i.node.name for i in items], sort=False))
        parts.append(f"{names}: {have} of {want} {resource}")
        capacity = sum(_advertised(live[n.name], resource) for n in pool.nodes if n.name in live)
        quota = live_quota(policy, cluster_queues, pool, resource)
        if quota > capacity:
            impacts.append(
                f"the live ClusterQueues' quota on {pool.name} ({quota}) now exceeds its "
                f"live capacity ({capacity})" + ("" if len(by_resource) == 1 else f" of {resource}")
            )
        else:
            impacts.append(
                f"live capacity of {pool.name} is {capacity}, live quota {quota}"
                + ("" if len(by_resource) == 1 else f" ({resource})")
            )
    nodes = list({i.node.name: i.node for i in short}.values())
    if len(short) == 1:
        message = f"{short[0].line}; {impacts[0]}"
    else:
        message = (
            f"{_some(nodes)} of pool {pool.name} "
            + ("advertises" if len(nodes) == 1 else "advertise")
            + f" fewer accelerators than the policy counts: {'; '.join(parts)}; "
            + "; ".join(impacts)
        )
    return finding(
        "drift-accelerators",
        message,
        nodes[0].origin.span,
        path=f"Node {nodes[0].name}: status.allocatable.{short[0].resource}",
        hint="a card failed or fell off the bus: repair the node, or lower its card count "
        "in the pool (and the quotas)",
        details=[i.line for i in short] if len(short) > 1 else (),
    )


def live_quota(
    policy: Policy, cluster_queues: Sequence[Mapping[str, Any]], pool: Pool, resource: str
) -> int:
    """Σ nominalQuota of `resource` on `pool`'s ResourceFlavor over the live ClusterQueues.
    The flavor is named as the compiler names it: with a Fleet topology `<pool>-<digest>`."""
    flavor = pool.name if policy.fleet is None else flavor_name(policy, policy.fleet, pool)
    total = 0
    for _, _, quota in _quotas(cluster_queues, flavor=flavor, resource=resource):
        total += int(quota)
    return total


def _quotas(
    cluster_queues: Sequence[Mapping[str, Any]], *, flavor: str, resource: str
) -> Iterator[tuple[str, str, Any]]:
    for cq in cluster_queues:
        for quota in queue_quotas(cq.get("spec")):
            if quota.flavor == flavor and quota.resource == resource:
                nominal = 0 if quota.nominal is None else quota.nominal
                yield cq["metadata"]["name"], resource, quantities.value_of(nominal)


def _has_gpus(obj: Mapping[str, Any], resources: set[str]) -> bool:
    status = obj.get("status") or {}
    names = set(status.get("capacity") or {}) | set(status.get("allocatable") or {})
    return any(n in resources or n.startswith(ACCELERATOR_PREFIXES) for n in names) and any(
        _advertised(obj, n) > 0
        for n in names
        if n in resources or n.startswith(ACCELERATOR_PREFIXES)
    )


def _unpooled(policy: Policy, obj: Mapping[str, Any]) -> Diagnostic:
    name = obj["metadata"]["name"]
    span = (
        policy.fleet.origin.span if policy.fleet else next(iter(policy.pools.values())).origin.span
    )
    return finding(
        "drift-node-unpooled",
        f"node {name} advertises accelerators but is in no pool of the policy",
        span,
        path=f"Node {name}",
        hint="add it to a pool (its cards get no quota and no labels otherwise)",
    )


def usage(
    manifests: Sequence[Manifest], cluster_queues: Sequence[Mapping[str, Any]]
) -> list[Diagnostic]:
    """ClusterQueues whose live usage exceeds a nominal quota the policy has cut."""
    desired = {m.name: m for m in manifests if m.kind == "ClusterQueue"}
    found: list[Diagnostic] = []
    for cq in cluster_queues:
        name = cq["metadata"]["name"]
        manifest = desired.get(name)
        if manifest is None:
            continue
        for flavor in (cq.get("status") or {}).get("flavorsUsage") or []:
            for item in flavor.get("resources") or []:
                found += _usage_item(manifest, cq, str(flavor.get("name")), item)
    return found


def _usage_item(
    manifest: Manifest, cq: Mapping[str, Any], flavor: str, item: Mapping[str, Any]
) -> list[Diagnostic]:
    resource = str(item.get("name"))
    try:
        used = quantities.value_of(item.get("total", 0))
    except quantities.QuantityError:
        return []
    wanted = [q for _, _, q in _quotas([manifest.obj], flavor=flavor, resource=resource)]
    current = [q for _, _, q in _quotas([cq], flavor=flavor, resource=resource)]
    if not wanted or not current or wanted[0] >= current[0] or used <= wanted[0]:
        return []
    return [
        finding(
            "drift-usage-above-quota",
            f"ClusterQueue {cq['metadata']['name']}: {resource} on {flavor} is in use at "
            f"{quantities.canonical(used)}, above the new nominal quota "
            f"{quantities.canonical(wanted[0])} (live {quantities.canonical(current[0])}); "
            "admitted work keeps running above the new quota",
            manifest.origin_of(_flavor_path(manifest.obj, flavor)),
            path=f"ClusterQueue {cq['metadata']['name']}: {flavor}/{resource}",
            hint="expect no new admissions there until the usage drains below the new quota",
        )
    ]


def _flavor_path(cq: Mapping[str, Any], flavor: str) -> tuple[str | int, ...]:
    """Where the ClusterQueue declares `flavor` (its team's quota entry for the pool is there)."""
    return next((f.path for f in queue_flavors(cq.get("spec")) if f.name == flavor), ())
