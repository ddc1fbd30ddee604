"""Explain stage: the runtime koord-scheduler v1.8.0 gives every ElasticQuota of one tree, from what
each quota's pods ask, replayed as its GroupQuotaManager computes it
(github.com/koordinator-sh/koordinator@v1.8.0, pkg/scheduler/plugins/elasticquota/core/).

- A pod's request counts in its quota's request as soon as the pod exists, pending or bound
  (group_quota_manager.go, OnPodAdd); its used once it is bound.
- Going up the tree a quota passes its children's summed request, raised to its min when it does not
  lend (`allow-lent-resource: "false"`; :1392-1397 from the moment its min is set) and capped at its
  max (quota_info.go, getLimitRequestNoLock).
- The tree's total is the root quota's `total-resource` annotation (quota_handler.go): the profile's
  nodes' allocatable x resourceRatio (pkg/quota-controller/profile/ profile_controller.go). The
  profile's root quota lends and its min is that total, so its runtime is min(request, total).
- Each parent shares its runtime among its children per resource (runtime_quota_calculator.go,
  redistribution): a child asking at most its min gets what it asks (its min if it does not lend);
  one asking more gets its min, and what is left is handed out in proportion to the children's
  shared weight (the max, extension.GetSharedWeight), rounded half up, again and again while some
  child still asks more and something came back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from hetgitops.model.policy import Policy, derived
from hetgitops.plan.koordinator_quota import QuotaNode, TreePlan, quota_nodes, root_min


@dataclass(frozen=True)
class Charged:
    """What koord-scheduler counts in one quota: `request` over every pod of it not being
    deleted, `used` over those bound to a node (explain's integers, cpu in milli-units)."""

    request: Mapping[str, int] = field(default_factory=dict)
    used: Mapping[str, int] = field(default_factory=dict)
    pods: int = 0


@dataclass(frozen=True)
class KoordUsage:
    """The live cluster as koord-scheduler counts it: quota name -> its pods, and each tree's
    total (root quota name -> its `total-resource`)."""

    charged: Mapping[str, Charged] = field(default_factory=dict)
    totals: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # namespace -> what its pods that have not finished request (a ResourceQuota's used)
    namespaces: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def units(resource: str, value: Decimal) -> int:
    """A quota value in explain's integers (cpu in milli-units, as the pods' requests;
    runtime_quota_calculator.go getQuantityValue)."""
    return int(value * 1000) if resource == "cpu" else int(value)


@dataclass(frozen=True)
class _Share:
    name: str
    least: int  # min
    asked: int  # the request passed up: limited by max
    lend: bool
    weight: int  # shared weight: the max


def _limited(node: QuotaNode, key: str, child_request: int) -> int:
    asked = child_request if node.lend else max(child_request, units(key, node.min[key]))
    return min(asked, units(key, node.max[key]))


def _redistribute(total: int | None, shares: list[_Share]) -> dict[str, int]:
    """runtime_quota_calculator.go:117-175 for one resource; `total` None: unknown (the
    policy does not say what the nodes' cpu and memory are), every request is met."""
    runtime: dict[str, int] = {}
    wanting: list[_Share] = []
    left = total or 0
    for share in shares:
        if share.asked > share.least:
            runtime[share.name] = share.least
            wanting.append(share)
        else:
            runtime[share.name] = share.asked if share.lend else share.least
        left -= runtime[share.name]
    if total is None:
        runtime.update({s.name: s.asked for s in wanting})
        return runtime
    weights = sum(s.weight for s in wanting)
    while left > 0 and wanting and weights > 0:
        back, still, still_weights = 0, [], 0
        for share in wanting:
            # Go: int64(float64(w)*float64(totalRes)/float64(totalSharedWeight) + 0.5)
            runtime[share.name] += int(float(share.weight) * float(left) / float(weights) + 0.5)
            if runtime[share.name] < share.asked:
                still.append(share)
                still_weights += share.weight
            else:
                back += runtime[share.name] - share.asked
                runtime[share.name] = share.asked
        left, wanting, weights = back, still, still_weights
    return runtime


def _tree(policy: Policy, tree_id: str) -> tuple[list[QuotaNode], dict[str, list[QuotaNode]]]:
    """The tree's quotas and each one's children, computed once per policy."""

    def compute() -> tuple[list[QuotaNode], dict[str, list[QuotaNode]]]:
        nodes = [n for n in quota_nodes(policy) if n.tree_id == tree_id]
        children: dict[str, list[QuotaNode]] = {}
        for node in nodes:
            children.setdefault(node.parent, []).append(node)
        return nodes, children

    return derived(policy, ("explain_koord_tree", tree_id), compute)


def runtimes(
    policy: Policy,
    tree: TreePlan,
    requests: Mapping[str, Mapping[str, int]],
    total: Mapping[str, int] | None = None,
) -> dict[str, dict[str, int]]:
    """Quota name -> its runtime per resource key, for every quota of `tree`, when the
    leaves' pods ask `requests` (quota -> resource -> amount). `total`: the tree's total as
    the cluster counts it (the root quota's `total-resource`); by default the policy's
    accelerators (plan's `root_min`) with cpu and memory unknown."""
    nodes, children = _tree(policy, tree.tree_id)
    whole = dict(root_min(policy, tree)) if total is None else dict(total)
    found: dict[str, dict[str, int]] = {n.name: {} for n in nodes}
    for key in tree.keys:
        asked: dict[str, int] = {}

        def limited(node: QuotaNode, key: str = key, asked: dict[str, int] = asked) -> int:
            below = children.get(node.name, [])
            own = sum(limited(c) for c in below) if node.is_parent else 0
            own += requests.get(node.name, {}).get(key, 0)
            asked[node.name] = _limited(node, key, own)
            return asked[node.name]

        top = sum(limited(c) for c in children.get(tree.root, []))
        # a key the cluster's total lacks is 0 there (ResourceList.Name); the policy's total
        # knows no cpu or memory
        known = whole.get(key, 0) if total is not None else whole.get(key)
        parents = [(tree.root, top if known is None else min(top, known))]
        while parents:
            name, have = parents.pop()
            below = children.get(name, [])
            shares = [
                _Share(
                    c.name,
                    units(key, c.min[key]),
                    asked[c.name],
                    c.lend,
                    units(key, c.max[key]),
                )
                for c in below
            ]
            given = _redistribute(None if known is None else have, shares)
            for child in below:
                found[child.name][key] = given[child.name]
                parents.append((child.name, given[child.name]))
    return found
