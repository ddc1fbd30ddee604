"""Compile stage, `koordinator` target: per pool an ElasticQuotaProfile and its tree of
ElasticQuotas (the Fleet's cohorts as parents, one leaf per team), the tiers as PriorityClasses
inside Koordinator's bands, and the Helm values and scheduler plugin arguments that turn the
per-pool trees on.

The facts (names, tree ids, resource keys, min and max, lending, band values) are
plan/koordinator_quota.py's and plan/koordinator_priority.py's; this module only spells them.
Label and annotation keys are Koordinator v1.8.0's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from hetgitops.compilers import COMPILERS, CompileError
from hetgitops.compilers.argocd import RECREATE_ON_IMMUTABLE, sync_wave
from hetgitops.diagnostics import NOWHERE, Span
from hetgitops.model import quantities
from hetgitops.model.policy import Fleet, Policy
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan.koordinator_priority import koord_tiers
from hetgitops.plan.koordinator_quota import (
    NAMESPACE,
    RESERVED_NAMES,
    QuotaNode,
    TreePlan,
    quota_nodes,
    trees,
)

TARGET = "koordinator"
PROFILE_API = "quota.koordinator.sh/v1alpha1"
QUOTA_API = "scheduling.sigs.k8s.io/v1alpha1"
PREFIX = "quota.scheduling.koordinator.sh"
TREE_ID = f"{PREFIX}/tree-id"
PARENT = f"{PREFIX}/parent"
IS_PARENT = f"{PREFIX}/is-parent"
ALLOW_LENT = f"{PREFIX}/allow-lent-resource"
FORCE_UPDATE = f"{PREFIX}/allow-force-update"
QUOTA_NAME = f"{PREFIX}/name"
RESOURCE_KEYS = f"{PREFIX}/resource-keys"
NAMESPACES = f"{PREFIX}/namespaces"
HELM_VALUES_FILE = "helm-values.yaml"
ARGS_FILE = "elasticquota-args.yaml"
# Alpha, default off in both binaries (pkg/features/features.go:119 for koord-manager,
# scheduler_features.go:129 for koord-scheduler): without it every profile's tree is ignored
# and all quotas form one global tree, pods not pinned to their pool.
FEATURE_GATES = "MultiQuotaTree=true"


def _json(items: tuple[str, ...]) -> str:
    """A JSON list as Go's encoding/json writes it (no spaces): what the controllers read."""
    return json.dumps(list(items), separators=(",", ":"))


def _resources(values: Mapping[str, Decimal]) -> dict[str, str]:
    """The tree's keys in order (cpu, memory, accelerators), as canonical quantities."""
    return {r: quantities.canonical(v, binary=r == "memory") for r, v in values.items()}


def _profile(fleet: Fleet, tree: TreePlan) -> Manifest:
    labels = {TREE_ID: tree.tree_id, fleet.label("pool"): tree.pool.name}
    annotations = {RESOURCE_KEYS: _json(tree.keys), **sync_wave(0)}
    obj = {
        "apiVersion": PROFILE_API,
        "kind": "ElasticQuotaProfile",
        "metadata": metadata(
            fleet, tree.profile, namespace=NAMESPACE, labels=labels, annotations=annotations
        ),
        "spec": {
            "quotaName": tree.root,
            "resourceRatio": tree.ratio,
            "nodeSelector": {"matchLabels": dict(tree.node_selector)},
            # The controller copies quotaLabels onto the root quota it writes
            # (pkg/quota-controller/profile/profile_controller.go:184-188) and labels nothing
            # else: without is-parent there the webhook refuses every child of the root
            # (quota_topology_check.go:196-198, seen in tests/sim/test_sim_koordinator.py).
            "quotaLabels": {IS_PARENT: "true"},
        },
    }
    return Manifest(TARGET, obj, tree.origin, depth=0)


