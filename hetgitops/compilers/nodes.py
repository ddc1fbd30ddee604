"""Compile stage, `nodes` target: Node Feature Discovery rules that keep hetgitops' labels on
every pool node, and a labels-only plan for clusters without NFD.

Node objects never enter the applied tree: Argo CD pruning or replacing a Node would be a
disaster, and NFD re-applies the labels by itself. The plan (`nodes/plan/nodes-<pool>.yaml`:
one file per pool holding its partial Nodes, only labels, one document each) is for
`kubectl apply --server-side --field-manager=hetgitops`. One file per pool, not per node: a
reviewer sees a pool's nodes together, and a 5,000-node fleet's tree has 40 files where it
had 5,000 (writing and replacing them was most of `render --output`'s time).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hetgitops.compilers import COMPILERS, agents, nvidia
from hetgitops.model.policy import Fleet, Node, Policy, Pool, derived
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan.node_labels import node_labels

TARGET = "nodes"
NFD_API_VERSION = "nfd.k8s-sigs.io/v1alpha1"
# Volcano's nodegroup plugin binds a queue to the nodes carrying this label.
NODEGROUP_LABEL = "volcano.sh/nodegroup-name"
RULE_PREFIX = "hetgitops-"
PLAN_DIR = "plan"
NFD_VALUES_FILE = "nfd-helm-values.yaml"


def desired_node_labels(policy: Policy, pool: Pool, node: Node) -> dict[str, str]:
    """Every label hetgitops owns on `node`: taxonomy and topology labels, the config-selector
    labels of the GPU Operator, and Volcano's node group (only for targets that read them)."""
    table = derived(policy, "desired_node_labels", lambda: _label_table(policy))
    return table[pool.name, node.name]


def _label_table(policy: Policy) -> dict[tuple[str, str], dict[str, str]]:
    """Labels of every node, computed once: the rules, the plan and NFD's allow-list use them.
    Nodes with the same labels (a rack's) share one mapping, so what reads them per distinct
    set (the allow-list, the plan's YAML) does the work once per rack, not once per node."""
    shared: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
    table: dict[tuple[str, str], dict[str, str]] = {}
    for pool in policy.pools.values():
        # A node's labels read the pool and the node's own fields but not its name (nor where
        # it is written): worked out once per distinct node shape, a rack's, not per node.
        by_shape: dict[tuple[Any, ...], dict[str, str]] = {}
        for node in pool.nodes:
            shape = tuple(getattr(node, f) for f in _SHAPE_FIELDS)
            labels = by_shape.get(shape)
            if labels is None:
                labels = by_shape[shape] = _interned(shared, _node_labels(policy, pool, node))
            table[pool.name, node.name] = labels
    return table


_SHAPE_FIELDS = tuple(f.name for f in dataclasses.fields(Node) if f.name not in {"name", "origin"})


def _interned(
    shared: dict[tuple[tuple[str, str], ...], dict[str, str]], labels: dict[str, str]
) -> dict[str, str]:
    return shared.setdefault(tuple(labels.items()), labels)


def _node_labels(policy: Policy, pool: Pool, node: Node) -> dict[str, str]:
    labels = node_labels(policy, pool, node)
    targets = policy.fleet.targets if policy.fleet else ()
    if "gpu-operator" in targets:
        labels.update(nvidia.node_nvidia_labels(policy, pool, node))
    if "volcano" in targets:
        labels[NODEGROUP_LABEL] = pool.node_group
    return dict(sorted(labels.items()))


def label_namespaces(policy: Policy) -> list[str]:
    """Label prefixes NFD must be allowed to write (`extraLabelNs`). NFD always refuses
    `kubernetes.io` and `*.kubernetes.io` (e.g. topology.kubernetes.io/zone) unless listed;
    the rest are listed too, so a `denyLabelNs` elsewhere cannot silently drop them.
    Computed once per policy (a check, the nodes and the gpu-operator targets all ask)."""
    return list(derived(policy, "label_namespaces", lambda: _label_namespaces(policy)))


