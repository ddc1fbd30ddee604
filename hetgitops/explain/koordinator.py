"""Explain stage: koord-scheduler v1.8.0's ElasticQuota PreFilter replayed for a pod of
`schedulerName: koord-scheduler`, over the quota trees of plan/ (`koordinator_quota`): on the
empty fleet, or (live mode) against what the cluster's pods already ask and use
(`koord_state`).

Upstream (github.com/koordinator-sh/koordinator@v1.8.0):
- the pod's quota: its `quota.scheduling.koordinator.sh/name` label, else a quota binding its
  namespace (the `…/namespaces` annotation), else `koordinator-default-quota`; a name no quota has
  falls into the default quota too (pkg/scheduler/plugins/elasticquota/plugin_helper.go, plugin.go);
- the pod webhook refuses a pod whose quota is a parent (pkg/webhook/elasticquota/pod_check.go);
- PreFilter (plugin.go): the request masked to the quota's max keys, used + request <= the quota's
  runtime (EnableRuntimeQuota defaults to true, plugin_helper.go,
  pkg/scheduler/apis/config/v1/defaults.go), else `Insufficient quotas, ...`;
- runtime: every quota's, from what its pods ask, as koord-scheduler's GroupQuotaManager computes it
  (`koord_runtime`); the root's total is the pool's allocatable x resourceRatio
  (plan/koordinator_quota.root_min), or the root quota's `total-resource` in live mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from hetgitops.explain.answer import Explanation, Fix
from hetgitops.explain.koord_runtime import KoordUsage, runtimes
from hetgitops.explain.koord_runtime import units as _units
from hetgitops.explain.kube_view import pod_line
from hetgitops.explain.kueue_messages import fmt
from hetgitops.explain.namespace_quota import created
from hetgitops.explain.workload import KOORD_QUOTA as QUOTA_LABEL
from hetgitops.explain.workload import PodSet, Workload
from hetgitops.model.policy import Policy, Team, derived
from hetgitops.plan.koordinator_quota import QuotaNode, TreePlan, quota_nodes, root_min, trees

DEFAULT_QUOTA = "koordinator-default-quota"
# The pod's PodScheduled condition reason when a PreFilter plugin refuses it.
UNSCHEDULABLE = "Unschedulable"
# The pod webhook's refusal (admission denied: the pod is never created).
FORBIDDEN = "Forbidden"


@dataclass(frozen=True)
class _Verdict:
    """Koordinator's answer before kube-scheduler's view is added."""

    verdict: str  # admitted | pending | rejected
    reason: str
    message: str
    lines: tuple[str, ...] = ()
    policy: tuple[str, ...] = ()
    fixes: tuple[Fix, ...] = ()
    pool: str | None = None  # where it runs, when admitted
    trees: Mapping[str, str] = field(default_factory=dict)  # pod set -> its quota tree's pool


def insufficient_quotas(
    quota: str,
    runtime: Mapping[str, int],
    used: Mapping[str, int],
    request: Mapping[str, int],
    exceeded: list[str],
) -> str:
    """plugin.go:280-282, word for word. Go ranges over the runtime map to list the exceeded
    dimensions (k8s.io/apiserver pkg/quota/v1 LessThanOrEqual), so with two or more their
    order varies from run to run: here they are sorted."""
    return (
        f"Insufficient quotas, quotaName: {quota}, runtime: {_print(runtime)}, used: "
        f"{_print(used)}, pod's request: {_print(request)}, exceedDimensions: "
        f"[{' '.join(sorted(exceeded))}]"
    )


def parent_refused(quota: str, pod: str) -> str:
    """pod_check.go:57, word for word."""
    return f"pod can not be linked to a parentQuotaGroup,quota:{quota}, pod:{pod}"


def _print(values: Mapping[str, int]) -> str:
    """printResourceList (plugin_helper.go:303-316): `name:quantity` sorted, `<empty>` if none."""
    if not values:
        return "<empty>"
    return ",".join(sorted(f"{r}:{fmt(r, v)}" for r, v in values.items()))


def _nodes(policy: Policy) -> dict[str, QuotaNode]:
    return derived(policy, "explain_koord_nodes", lambda: {n.name: n for n in quota_nodes(policy)})


def _trees(policy: Policy) -> dict[str, TreePlan]:
    return {t.tree_id: t for t in trees(policy)}


def quota_of(policy: Policy, workload: Workload) -> tuple[str, str | None]:
    """The quota koord-scheduler counts the pod in, and why when it is not the label's."""
    nodes, roots = _nodes(policy), {t.root for t in trees(policy)}
    label = workload.queue
    if label:
        if label in nodes or label in roots:
            return label, None
        bound = namespace_quota(policy, workload.namespace)
        pinned = (
            f"koord-manager's pod webhook, missing the name, looks the quota up by namespace "
            f"and pins the pod to pool {bound.pool} all the same (pkg/webhook/pod/mutating/"
            "multi_quota_tree_affinity.go:47-52, pkg/webhook/elasticquota/quota_topology.go:"
            "304-316)"
            if bound is not None
            else "it is pinned to no pool"
        )
        return DEFAULT_QUOTA, (
            f"no ElasticQuota is named {label!r}: the pod falls silently into {DEFAULT_QUOTA} "
            f"(plugin.go:339-358): no team quota limits it and {pinned}"
        )
    node = namespace_quota(policy, workload.namespace)
    if node is not None:
        return node.name, (
            f"no {QUOTA_LABEL} label: namespace {workload.namespace} is bound to quota "
            f"{node.name} by its namespaces annotation (plugin_helper.go:100-111)"
        )
    return DEFAULT_QUOTA, (
        f"no {QUOTA_LABEL} label and no quota binds namespace {workload.namespace}: the pod "
        f"counts in {DEFAULT_QUOTA} (plugin_helper.go:113), limited by no team quota"
    )


