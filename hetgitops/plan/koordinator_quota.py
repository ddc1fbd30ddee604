"""Plan stage: Koordinator's quota trees, one per pool, in numbers, computed once per Policy.

Koordinator (v1.8.0) has no flavors: a card type is a quota *tree*, made by an `ElasticQuotaProfile`
that selects the pool's nodes and whose controller writes the tree's root `ElasticQuota` (min = the
nodes' allocatable x resourceRatio). Under that root this plan puts the Fleet's cohort tree as
parent quotas (`is-parent: "true"`) and one leaf per (team, pool).

The leaf numbers are the Volcano leaf Queue's (`volcano_quota.pool_plans`), which mean what the
team's Kueue ClusterQueue means: min = nominal quota, max = the most Kueue can ever admit. A
parent's min and max are the sums of its children's: Kueue's cohorts hold no quota of their own, and
the webhook requires the children's min to fit in the parent's.

Every quota of a tree lists every resource key of the tree, 0 where unused: the webhook requires a
child's max keys to equal its parent's, so adding a key later is refused whichever object is applied
first (koordinator issue #1747).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from hetgitops.diagnostics import Span
from hetgitops.model.policy import Policy, Pool, Team, derived
from hetgitops.plan import capacity
from hetgitops.plan.node_labels import domain
from hetgitops.plan.quota_plan import HOST_RESOURCES, lendable, team_plan
from hetgitops.plan.volcano_quota import QueuePlan, pool_plans

# ElasticQuotaArgs.quotaGroupNamespace's default (pkg/scheduler/apis/config/v1/defaults.go:75):
# the scheduler and the profile controller look for the trees' quotas there.
NAMESPACE = "koordinator-system"
# The profile's resourceRatio: the share of the pool's allocatable the tree's root holds.
DEFAULT_RATIO = "1"
# apis/extension/elastic_quota.go:30-32: the webhook refuses to change the first two and to
# delete any of them (quota_topology.go:159-166; extension.IsForbiddenModify).
RESERVED_NAMES = ("koordinator-root-quota", "koordinator-system-quota", "koordinator-default-quota")

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3


def tree_id(namespace: str, name: str) -> str:
    """The `quota.scheduling.koordinator.sh/tree-id` the profile controller writes on a profile
    that has none: FNV-64a of "<namespace>/<name>" in decimal
    (pkg/quota-controller/profile/profile_controller.go:97-104 and `hash`, :267-271). Writing
    the same value up front keeps the controller from updating the profile after the first sync."""
    value = _FNV_OFFSET
    for byte in f"{namespace}/{name}".encode():
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return str(value)


@dataclass(frozen=True)
class TreePlan:
    """One pool's tree: its ElasticQuotaProfile and the root quota the controller writes."""

    pool: Pool
    profile: str
    root: str
    tree_id: str
    keys: tuple[str, ...]  # cpu, memory, then every accelerator resource of the pool
    node_selector: Mapping[str, str]
    ratio: str
    origin: Span


@dataclass(frozen=True)
class QuotaNode:
    """One ElasticQuota hetgitops writes (a cohort parent or a team leaf), in base units."""

    name: str
    pool: str
    tree_id: str
    parent: str
    is_parent: bool
    min: Mapping[str, Decimal]
    max: Mapping[str, Decimal]
    lend: bool
    namespaces: tuple[str, ...]
    team: str | None
    cohort: str | None
    depth: int
    origin: Span


def profile_name(pool: str) -> str:
    return pool


def root_quota_name(pool: str) -> str:
    """The tree's root ElasticQuota (the profile's `spec.quotaName`), written by the controller."""
    return f"pool-{pool}"


def leaf_quota_name(team: str, pool: str) -> str:
    """The team's quota in a pool; job templates name it in the pod label
    `quota.scheduling.koordinator.sh/name`."""
    return f"{team}-{pool}"


def cohort_quota_name(cohort: str, pool: str) -> str:
    return f"cohort-{cohort}-{pool}"


def tree_keys(policy: Policy, pool: Pool) -> tuple[str, ...]:
    """cpu, memory and every accelerator resource the pool offers (its `pool_resources`)."""
    card = policy.card_type_of(pool)
    offered = capacity.pool_resources(pool, card, policy.fleet) if card is not None else {}
    claimed = {r for t in policy.teams.values() for p in team_plan(policy, t) if p.pool is pool
               for r in p.nominal}  # fmt: skip
    return (*HOST_RESOURCES, *sorted({*offered, *claimed} - set(HOST_RESOURCES)))


def trees(policy: Policy) -> list[TreePlan]:
    """One tree per pool whose card type resolves, in pool order."""
    return list(derived(policy, "koordinator_trees", lambda: _trees(policy)))


def _trees(policy: Policy) -> tuple[TreePlan, ...]:
    found = []
    selector_key = f"{domain(policy)}/pool"
    for pool in policy.pools.values():
        if policy.card_type_of(pool) is None:
            continue
        name = profile_name(pool.name)
        found.append(
            TreePlan(
                pool=pool,
                profile=name,
                root=root_quota_name(pool.name),
                tree_id=tree_id(NAMESPACE, name),
                keys=tree_keys(policy, pool),
                node_selector={selector_key: pool.name},
                ratio=policy.fleet.koordinator_ratio if policy.fleet else DEFAULT_RATIO,
                origin=pool.origin.span,
            )
        )
    return tuple(found)


