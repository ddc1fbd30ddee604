"""Drift stage: each pool's nodes against the labels, taints and MIG state the policy gives
them; one finding per pool and rule, the nodes named as ranges."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hetgitops.compilers import nvidia
from hetgitops.compilers.nodes import NODEGROUP_LABEL, desired_node_labels
from hetgitops.diagnostics import Diagnostic, listing
from hetgitops.drift.findings import finding, some_nodes
from hetgitops.drift.ownership import Ownership
from hetgitops.model.policy import Node, Policy, Pool
from hetgitops.model.ranges import compact
from hetgitops.plan.flavors import topology_levels
from hetgitops.plan.node_labels import flavor_node_labels

MIG_STATE_LABEL = "nvidia.com/mig.config.state"
# Items of a pool's node finding named in its message; `details` (JSON, --verbose) has all.
SHOWN = 3


def pool_findings(
    policy: Policy, pool: Pool, labels: Sequence[Off], taints: Sequence[Off]
) -> list[Diagnostic]:
    """The pool's label and taint findings from its nodes' `label_offs()` and `taint_offs()`;
    a wrong MIG layout label is a finding of its own (the MIG manager acts on that label)."""
    found: list[Diagnostic] = []
    layouts = [off for off in labels if off.what.startswith(nvidia.MIG_CONFIG_LABEL + "=")]
    if layouts:
        found.append(_mig_config(pool, layouts))
    if len(layouts) < len(labels):
        found.append(_labels_finding(policy, pool, [off for off in labels if off not in layouts]))
    if taints:
        found.append(_taints_finding(pool, taints))
    return found


@dataclass(frozen=True)
class Off:
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


def _summary(offs: Sequence[Off]) -> str:
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


def _nodes_of(offs: Sequence[Off]) -> list[Node]:
    return list({off.node.name: off.node for off in offs}.values())


def label_offs(policy: Policy, pool: Pool, node: Node, obj: Mapping[str, Any]) -> Iterator[Off]:
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
        yield Off(node, f"{key}={value!r}", have is None, state, by, have, key)


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


def _mig_config(pool: Pool, offs: Sequence[Off]) -> Diagnostic:
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


def _labels_finding(policy: Policy, pool: Pool, offs: Sequence[Off]) -> Diagnostic:
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


def _pool_message(pool: Pool, offs: Sequence[Off], noun: str) -> str:
    """A pool's one finding: the node's own sentence when one item of one node is off, else
    the count of nodes and each item's nodes as ranges."""
    if len(offs) == 1:
        return offs[0].of(pool)
    nodes = _nodes_of(offs)
    who = some_nodes(nodes)
    verb = "lacks or contradicts" if len(nodes) == 1 else "lack or contradict"
    return f"{who} of pool {pool.name} {verb} its {noun}: {_summary(offs)}"


def taint_offs(pool: Pool, node: Node, obj: Mapping[str, Any]) -> Iterator[Off]:
    live = (obj.get("spec") or {}).get("taints") or []
    for taint in pool.taints:
        same = [t for t in live if t.get("key") == taint.key and t.get("effect") == taint.effect]
        if any(t.get("value") == taint.value for t in same):
            continue
        want = f"{taint.key}={taint.value or ''}:{taint.effect}"
        state = "lacks" if not same else f"has {taint.key}={same[0].get('value')!r} instead of"
        yield Off(node, f"the taint {want}", not same, state)


def _taints_finding(pool: Pool, offs: Sequence[Off]) -> Diagnostic:
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


def mig_state(
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