def namespace_quota(policy: Policy, namespace: str | None) -> QuotaNode | None:
    """The quota whose namespaces annotation binds `namespace` (one at most: the webhook
    refuses a second, quota_topology.go:74-79)."""
    if namespace is None:
        return None
    return next((n for n in _nodes(policy).values() if namespace in n.namespaces), None)


def _pods(workload: Workload, keys: tuple[str, ...]) -> list[dict[str, int]]:
    """Each pod's request masked to the quota's max keys (plugin.go:277), in creation order."""
    return [
        {r: v for r, v in ps.requests.items() if r in keys and v}
        for ps in workload.pod_sets
        for _ in range(ps.count)
    ]


def explain_koordinator(
    policy: Policy, workload: Workload, team: Team | None, live: KoordUsage | None = None
) -> Explanation:
    """A pod of koord-scheduler: its ElasticQuota's PreFilter, then kube-scheduler's view of
    the nodes of the quota's tree: koord-manager's pod webhook pins a pod of a tree's quota to
    its profile's nodes (pkg/webhook/pod/mutating/multi_quota_tree_affinity.go:37-110)."""
    found = _created(policy, workload, team, live)
    every = list(policy.pools.values())
    lines = tuple(
        pod_line(policy, ps, [policy.pools[p]] if (p := found.trees.get(ps.name)) else every, None)
        for ps in workload.pod_sets
    )
    return Explanation(
        workload,
        team.name if team else None,
        found.verdict,
        found.reason,
        found.message,
        scheduler=lines if found.verdict != "rejected" else (),
        policy=found.policy,
        fixes=found.fixes,
        koordinator=found.lines,
        koord_pool=found.pool,
    )


def _created(
    policy: Policy, workload: Workload, team: Team | None, live: KoordUsage | None
) -> _Verdict:
    """The namespace's ResourceQuota first (pods it refuses are never created, so never
    counted by koord-scheduler), then koord-scheduler's view of the pods created."""
    used = live.namespaces.get(workload.namespace or "") if live is not None else None
    made = created(policy, workload, used)
    if made.pods == workload.pods:
        return _verdict(policy, workload, team, live)
    line = (
        f"the API server creates {made.pods} of {workload.pods} pod(s): ResourceQuota "
        f"{made.quota} of namespace {workload.namespace} refuses the next"
    )
    found = _verdict(policy, _first(workload, made.pods), team, live) if made.pods else None
    if found is not None and found.verdict != "admitted":
        return replace(found, lines=(*found.lines, line))
    return _Verdict(
        "rejected",
        FORBIDDEN,
        made.message,
        lines=(*(found.lines if found else ()), line),
        policy=found.policy if found else (),
        fixes=_team_fix(team, "the namespace's ResourceQuota is the team's ceiling"),
        pool=found.pool if found else None,
        trees=found.trees if found else {},
    )