def root_min(policy: Policy, tree: TreePlan) -> dict[str, int]:
    """What the controller writes as the root's min for each accelerator key: the nodes'
    allocatable (what the device plugin advertises) times the ratio, truncated per resource
    as `int64(float64(value) * ratio)` does (profile_controller.go:251-265, :273-290); a
    ratio outside (0, 1] counts as 1. cpu and memory are left out: the policy does not say
    what the nodes' allocatable cpu and memory are."""
    card = policy.card_type_of(tree.pool)
    if card is None:
        return {}
    offered = capacity.pool_resources(tree.pool, card, policy.fleet, replicas="advertised")
    ratio = float(tree.ratio)
    ratio = ratio if 0 < ratio <= 1 else 1.0
    return {key: int(float(offered.get(key, 0)) * ratio) for key in tree.keys[2:]}


def quota_nodes(policy: Policy) -> list[QuotaNode]:
    """Every cohort parent and team leaf of every tree, parents before their children."""
    return list(derived(policy, "koordinator_quota_nodes", lambda: _nodes(policy)))


def _filled(values: Mapping[str, Decimal], keys: tuple[str, ...]) -> dict[str, Decimal]:
    return {k: values.get(k, Decimal(0)) for k in keys}


def _lends(policy: Policy, team: Team, pool: str) -> bool:
    """`allow-lent-resource`: Koordinator lends a quota's unused min whole or not at all
    (apis/extension/elastic_quota.go IsAllowLentResource); a team lends when Kueue would
    let it lend anything of its accelerators in the pool."""
    if team.cohort is None:
        return False
    for plan in team_plan(policy, team):
        if plan.pool.name == pool:
            return not plan.pool.isolated and any(lendable(plan, r) > 0 for r in plan.nominal)
    return False


def _cohort_chain(policy: Policy, cohort: str) -> list[str]:
    """The cohort and its ancestors, nearest first (a loop stops where it closes)."""
    parents = {c.name: c.parent for c in policy.fleet.cohorts} if policy.fleet else {}
    chain = [cohort]
    while (parent := parents.get(chain[-1])) and parent not in chain:
        chain.append(parent)
    return chain


def _bound_namespaces(policy: Policy, team: Team, pool: str) -> tuple[str, ...]:
    """A namespace binds to one quota only (quota_topology.go:74-79), so the team's namespaces
    go on its first pool's leaf: the quota of its pods without a quota label. Sorted: the
    annotation is a set to Koordinator, and import writes a team's namespaces sorted, so the
    written policy renders the annotation the cluster holds whatever order the policy lists."""
    plans = team_plan(policy, team)
    return tuple(sorted(team.namespaces)) if plans and plans[0].pool.name == pool else ()


def _leaf(policy: Policy, tree: TreePlan, plan: QueuePlan) -> QuotaNode:
    team = plan.team
    parent = cohort_quota_name(team.cohort, plan.pool) if team.cohort else tree.root
    depth = len(_cohort_chain(policy, team.cohort)) if team.cohort else 0
    return QuotaNode(
        name=leaf_quota_name(team.name, plan.pool),
        pool=plan.pool,
        tree_id=tree.tree_id,
        parent=parent,
        is_parent=False,
        min=_filled(plan.deserved, tree.keys),
        max=_filled(plan.capability, tree.keys),
        lend=_lends(policy, team, plan.pool),
        namespaces=_bound_namespaces(policy, team, plan.pool),
        team=team.name,
        cohort=None,
        depth=depth,
        origin=plan.origin,
    )


def _parents(policy: Policy, tree: TreePlan, leaves: list[QuotaNode]) -> list[QuotaNode]:
    """The cohorts above the tree's leaves; min and max the sums over their leaves."""
    sums: dict[str, tuple[dict[str, Decimal], dict[str, Decimal], int]] = {}
    cohorts = {c.name: c for c in policy.fleet.cohorts} if policy.fleet else {}
    for leaf in leaves:
        team = policy.teams[leaf.team or ""]
        chain = _cohort_chain(policy, team.cohort) if team.cohort else []
        for depth, cohort in enumerate(reversed(chain)):
            low, high, _ = sums.setdefault(cohort, ({}, {}, depth))
            for key in tree.keys:
                low[key] = low.get(key, Decimal(0)) + leaf.min[key]
                high[key] = high.get(key, Decimal(0)) + leaf.max[key]
    nodes = []
    for cohort, (low, high, depth) in sums.items():
        parent = next(iter(_cohort_chain(policy, cohort)[1:2]), None)
        spec = cohorts.get(cohort)
        nodes.append(
            QuotaNode(
                name=cohort_quota_name(cohort, tree.pool.name),
                pool=tree.pool.name,
                tree_id=tree.tree_id,
                parent=cohort_quota_name(parent, tree.pool.name) if parent else tree.root,
                is_parent=True,
                min=low,
                max=high,
                lend=True,
                namespaces=(),
                team=None,
                cohort=cohort,
                depth=depth,
                origin=spec.origin.span if spec is not None else tree.origin,
            )
        )
    return sorted(nodes, key=lambda n: (n.depth, n.name))


def _nodes(policy: Policy) -> tuple[QuotaNode, ...]:
    by_pool = {tree.pool.name: tree for tree in trees(policy)}
    found: list[QuotaNode] = []
    for tree in by_pool.values():
        leaves = [_leaf(policy, tree, p) for p in pool_plans(policy) if p.pool == tree.pool.name]
        found += _parents(policy, tree, leaves)
        found += sorted(leaves, key=lambda n: n.name)
    return tuple(found)
