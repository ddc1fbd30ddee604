"""Compile stage, `volcano` target: scheduler ConfigMap, plugin conflicts, Queue invariants.

Volcano validates neither its scheduler file (an invalid one is logged and the old one stays
active) nor, before v1.15, every Queue rule; so both are checked here, on what is emitted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from decimal import Decimal
from typing import Any

from hetgitops.compilers import CompileError
from hetgitops.model import quantities
from hetgitops.model.policy import Fleet, Policy
from hetgitops.output.manifests import Manifest, metadata, to_yaml

TARGET = "volcano"
CONFIG_MAP = "volcano-scheduler-configmap"
CONFIG_NAMESPACE = "volcano-system"
CONFIG_KEY = "volcano-scheduler.conf"
ROOT = "root"
MAX_DEPTH = 5  # --max-queue-depth, counted from below root
MIN_WEIGHT, MAX_WEIGHT = 1, 65535
# Only these may be fractional; every other (extended) resource must be a whole number.
NATIVE_RESOURCES = ("cpu", "memory", "ephemeral-storage")


class VolcanoConfigError(CompileError):
    """A plugin set or Queue tree that Volcano would reject or silently misread."""

    rule = "volcano-config"


def _queue_plugin(fleet: Fleet) -> dict[str, Any]:
    plugin: dict[str, Any] = {"name": fleet.volcano_queue_plugin}
    # enableHierarchy is the one switch Volcano does not default to true.
    if fleet.volcano_queue_plugin == "capacity" and fleet.volcano_hierarchy:
        plugin["enableHierarchy"] = True
    return plugin


def _nodegroup(fleet: Fleet) -> dict[str, Any]:
    """Makes the leaves' nodegroup affinity bind. `strict: false` lets queues without
    affinity (Volcano's `default`) keep using unlabelled nodes instead of only pool nodes."""
    plugin: dict[str, Any] = {"name": "nodegroup"}
    if fleet.volcano_hierarchy:
        plugin["enableHierarchy"] = True
    plugin["arguments"] = {"strict": False}
    return plugin


def _binpack(policy: Policy) -> dict[str, Any] | None:
    """binpack counts only cpu and memory unless told the accelerator resource names."""
    names = set()
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        if pool.placement == "binpack" and card is not None:
            names.add(card.resource_name)
    if not names:
        return None
    return {"name": "binpack", "arguments": {"binpack.resources": ", ".join(sorted(names))}}


def scheduler_config(policy: Policy, fleet: Fleet) -> dict[str, Any]:
    """The `volcano-scheduler.conf` document: actions as one comma-separated string (order is
    the pipeline), then the upstream tiers with the fleet's queue plugin and nodegroup, or the
    fleet's own tiers (and configurations, metrics) as written; every mapping's keys in one
    canonical order (`_canonical`)."""
    actions = ", ".join(fleet.volcano_actions)
    if fleet.volcano_tiers is not None:
        config: dict[str, Any] = {"actions": actions, "tiers": list(fleet.volcano_tiers)}
        return _canonical_config(_with_settings(config, fleet))
    first: list[dict[str, Any]] = [
        {"name": "priority"},
        {"name": "gang", "enablePreemptable": False},
        {"name": "conformance"},
    ]
    second: list[dict[str, Any]] = [
        {"name": "drf", "enablePreemptable": False},
        {"name": "predicates"},
        _queue_plugin(fleet),
        _nodegroup(fleet),
        {"name": "nodeorder"},
    ]
    binpack = _binpack(policy)
    if binpack is not None:
        second.append(binpack)
    present = {p["name"] for p in first + second}
    second += [{"name": n} for n in fleet.volcano_extra_plugins if n not in present]
    config = {"actions": actions, "tiers": [{"plugins": first}, {"plugins": second}]}
    return _canonical_config(_with_settings(config, fleet))


def _with_settings(config: dict[str, Any], fleet: Fleet) -> dict[str, Any]:
    if fleet.volcano_configurations:
        config["configurations"] = list(fleet.volcano_configurations)
    if fleet.volcano_metrics:
        config["metrics"] = fleet.volcano_metrics
    return config


def _entry_key(key: str) -> tuple[int, str]:
    # A plugin or configuration reads `name` first, its switches, then `arguments` (how Volcano's
    # own examples write them); the rest alphabetically.
    return (0 if key == "name" else 2 if key == "arguments" else 1, key)


def _canonical_config(config: dict[str, Any]) -> dict[str, Any]:
    return {k: _canonical(v) for k, v in config.items()}  # top level: actions, tiers, ...


def _canonical(value: Any) -> Any:
    """The scheduler config with every mapping's keys in one fixed order, whatever order the
    policy wrote them in: the same policy always renders the same ConfigMap bytes (a reordered
    plugin entry must not make a sync rewrite the scheduler's file). Lists keep their order:
    tiers, plugins and actions are ordered by meaning."""
    if isinstance(value, Mapping):
        return {k: _canonical(value[k]) for k in sorted(value, key=_entry_key)}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def as_read(key: str, document: Any) -> Any:
    """A ConfigMap value's parsed document as Volcano reads it: the scheduler config's
    actions split on commas and each trimmed (pkg/scheduler/util.go), so their spacing is no
    difference. Any other key or document is returned as it is."""
    if key != CONFIG_KEY or not isinstance(document, dict):
        return document
    actions = document.get("actions")
    if not isinstance(actions, str):
        return document
    # An empty entry stays: Volcano refuses it ("failed to find Action") and keeps its old
    # config, so "a, b," is not "a, b".
    return {**document, "actions": ", ".join(a.strip() for a in actions.split(","))}


def plugin_conflicts(config: Mapping[str, Any], *, hierarchical: bool) -> list[str]:
    """The plugin combinations known to break Volcano, found in a scheduler config."""
    plugins = {p["name"]: p for tier in config.get("tiers", []) for p in tier.get("plugins", [])}
    problems = []
    if "capacity" in plugins and "proportion" in plugins:
        problems.append("the capacity and proportion plugins must never be enabled together")
    if hierarchical and not plugins.get("capacity", {}).get("enableHierarchy"):
        problems.append("hierarchical queues need the capacity plugin with enableHierarchy: true")
    if "proportion" in plugins and plugins.get("drf", {}).get("enableHierarchy"):
        problems.append("drf with enableHierarchy conflicts with the proportion plugin")
    return problems


def scheduler_conflicts(policy: Policy) -> list[str]:
    """Conflicts in the scheduler config this policy compiles to (empty: none, or no Fleet)."""
    fleet = policy.fleet
    if fleet is None:
        return []
    config = scheduler_config(policy, fleet)
    return plugin_conflicts(config, hierarchical=fleet.volcano_hierarchy)


def scheduler_config_map(policy: Policy, fleet: Fleet) -> Manifest:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(fleet, CONFIG_MAP, namespace=CONFIG_NAMESPACE),
        "data": {CONFIG_KEY: to_yaml(scheduler_config(policy, fleet))},
    }
    return Manifest(TARGET, obj, fleet.origin.at("spec", "volcano"))