def _first(workload: Workload, pods: int) -> Workload:
    """The workload's first `pods` pods, in creation order."""
    sets = []
    for ps in workload.pod_sets:
        take = min(ps.count, pods)
        pods -= take
        if take:
            sets.append(replace(ps, count=take))
    return replace(workload, pod_sets=tuple(sets))


def _verdict(
    policy: Policy, workload: Workload, team: Team | None, live: KoordUsage | None
) -> _Verdict:
    """Each quota the pods name judged apart; the job runs when every one lets its pods in."""
    groups: dict[str | None, list[PodSet]] = {}
    for ps in workload.pod_sets:
        groups.setdefault(ps.quota, []).append(ps)
    if len(groups) == 1:
        return _one(policy, replace(workload, queue=next(iter(groups))), team, live)
    found = [
        _one(policy, replace(workload, queue=quota, pod_sets=tuple(sets)), team, live)
        for quota, sets in groups.items()
    ]
    worst = next((f for f in found if f.verdict == "rejected"), None) or next(
        (f for f in found if f.verdict == "pending"), found[0]
    )
    return replace(
        worst,
        lines=tuple(line for f in found for line in f.lines),
        policy=tuple(dict.fromkeys(line for f in found for line in f.policy)),
        fixes=tuple(fix for f in found for fix in f.fixes),
        trees={k: v for f in found for k, v in f.trees.items()},
    )


def _one(
    policy: Policy, workload: Workload, team: Team | None, live: KoordUsage | None
) -> _Verdict:
    quota, why = quota_of(policy, workload)
    notes = (why,) if why else ()
    pod = workload.name if workload.kind == "Pod" else f"{workload.name}-<pod>"
    node = _nodes(policy).get(quota)
    if quota != DEFAULT_QUOTA and (node is None or node.is_parent):
        message = parent_refused(quota, pod)
        fix = _team_fix(team, "label the pods with the team's leaf quota, not a parent")
        return _Verdict(
            "rejected",
            FORBIDDEN,
            message,
            lines=(f"quota {quota} is a parent: the pod webhook refuses the pod",),
            policy=notes,
            fixes=fix,
        )
    if node is None:
        fixes = _team_fix(team, f"label the pods {QUOTA_LABEL}: <team>-<pool>")
        lines = (f"quota {DEFAULT_QUOTA}: outside every pool's tree, the default quota's max",)
        # a misspelled name in a bound namespace: the webhook pins the pods to that tree
        bound = namespace_quota(policy, workload.namespace) if workload.queue else None
        pinned = {ps.name: bound.pool for ps in workload.pod_sets} if bound else {}
        return _Verdict(
            "admitted",
            "",
            "",
            lines=lines,
            policy=notes,
            fixes=fixes,
            pool=bound.pool if bound else None,
            trees=pinned,
        )
    return _prefilter(policy, workload, node, notes, live)


def _team_fix(team: Team | None, what: str) -> tuple[Fix, ...]:
    return (Fix(team.origin.at("spec", "quotas"), what),) if team is not None else ()


