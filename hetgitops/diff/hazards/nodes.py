"""Diff stage, day-2 hazards of nodes: a pool's NodeFeatureRule rules adding a NoExecute taint,
losing nodes or handing them to another pool (nfd-master labels and taints what they match)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hetgitops.diff.hazards.reading import listed_nodes, of_kind, spec_of
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.output.manifests import Manifest
from hetgitops.plan.node_labels import pool_label


def nfd_rules(manifests: Sequence[Manifest]) -> dict[str, tuple[dict[str, Any], Manifest]]:
    return {
        str(rule_.get("name")): (rule_, m)
        for m in of_kind(manifests, "NodeFeatureRule")
        for rule_ in spec_of(m).get("rules") or []
    }


def rule_nodes(rule_: Mapping[str, Any]) -> list[str]:
    nodes: list[str] = []
    for feature in rule_.get("matchFeatures") or []:
        expression = (feature.get("matchExpressions") or {}).get("nodename") or {}
        nodes += [str(v) for v in expression.get("value") or []]
    return nodes


def _rule_pool(rule_: Mapping[str, Any]) -> str:
    """The pool a NodeFeatureRule rule labels its nodes with (`<domain>/pool`), else its name."""
    return pool_label(rule_.get("labels") or {}, str(rule_.get("name")))


def pool_nodes(manifests: Sequence[Manifest]) -> dict[str, set[str]]:
    """The nodes each pool's NodeFeatureRule rules match (what its flavor selects)."""
    found: dict[str, set[str]] = {}
    for rule_, _ in nfd_rules(manifests).values():
        found.setdefault(_rule_pool(rule_), set()).update(rule_nodes(rule_))
    return found


def _nfd_taints(manifests: Sequence[Manifest]) -> dict[str, tuple[set[str], list[str], Manifest]]:
    """Per NodeFeatureRule rule: its NoExecute taints (`key=value`) and the nodes it matches."""
    return {
        name: (
            {
                f"{t.get('key')}={t.get('value', '')}"
                for t in rule_.get("taints") or []
                if t.get("effect") == "NoExecute"
            },
            rule_nodes(rule_),
            m,
        )
        for name, (rule_, m) in nfd_rules(manifests).items()
    }


@hazard_rule(
    "taint-evicts",
    when=(
        "A NoExecute taint reaches a pool's nodes (nfd-master applies it): the kubelet evicts "
        "every pod there that does not tolerate it."
    ),
    fix="NoSchedule first, drain, then NoExecute; upgrade the node agents first.",
)
def taint_evicts(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """nfd-master (enableTaints) puts a NodeFeatureRule's taints on the nodes it matches; a new
    NoExecute taint makes the kubelet's taint manager evict every pod that does not tolerate it
    (Kubernetes pkg/controller/tainteviction). Kueue's flavor tolerations reach only pods it
    admits from then on."""
    old, new = _nfd_taints(before), _nfd_taints(after)
    for name in sorted(new):
        taints, nodes, manifest = new[name]
        added = sorted(taints - (old[name][0] if name in old else set()))
        if not added or not nodes:
            continue
        yield Hazard(
            rule="taint-evicts",
            subject=f"NodeFeatureRule rule {name}",
            message=f"adds NoExecute taint {', '.join(added)} to {len(nodes)} node(s) "
            f"({', '.join(nodes[:6])}{', ...' if len(nodes) > 6 else ''}): every pod there that "
            "does not tolerate it is evicted (running jobs and gangs fail, serving replicas are "
            "recreated elsewhere or stay Pending)",
            action="add the taint as NoSchedule first, drain or finish the work on those nodes, "
            "then "
            "switch it to NoExecute; upgrade the GPU Operator and NFD releases with the rendered "
            "agent values before the taint lands",
            span=manifest.origin,
            scope=(("nodes", ",".join(nodes)), *(("taint", t) for t in added)),
        )


@hazard_rule(
    "node-removed",
    when=(
        "Nodes leave a pool (the NodeFeatureRule no longer matches them): nfd-master removes the "
        "pool's labels, so Kueue no longer counts them while the pods running there keep "
        "running, outside the pool's accounting."
    ),
    fix="cordon and drain the nodes before the change.",
)
def node_removed(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Nodes a pool's NodeFeatureRule matched before and no rule matches after: nfd-master
    drops the labels it gave them, so the flavor (its nodeLabels) no longer selects them."""
    kept = {node for rule_, _ in nfd_rules(after).values() for node in rule_nodes(rule_)}
    for name, (rule_, manifest) in sorted(nfd_rules(before).items()):
        gone = [node for node in rule_nodes(rule_) if node not in kept]
        if not gone:
            continue
        yield Hazard(
            rule="node-removed",
            subject=f"NodeFeatureRule rule {name}",
            message=f"no longer matches {len(gone)} node(s) ({listed_nodes(gone)}): nfd-master "
            "removes the "
            "pool's labels from them, so Kueue stops counting them and their running pods keep "
            "running outside the pool's accounting",
            action="cordon and drain those nodes (kubectl drain) before the change lands",
            span=manifest.origin,
            scope=(("nodes", ",".join(gone)),),
        )


@hazard_rule(
    "node-moved",
    when=(
        "Nodes move from one pool to another (a pool split or a node entry moved): nfd-master "
        "relabels them, so the new pool's flavor admits its quota there while the pods admitted "
        "on the old pool's flavor keep running on them (double booking until they finish), and "
        "queues that no longer list the old flavor stop counting that work."
    ),
    fix="cordon and drain the moving nodes (or let their work finish) before the sync.",
)
def node_moved(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Nodes one pool's NodeFeatureRule matched before and another pool's matches after: the
    node's `<domain>/pool` label changes, so the flavors select it differently while the pods
    Kueue admitted under the old pool's flavor keep running there (Kueue evicts nothing on a
    node label change, and counts their usage under the old flavor: clusterqueue.go:596-606)."""
    was = {n: name for name, (rule_, _) in nfd_rules(before).items() for n in rule_nodes(rule_)}
    now = {n: name for name, (rule_, _) in nfd_rules(after).items() for n in rule_nodes(rule_)}
    moves: dict[tuple[str, str], list[str]] = {}
    for node, old_rule in sorted(was.items()):
        new_rule = now.get(node)
        if new_rule is not None and new_rule != old_rule:
            moves.setdefault((old_rule, new_rule), []).append(node)
    rules_after = nfd_rules(after)
    for (old_rule, new_rule), nodes in sorted(moves.items()):
        yield Hazard(
            rule="node-moved",
            subject=f"NodeFeatureRule rule {new_rule}",
            message=f"takes {len(nodes)} node(s) ({listed_nodes(nodes)}) from {old_rule}: "
            "nfd-master "
            f"relabels them, so {new_rule}'s flavor admits its quota on them while the pods "
            f"admitted under {old_rule}'s flavor keep running there (double booking until they "
            f"finish; queues that no longer list {old_rule}'s flavor stop counting them)",
            action=f"cordon and drain {listed_nodes(nodes)} (kubectl drain), or let their work "
            "finish, "
            "before the sync; uncordon after it",
            span=rules_after[new_rule][1].origin,
            scope=(("nodes", ",".join(nodes)),),
        )