def _label_namespaces(policy: Policy) -> tuple[str, ...]:
    table = derived(policy, "desired_node_labels", lambda: _label_table(policy))
    distinct = {id(labels): labels for labels in table.values()}.values()
    namespaces = {key.split("/", 1)[0] for labels in distinct for key in labels if "/" in key}
    return tuple(sorted(namespaces))


def _groups(policy: Policy, pool: Pool) -> list[tuple[dict[str, str], list[str]]]:
    """Nodes that carry identical labels (same rack, zone, MIG config, ...) share a rule."""
    groups: dict[tuple[tuple[str, str], ...], tuple[dict[str, str], list[str]]] = {}
    for node in pool.nodes:
        labels = desired_node_labels(policy, pool, node)
        # `labels` is sorted by key, so its items are the group's identity.
        groups.setdefault(tuple(labels.items()), (labels, []))[1].append(node.name)
    return list(groups.values())


def _rule(
    name: str, labels: dict[str, str], names: list[str], taints: list[dict[str, str]]
) -> dict[str, Any]:
    match = {"nodename": {"op": "In", "value": sorted(names)}}
    rule: dict[str, Any] = {"name": name, "labels": labels}
    if taints:  # applied by nfd-master with enableTaints (see compilers/agents.py)
        rule["taints"] = taints
    rule["matchFeatures"] = [{"feature": "system.name", "matchExpressions": match}]
    return rule


def _taints(pool: Pool) -> list[dict[str, str]]:
    return [
        {"key": t.key, **({"value": t.value} if t.value is not None else {}), "effect": t.effect}
        for t in pool.taints
    ]


def _feature_rule(policy: Policy, fleet: Fleet, pool: Pool) -> Manifest:
    """One cluster-scoped NodeFeatureRule per pool, one rule per group of identical nodes."""
    groups = _groups(policy, pool)
    rules = [
        _rule(pool.name if len(groups) == 1 else f"{pool.name}-{i}", labels, names, _taints(pool))
        for i, (labels, names) in enumerate(groups, start=1)
    ]
    obj = {
        "apiVersion": NFD_API_VERSION,
        "kind": "NodeFeatureRule",
        "metadata": metadata(fleet, RULE_PREFIX + pool.name),
        "spec": {"rules": rules},
    }
    return Manifest(TARGET, obj, pool.origin.span)


def _plan(policy: Policy, pool: Pool, node: Node) -> Manifest:
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": desired_node_labels(policy, pool, node)},
    }
    return Manifest(
        TARGET,
        obj,
        node.origin.span,
        applied=False,
        filename=plan_file(pool),
    )


def plan_file(pool: Pool) -> str:
    """The plan file (under the target's folder) holding every Node of `pool`."""
    return f"{PLAN_DIR}/nodes-{pool.name}.yaml"


def nfd_master_config(policy: Policy) -> dict[str, Any]:
    """nfd-master's config file: the label prefixes, and taints on when a pool has some."""
    config: dict[str, Any] = {"extraLabelNs": label_namespaces(policy)}
    if any(pool.taints for pool in policy.pools.values()):
        config["enableTaints"] = True
    return config


def nfd_helm_values(policy: Policy) -> dict[str, Any]:
    """Values for the node-feature-discovery chart: nfd-master's config, and the worker's
    tolerations (chart default `[]`) so it runs on tainted pools."""
    values: dict[str, Any] = {"master": {"config": nfd_master_config(policy)}}
    tolerations = agents.pool_tolerations(policy)
    if tolerations:
        values["worker"] = {"tolerations": tolerations}
    return values


def compile_nodes(policy: Policy) -> list[Manifest]:
    fleet = policy.fleet
    if fleet is None or not policy.pools:
        return []
    manifests = [_feature_rule(policy, fleet, pool) for pool in policy.pools.values()]
    manifests += [_plan(policy, p, n) for p in policy.pools.values() for n in p.nodes]
    manifests.append(
        Manifest(
            TARGET,
            nfd_helm_values(policy),
            fleet.origin.span,
            applied=False,
            filename=NFD_VALUES_FILE,
        )
    )
    return manifests


COMPILERS[TARGET] = compile_nodes