def _prefilter(
    policy: Policy,
    workload: Workload,
    node: QuotaNode,
    notes: tuple[str, ...],
    live: KoordUsage | None,
) -> _Verdict:
    tree = _trees(policy)[node.tree_id]
    keys = tuple(node.max)
    pods = _pods(workload, keys)
    asked = {k: sum(p.get(k, 0) for p in pods) for k in keys}
    requests = _requests(live, node.name, asked)
    total = live.totals.get(tree.root) if live is not None else None
    limit = runtimes(policy, tree, requests, total)[node.name]
    lines = [
        f"quota {node.name} (tree of pool {node.pool}): max "
        + ", ".join(f"{fmt(k, _units(k, node.max[k]))} {k}" for k in keys)
        + f"; the job's {len(pods)} pod(s) ask "
        + ", ".join(f"{fmt(k, asked[k])} {k}" for k in keys if asked[k])
        + "; runtime "
        + ", ".join(f"{fmt(k, limit[k])} {k}" for k in keys)
    ]
    held = live.charged.get(node.name) if live is not None else None
    used: dict[str, int] = {k: v for k, v in (held.used if held else {}).items() if k in keys}
    if held is not None:
        lines.append(_live_line(node.name, held.pods, held.request, used))
    for number, request in enumerate(pods):
        # quotav1.LessThanOrEqual(used + request, runtime) ranges over the runtime's keys and
        # compares those the sum holds: a dimension the quota already overuses refuses a pod
        # that does not ask it (plugin.go:278-279)
        over = [
            k
            for k in limit
            if (k in request or k in used) and used.get(k, 0) + request.get(k, 0) > limit[k]
        ]
        if over:
            message = insufficient_quotas(node.name, limit, used, request, over)
            fit = f"pods 1-{number} fit" if number else "no pod fits"
            lines.append(f"{fit}; pod {number + 1} of {len(pods)} is refused")
            return _Verdict(
                "pending",
                UNSCHEDULABLE,
                message,
                lines=(*lines, _wrapped()),
                policy=(*notes, *_why(policy, node, tree, asked, limit, over)),
                fixes=_fixes(node, asked, over),
                trees={ps.name: node.pool for ps in workload.pod_sets},
            )
        for k, v in request.items():
            used[k] = used.get(k, 0) + v
    return _Verdict(
        "admitted",
        "",
        "",
        lines=tuple(lines),
        policy=notes,
        pool=node.pool,
        trees={ps.name: node.pool for ps in workload.pod_sets},
    )


def _live_line(quota: str, pods: int, request: Mapping[str, int], used: Mapping[str, int]) -> str:
    def amounts(values: Mapping[str, int]) -> str:
        return ", ".join(f"{fmt(k, v)} {k}" for k, v in sorted(values.items()) if v) or "nothing"

    return (
        f"live: {pods} pod(s) of quota {quota} ask {amounts(request)}; "
        f"bound ones use {amounts(used)}"
    )


def _requests(
    live: KoordUsage | None, quota: str, asked: Mapping[str, int]
) -> dict[str, dict[str, int]]:
    """What every quota's pods ask: the cluster's (live mode; none on the empty fleet) with
    the job's pods added to their quota, as OnPodAdd counts them on creation."""
    found = {name: dict(c.request) for name, c in (live.charged if live else {}).items()}
    mine = found.setdefault(quota, {})
    for key, value in asked.items():
        mine[key] = mine.get(key, 0) + value
    return found


def _wrapped() -> str:
    return (
        "the pod's PodScheduled condition says `0/<nodes> nodes are available: <this message>.` "
        "(kube-scheduler's FitError, pkg/scheduler/framework/types.go:807-814)"
    )


def _why(
    policy: Policy,
    node: QuotaNode,
    tree: TreePlan,
    asked: Mapping[str, int],
    limit: Mapping[str, int],
    over: list[str],
) -> list[str]:
    lines = []
    for key in sorted(over):
        most = _units(key, node.max[key])
        if asked[key] > most:
            lines.append(
                f"the pods ask {fmt(key, asked[key])} {key}, quota {node.name}'s max is "
                f"{fmt(key, most)}: raise team {node.team}'s quota in pool {node.pool} at "
                f"{node.origin} by {fmt(key, asked[key] - most)}"
            )
        else:
            lines.append(
                f"quota {node.name}'s max allows {fmt(key, most)} {key}, but its runtime is "
                f"{fmt(key, limit[key])}: the tree of pool {node.pool} holds "
                f"{root_min(policy, tree).get(key, 0)} {key} (allocatable x resourceRatio "
                f"{tree.ratio}) less the min its non-lending siblings keep"
            )
    return lines


def _fixes(node: QuotaNode, asked: Mapping[str, int], over: list[str]) -> tuple[Fix, ...]:
    found = []
    for key in sorted(over):
        short = asked[key] - _units(key, node.max[key])
        if short > 0:
            found.append(Fix(node.origin, f"raise by {fmt(key, short)}", key, short))
    return tuple(found)
