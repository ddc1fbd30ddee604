"""Plan stage: the node labels hetgitops owns, derived once for every target and every reader.

The `nodes` target writes these labels onto nodes; Kueue ResourceFlavors and Volcano queues
select nodes by them; checks, explain, diff, drift and import read them. Deriving them in one
place is what keeps the sides from drifting. `pool_label` is the one reader of the other
direction: which pool a set of labels (a flavor's, an NFD rule's, a Queue's) selects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TypeVar

from hetgitops.model.policy import CardType, Node, Policy, Pool, derived
from hetgitops.plan import dra

DEFAULT_DOMAIN = "hetgitops.io"
# Sources whose value differs from node to node; they are not pool-wide labels.
PER_NODE_SOURCES = ("zone", "rack", "nvlink-domain")
# Without a LabelTaxonomy every node still gets these (source, key-name) labels.
DEFAULT_POOL_LABELS = (
    ("card-type", "card-type"),
    ("vendor", "vendor"),
    ("memory", "gpu-memory-gib"),
    ("generation", "generation"),
    ("pool", "pool"),
    ("purpose", "purpose"),
)
DEFAULT_NODE_LABELS = (
    ("zone", "topology.kubernetes.io/zone"),
    ("rack", "rack"),
    ("nvlink-domain", "nvlink-domain"),
)
# The identity labels: a ResourceFlavor selects its pool's nodes by these alone, because every
# nodeLabel is injected into the pod's nodeSelector and each extra key is another way to miss.
IDENTITY_LABELS = ("pool", "card-type")
# The key of the pool identity label under any domain: readers of rendered or live objects do
# not know which domain wrote them.
POOL_LABEL_SUFFIX = "/pool"
MAX_FLAVOR_LABELS = 8

_T = TypeVar("_T")

_INVALID = re.compile(r"[^A-Za-z0-9_.-]+")


def domain(policy: Policy) -> str:
    return policy.fleet.label_domain if policy.fleet else DEFAULT_DOMAIN


def label_value(text: str) -> str:
    """Coerce to a valid label value: [A-Za-z0-9_.-], alphanumeric at both ends, <= 63 chars."""
    cleaned = _INVALID.sub("-", text)[:63]
    return cleaned.strip("-_.")


def _memory(card: CardType) -> str:
    gib = card.memory_gib
    return str(int(gib)) if gib == int(gib) else str(gib)


CARD_VALUES: dict[str, Callable[[CardType], str]] = {
    "card-type": lambda c: c.name,
    "vendor": lambda c: c.vendor,
    "model": lambda c: c.model,
    "memory": _memory,
    "architecture": lambda c: c.architecture,
    "generation": lambda c: c.generation,
    "interconnect": lambda c: c.interconnect,
    "lifecycle": lambda c: c.lifecycle,
}


def _pool_value(source: str, key: str, pool: Pool, card: CardType | None) -> str | None:
    if source == "pool":
        return pool.name
    if source == "purpose":
        return pool.purpose
    if source == "static":
        return pool.labels.get(key)
    getter = CARD_VALUES.get(source)
    if getter is None or card is None:
        return None
    return getter(card)


_NODE_FIELDS = {"zone": "zone", "rack": "rack", "nvlink-domain": "nvlink_domain"}


def node_value(source: str, node: Node) -> str | None:
    """The value a per-node source (zone, rack, nvlink-domain) takes on `node`."""
    field = _NODE_FIELDS.get(source)
    value: str | None = getattr(node, field) if field else None
    return value


def _rules(policy: Policy) -> list[tuple[str, str]]:
    """(source, key) pairs: the taxonomy's, or the default set under the fleet's domain."""
    if policy.taxonomy is not None:
        return [(rule.source, rule.key) for rule in policy.taxonomy.labels]
    prefix = domain(policy)
    pairs = [(source, f"{prefix}/{name}") for source, name in DEFAULT_POOL_LABELS]
    pairs += [(s, n if "/" in n else f"{prefix}/{n}") for s, n in DEFAULT_NODE_LABELS]
    return pairs


def _node_rules(policy: Policy) -> list[tuple[str, str]]:
    """The per-node (source, key) pairs of `_rules`, in order: found once per policy, not once
    per node."""
    return derived(
        policy,
        "node_label_rules",
        lambda: [(s, k) for s, k in _rules(policy) if s in PER_NODE_SOURCES],
    )


def label_keys(policy: Policy) -> list[str]:
    """Every node label key the policy defines (its taxonomy's, or the default set)."""
    return [key for _source, key in _rules(policy)]


def pool_node_labels(policy: Policy, pool: Pool) -> dict[str, str]:
    """The labels every node of `pool` carries (sorted by key).

    Taxonomy labels whose value is per node (zone, rack, NVLink domain) are left out: see
    `node_labels`. The identity labels `<domain>/pool` and `<domain>/card-type` are always
    present, because ResourceFlavors and job templates select nodes by them."""
    shared = derived(policy, ("pool_node_labels", pool.name), lambda: _pool_labels(policy, pool))
    return dict(shared)


def _pool_labels(policy: Policy, pool: Pool) -> dict[str, str]:
    card = policy.card_type_of(pool)
    labels = {k: v for k, v in pool.labels.items()}
    if dra.on_dra(pool) and not pool.migrating_from:
        # The GPU Operator keeps a deploy label a node already has (gpu-operator
        # controllers/state_manager.go:376-380): "false" keeps its device plugin off there.
        labels.setdefault(dra.DEVICE_PLUGIN_SWITCH, "false")
    for source, key in _rules(policy):
        if source in PER_NODE_SOURCES:
            continue
        value = _pool_value(source, key, pool, card)
        if value:
            labels[key] = label_value(value)
    prefix = domain(policy)
    labels[f"{prefix}/pool"] = pool.name
    labels.setdefault(f"{prefix}/card-type", label_value(pool.card_type))
    return dict(sorted(labels.items()))


def node_labels(policy: Policy, pool: Pool, node: Node) -> dict[str, str]:
    """`pool_node_labels` plus the node's own topology labels (zone, rack, NVLink domain)."""
    labels = pool_node_labels(policy, pool)
    for source, key in _node_rules(policy):
        value = node_value(source, node)
        if value:
            labels[key] = label_value(value)
    return dict(sorted(labels.items()))


def flavor_node_labels(policy: Policy, pool: Pool) -> dict[str, str]:
    """The stable subset a Kueue ResourceFlavor selects on (<= 8 keys, always the pool)."""
    prefix = domain(policy)
    labels = pool_node_labels(policy, pool)
    keys = [f"{prefix}/{name}" for name in IDENTITY_LABELS][:MAX_FLAVOR_LABELS]
    return {key: labels[key] for key in sorted(keys) if key in labels}


def topology_label(policy: Policy, level: str) -> str:
    """Node label of a Fleet topology level (Kueue Topology, Volcano HyperNodes).

    Follows the taxonomy's key for that source, so the Topology names the label nodes carry."""
    if level == "hostname":
        return "kubernetes.io/hostname"
    for source, key in _rules(policy):
        if source == level:
            return key
    return "topology.kubernetes.io/zone" if level == "zone" else f"{domain(policy)}/{level}"


def pool_label(labels: Mapping[str, object], default: _T) -> str | _T:
    """The pool `labels` select: the value of their `<domain>/pool` label (the first key ending
    in `/pool`, whatever the domain), else `default`. Every hetgitops flavor, NFD rule and
    Queue carries it; the one reader for diff, drift, explain and import alike."""
    for key, value in labels.items():
        if str(key).endswith(POOL_LABEL_SUFFIX):
            return str(value)
    return default