def _values(resources: Mapping[str, Any] | None) -> dict[str, Decimal]:
    return {name: quantities.value_of(q) for name, q in (resources or {}).items()}


def _queue_violations(name: str, spec: Mapping[str, Any]) -> Iterable[str]:
    weight = spec.get("weight", 1)
    if not MIN_WEIGHT <= weight <= MAX_WEIGHT:
        yield f"queue {name}: weight {weight} outside {MIN_WEIGHT}..{MAX_WEIGHT}"
    guarantee = _values(spec.get("guarantee", {}).get("resource"))
    deserved, capability = _values(spec.get("deserved")), _values(spec.get("capability"))
    for resource, amount in {**guarantee, **deserved, **capability}.items():
        if resource not in NATIVE_RESOURCES and amount != amount.to_integral_value():
            yield f"queue {name}: {resource} must be a whole number, not {amount}"
    for resource, amount in guarantee.items():
        if amount > deserved.get(resource, Decimal(-1)):
            yield f"queue {name}: guarantee {resource} exceeds deserved (or is not in it)"
    for resource, amount in deserved.items():
        if resource in capability and amount > capability[resource]:
            yield f"queue {name}: deserved {resource} exceeds capability"


def _depth(name: str, parents: Mapping[str, str]) -> int | None:
    """Depth below root (a root child is 1), or None on a cycle or a missing parent."""
    depth, seen = 0, set()
    while name != ROOT:
        if name in seen or name not in parents:
            return None
        seen.add(name)
        depth, name = depth + 1, parents[name]
    return depth


