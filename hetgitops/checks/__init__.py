"""Check stage: semantic rules over the Policy, one module per family, one explicit registry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hetgitops.checks import (
    borrowing,
    budget,
    capacity_rules,
    clusters,
    coefficients,
    dra,
    fleet,
    grants,
    host_quota,
    inventory,
    jobs,
    koordinator,
    koordinator_pinning,
    labels,
    lifecycle,
    mig_rules,
    monitoring,
    multikueue,
    namespaces,
    node_agents,
    priorities,
    profiles,
    queues,
    quota_entries,
    ray,
    references,
    retiring,
    sharing,
    taints,
    twins,
    versions,
)
from hetgitops.checks.registry import RULES, CheckContext, Rule
from hetgitops.diagnostics import Diagnostic
from hetgitops.model.policy import MANAGER, Policy
from hetgitops.plan.clusters import cluster_policy

# Importing a family module registers its rules; this tuple is the explicit list of families.
FAMILIES: tuple[str, ...] = tuple(
    module.__name__.rsplit(".", 1)[-1]
    for module in (
        fleet,
        clusters,
        multikueue,
        references,
        inventory,
        capacity_rules,
        budget,
        borrowing,
        mig_rules,
        sharing,
        dra,
        priorities,
        labels,
        lifecycle,
        grants,
        profiles,
        jobs,
        koordinator,
        koordinator_pinning,
        ray,
        host_quota,
        quota_entries,
        coefficients,
        queues,
        namespaces,
        twins,
        node_agents,
        taints,
        retiring,
        versions,
        monitoring,
    )
)

# Rules about what one cluster holds together (node names, NFD and GPU Operator settings, the
# Kueue and Volcano objects of one cluster, its versions). In a multi-cluster policy they run
# once per worker or standalone cluster on that cluster's own policy: two clusters may reuse a
# node name, and a team's ClusterQueue on a worker has only that worker's flavors.
PER_CLUSTER: frozenset[str] = frozenset(
    {
        "node-duplicate",
        "topology-incomplete",
        "label-duplicate",
        "agent-untolerated-taint",
        "kueue-limits",
        "volcano-plugin-conflict",
        "volcano-kueue-mismatch",
        "mig-strategy-single-mixed",
        "mig-strategy-none",
        "targets-incomplete",
        "volcano-config",
        "queue-name-collision",
        "version-untested",
    }
)

__all__ = ["FAMILIES", "PER_CLUSTER", "RULES", "CheckContext", "Rule", "run_checks"]


def run_checks(
    policy: Policy,
    context: CheckContext,
    *,
    given: Mapping[str, list[Diagnostic]] | None = None,
    kept: dict[str, list[Diagnostic]] | None = None,
    keep: frozenset[str] = frozenset(),
) -> list[Diagnostic]:
    """Every rule's findings, in registry order. `given` holds rules' findings known already
    (diff's head takes some from its base: `checks.reuse`); the findings of the `keep` rules are
    put into `kept`."""
    found: list[Diagnostic] = []
    for registered in RULES.values():
        if given is not None and registered.id in given:
            found.extend(given[registered.id])
        elif policy.clusters and registered.id in PER_CLUSTER:
            found.extend(_per_cluster(registered, policy, context))
        elif kept is not None and registered.id in keep:
            kept[registered.id] = list(registered.function(policy, context))
            found.extend(kept[registered.id])
        else:
            found.extend(registered.function(policy, context))
    return found


def _per_cluster(registered: Rule, policy: Policy, context: CheckContext) -> list[Diagnostic]:
    """The rule on each non-manager cluster's policy; the finding names its cluster
    (`Diagnostic.on_cluster`, as drift's findings do). A finding
    every cluster makes alike (a Fleet setting they share) is reported once, naming them all."""
    clusters: dict[Diagnostic, list[str]] = {}
    for cluster in policy.clusters.values():
        if cluster.role == MANAGER:
            continue
        for finding in registered.function(cluster_policy(policy, cluster.name), context):
            clusters.setdefault(finding, []).append(cluster.name)
    found: list[Diagnostic] = []
    for finding, names in clusters.items():
        if len(names) == 1:
            found.append(finding.on_cluster(names[0]))
        else:  # about several clusters: named in the message, no single `cluster`
            found.append(replace(finding, message=f"[{', '.join(names)}] {finding.message}"))
    return found