def _quota(fleet: Fleet, node: QuotaNode) -> Manifest:
    labels = {
        TREE_ID: node.tree_id,
        PARENT: node.parent,
        IS_PARENT: "true" if node.is_parent else "false",
        ALLOW_LENT: "true" if node.lend else "false",
        # The webhook checks a quota's min against its parent's and its children's on every
        # update (quota_topology_check.go:265-303), so growing needs the parent applied first
        # and shrinking the children first: no static order (sync waves, Flux's dry-run of
        # the whole set) syncs both, as with Volcano's parent queues. This label skips that
        # one check (:266-268, and the guaranteed check, :404-407); the
        # `koordinator-webhook` output rule and `koordinator-min-over-capacity` check the
        # rendered tree against it instead, so every policy change applies in one pass.
        FORCE_UPDATE: "true",
        fleet.label("pool"): node.pool,
    }
    if node.team is not None:
        labels[fleet.label("team")] = node.team
    annotations = sync_wave(node.depth + 1)
    if node.namespaces:
        annotations[NAMESPACES] = _json(node.namespaces)
    obj = {
        "apiVersion": QUOTA_API,
        "kind": "ElasticQuota",
        "metadata": metadata(
            fleet, node.name, namespace=NAMESPACE, labels=labels, annotations=annotations
        ),
        "spec": {"max": _resources(node.max), "min": _resources(node.min)},
    }
    return Manifest(TARGET, obj, node.origin, depth=node.depth + 1)


def _priority_classes(policy: Policy, fleet: Fleet) -> list[Manifest]:
    found = []
    for mapped in koord_tiers(policy).values():
        obj: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": metadata(fleet, mapped.name, annotations=RECREATE_ON_IMMUTABLE),
            "value": mapped.value,
            "preemptionPolicy": mapped.tier.preemption_policy,
            "description": f"Tier {mapped.tier.name} for koord-scheduler ({mapped.band}).",
        }
        found.append(Manifest(TARGET, obj, mapped.tier.origin.span))
    return found


def elastic_quota_args(fleet: Fleet) -> dict[str, Any]:
    """The ElasticQuota plugin's arguments (pkg/scheduler/apis/config/v1/defaults.go:65-83
    and :206-230 give the defaults written out here). `enableMinQuotaScale: false`: the
    default scales every min down when their sum passes the tree's total, which would hide
    the Σmin > capacity the policy checks refuse; the chart's koord-scheduler-config sets only
    quotaGroupNamespace, so this block is merged into that ConfigMap's pluginConfig."""
    return {
        "name": "ElasticQuota",
        "args": {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "ElasticQuotaArgs",
            "quotaGroupNamespace": NAMESPACE,
            "enableCheckParentQuota": False,
            "enableRuntimeQuota": True,
            "enableMinQuotaScale": fleet.koordinator_min_quota_scale,
        },
    }


def helm_values(fleet: Fleet) -> dict[str, Any]:
    """The koordinator chart's values: `featureGates` reaches koord-manager (webhooks and the
    profile controller), `scheduler.featureGates` koord-scheduler. `multiQuotaTree: false`
    (a cluster that keeps one tree) leaves the gates out; `koordinator-multi-quota-tree`
    reports it."""
    gates = FEATURE_GATES if fleet.koordinator_multi_quota_tree else ""
    return {
        "installation": {"namespace": NAMESPACE},
        "featureGates": gates,
        "scheduler": {"featureGates": gates},
    }


def _origin(policy: Policy) -> Span:
    return policy.fleet.origin.span if policy.fleet else NOWHERE


def _unique(nodes: list[QuotaNode], tree_list: list[TreePlan]) -> None:
    """Quota names are global to the webhook's tree (quota_topology.go:70-72)."""
    seen: set[str] = set()
    for name in [*(t.root for t in tree_list), *(n.name for n in nodes)]:
        if name in seen or name in RESERVED_NAMES:
            raise CompileError(f"ElasticQuota name {name!r} is used twice or reserved")
        seen.add(name)


def compile_koordinator(policy: Policy) -> list[Manifest]:
    fleet = policy.fleet
    if fleet is None:
        return []
    tree_list = trees(policy)
    nodes = quota_nodes(policy)
    _unique(nodes, tree_list)
    found = [_profile(fleet, t) for t in tree_list]
    found += [_quota(fleet, n) for n in nodes]
    found += _priority_classes(policy, fleet)
    origin = _origin(policy)
    found.append(
        Manifest(TARGET, helm_values(fleet), origin, applied=False, filename=HELM_VALUES_FILE)
    )
    found.append(
        Manifest(TARGET, elastic_quota_args(fleet), origin, applied=False, filename=ARGS_FILE)
    )
    return found


COMPILERS[TARGET] = compile_koordinator