def _field(spec: Mapping[str, Any], field: str) -> dict[str, Decimal]:
    amounts = spec.get(field) or {}
    return _values(amounts.get("resource") if field == "guarantee" else amounts)


def _tree_violations(
    specs: Mapping[str, Mapping[str, Any]], external: Collection[str]
) -> Iterable[str]:
    # An `external` parent (a team's `spec.volcano.parent`, kept by import) is the cluster's,
    # not rendered: its children are checked against nothing here, as root's are.
    parents = {
        name: ROOT if (parent := spec.get("parent", ROOT)) in external else parent
        for name, spec in specs.items()
    }
    for name in specs:
        depth = _depth(name, parents)
        if depth is None or depth > MAX_DEPTH:
            yield f"queue {name}: parent chain is broken, cyclic or deeper than {MAX_DEPTH}"
            return
    for field in ("deserved", "guarantee"):
        yield from _sum_violations(field, parents, specs)
    for name, spec in specs.items():
        yield from _capability_violations(name, spec, parents, specs)


def _sum_violations(
    field: str, parents: Mapping[str, str], specs: Mapping[str, Mapping[str, Any]]
) -> Iterable[str]:
    """Children's deserved / guarantee add up to at most the parent's; an unset parent value
    counts as 0. Root's children are not checked against root."""
    sums: dict[str, dict[str, Decimal]] = {}
    for name, spec in specs.items():
        totals = sums.setdefault(parents[name], {})
        for resource, amount in _field(spec, field).items():
            totals[resource] = totals.get(resource, Decimal(0)) + amount
    for parent, totals in sums.items():
        if parent == ROOT:
            continue
        limit = _field(specs[parent], field)
        for resource, amount in totals.items():
            if amount > limit.get(resource, Decimal(0)):
                yield f"queue {parent}: children's {field} {resource} exceeds the parent's"


def _capability_violations(
    name: str,
    spec: Mapping[str, Any],
    parents: Mapping[str, str],
    specs: Mapping[str, Mapping[str, Any]],
) -> Iterable[str]:
    """A child's capability stays within its nearest ancestor that sets one."""
    for resource, amount in _field(spec, "capability").items():
        ancestor = parents[name]
        while ancestor != ROOT and resource not in _field(specs[ancestor], "capability"):
            ancestor = parents[ancestor]
        if ancestor != ROOT and amount > _field(specs[ancestor], "capability")[resource]:
            yield f"queue {name}: capability {resource} exceeds ancestor {ancestor}'s"


def invariant_violations(
    queues: Iterable[Mapping[str, Any]], external: Collection[str] = ()
) -> list[str]:
    """Volcano's Queue admission rules over rendered Queue objects (empty: all hold)."""
    specs = {q["metadata"]["name"]: q.get("spec", {}) for q in queues}
    problems = [v for name, spec in specs.items() for v in _queue_violations(name, spec)]
    problems += _tree_violations(specs, external)
    return problems


def check_invariants(queues: Iterable[Mapping[str, Any]], external: Collection[str] = ()) -> None:
    problems = invariant_violations(queues, external)
    if problems:
        raise VolcanoConfigError("; ".join(problems))
