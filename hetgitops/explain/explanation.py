"""One workload explained: Kueue's verdict (`kueue.Assigner`), Volcano's and kube-scheduler's
view, and the policy lines to change, as plain data the formats lay out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hetgitops.compilers.kueue_queues import local_queue_name
from hetgitops.explain import kueue
from hetgitops.explain import kueue_messages as say
from hetgitops.explain.advice import Advice, advise
from hetgitops.explain.answer import Explanation, Fix
from hetgitops.explain.fit import UNSCHEDULABLE, unschedulable
from hetgitops.explain.koord_runtime import KoordUsage
from hetgitops.explain.koordinator import explain_koordinator
from hetgitops.explain.kube_view import kube_scheduler
from hetgitops.explain.namespace_quota import Created, created
from hetgitops.explain.namespace_selection import (
    MISCONFIGURED,
    LiveLabels,
    selected_lines,
    unselected,
)
from hetgitops.explain.nodes import NodeView, admits, pool_nodes, slots
from hetgitops.explain.quotas import Quotas, Usage, flavors
from hetgitops.explain.workload import (
    DEFAULT,
    KOORDINATOR,
    SYSTEM_PRIORITY_CLASSES,
    VOLCANO,
    Workload,
)
from hetgitops.model.policy import Policy, Team, derived
from hetgitops.plan import dra
from hetgitops.plan.dra_claims import rendered_claim_templates
from hetgitops.plan.quota_plan import HOST_RESOURCES, team_plan
from hetgitops.plan.volcano_quota import QueuePlan, leaf_queue_name, queue_plans

NOT_MANAGED = "NotManagedByKueue"


def team_of(policy: Policy, workload: Workload) -> Team | None:
    if workload.team is not None:
        return policy.teams.get(workload.team)
    for team in policy.teams.values():
        if workload.namespace in team.namespaces:
            return team
    return None


def charged(policy: Policy, workload: Workload) -> Workload:
    """The workload with each pod's DRA claims added to its requests as Kueue charges them:
    the mapped resource x the devices the policy's template asks for (plan/dra.py). A template
    the policy does not render is left out: its class and count are unknown here."""
    if not any(ps.claims for ps in workload.pod_sets):
        return workload
    charges = dra.claim_charges(policy)
    sets = []
    for ps in workload.pod_sets:
        requests = dict(ps.requests)
        for name in ps.claims:
            if name in charges:
                resource, count = charges[name]
                requests[resource] = requests.get(resource, 0) + count
        # charged once: the claims are now requests
        sets.append(replace(ps, requests=dict(sorted(requests.items())), claims=()))
    return replace(workload, pod_sets=tuple(sets))


def unrendered_claims(policy: Policy, workload: Workload) -> tuple[str, ...]:
    """The claim templates a workload names that the policy does not render (in the workload's
    namespace, when it has one: a pod's template is read from its own namespace), sorted."""
    if not any(ps.claims for ps in workload.pod_sets):
        return ()
    if workload.namespace is None:
        charges = dra.claim_charges(policy)
        return tuple(sorted({c for ps in workload.pod_sets for c in ps.claims if c not in charges}))
    rendered = rendered_claim_templates(policy)
    return tuple(
        sorted(
            {
                c
                for ps in workload.pod_sets
                for c in ps.claims
                if (workload.namespace, c) not in rendered
            }
        )
    )


FORBIDDEN = "Forbidden"
_QUOTA_REFUSES = (
    "Kueue admits the job, but the namespace's ResourceQuota {quota} (spec.namespaceQuota) "
    "lets the API server create only {pods} of its pods: the rest are refused while the "
    "workload holds its queue quota"
)


def _quota_refuses(policy: Policy, workload: Workload, team: Team) -> Created | None:
    """The namespace quota the render writes (plan.namespace_quota) applied to the pods the
    admitted job creates: None when every pod is created."""
    if workload.namespace not in team.namespaces:
        return None
    made = created(policy, workload)
    total = sum(ps.count for ps in workload.pod_sets)
    return made if made.pods < total else None


def _direct_claims(workload: Workload, team: Team) -> Explanation:
    """Pods that name a ResourceClaim: Kueue's DRA integration (on by default since v0.18)
    refuses the Workload before it reads any template, reason Inadmissible
    (docs/upstream.md)."""
    named = ", ".join(sorted({c for ps in workload.pod_sets for c in ps.direct_claims}))
    hint = (
        f"the pods name ResourceClaim {named}: claim through a ResourceClaimTemplate "
        f"(resourceClaimTemplateName) hetgitops renders for team {team.name} (`hetgitops jobs`)"
    )
    message = say.RESOURCE_CLAIMS_UNSUPPORTED
    return Explanation(workload, team.name, "pending", say.INADMISSIBLE, message, policy=(hint,))


def _unrendered(
    policy: Policy, workload: Workload, team: Team, names: tuple[str, ...]
) -> Explanation:
    """A claim template the policy does not render: Kueue charges a claim only through a class
    its deviceClassMappings name, and those are the policy's classes (plan/dra.py mappings);
    any other class leaves the Workload inadmissible before any flavor is tried ("DeviceClass
    <class> is not mapped in DRA configuration for podset <name>", Kueue v0.19.2
    pkg/dra/claims.go:211-219, reason Inadmissible: workload_controller.go:475-484). Which
    class a template claims is in the cluster, not in the policy: admitted only if it is one
    of the policy's classes."""
    mapped = sorted(name for _, classes in dra.mappings(policy) for name in classes)
    message = say.claim_template_unrendered(names, workload.namespace)
    hint = (
        f"claim one of the ResourceClaimTemplates hetgitops renders for team {team.name} "
        f"(`hetgitops jobs`); Kueue charges only the mapped classes: "
        f"{', '.join(mapped) or 'none (the policy has no DRA claims pool)'}"
    )
    return Explanation(workload, team.name, "pending", say.INADMISSIBLE, message, policy=(hint,))


def explain(
    policy: Policy,
    workload: Workload,
    *,
    usage: Usage | None = None,
    node_free: Mapping[str, Mapping[str, int]] | None = None,
    koord: KoordUsage | None = None,
    namespaces: LiveLabels | None = None,
    with_advice: bool = True,
) -> Explanation:
    """`namespaces`: the live Namespaces' labels (live mode), which Kueue matches the
    ClusterQueue's namespaceSelector against; None judges the labels the policy renders."""
    asked = workload
    unknown = unrendered_claims(policy, workload)
    workload = charged(policy, workload)
    team = team_of(policy, workload)
    by_kueue = workload.scheduler not in (VOLCANO, KOORDINATOR, DEFAULT)
    if by_kueue and team is not None and any(ps.direct_claims for ps in workload.pod_sets):
        return _direct_claims(workload, team)
    if unknown and team is not None and by_kueue:
        return _unrendered(policy, workload, team, unknown)
    if workload.scheduler == VOLCANO:
        return _volcano(policy, workload, team)
    if workload.scheduler == KOORDINATOR:
        return explain_koordinator(policy, workload, team, koord)
    if workload.scheduler == DEFAULT:
        lines = kube_scheduler(policy, workload, None)
        note = (
            "no kueue.x-k8s.io/queue-name label: Kueue leaves the job alone "
            "(manageJobsWithoutQueueName is false by default) and kube-scheduler places it "
            "outside every quota"
        )
        return Explanation(
            workload,
            team.name if team else None,
            "unmanaged",
            NOT_MANAGED,
            note,
            scheduler=lines,
        )
    fleet = policy.fleet
    if team is None or fleet is None:
        message = say.local_queue_missing(workload.queue)
        hint = (
            f"namespace {workload.namespace} belongs to no team: add it to a Team's spec.namespaces"
        )
        return Explanation(workload, None, "pending", MISCONFIGURED, message, policy=(hint,))
    expected = local_queue_name(fleet, team)
    if workload.queue is not None and workload.queue != expected:
        message = say.local_queue_missing(workload.queue)
        hint = f"team {team.name}'s LocalQueue is {expected!r}; label the job with it"
        return Explanation(
            workload,
            team.name,
            "pending",
            MISCONFIGURED,
            message,
            policy=(hint,),
            fixes=(Fix(team.origin.at("spec", "namespaces"), hint),),
        )
    refused_here = unselected(policy, workload, team, namespaces)
    if refused_here is not None:
        return refused_here
    policy_lines = list(selected_lines(policy, workload, team, namespaces))
    fixes: list[Fix] = []
    if workload.tier_from_pod and workload.tier in SYSTEM_PRIORITY_CLASSES:
        # A built-in PriorityClass: Kueue reads its value (priority.go:91-103) and admits.
        value = SYSTEM_PRIORITY_CLASSES[workload.tier]
        policy_lines.append(
            f"priorityClassName {workload.tier} is Kubernetes' built-in PriorityClass (value "
            f"{value}): Kueue admits with that priority, above every tier of the policy"
        )
    elif workload.tier is not None:
        if workload.tier not in policy.tiers:
            return Explanation(
                workload,
                team.name,
                "rejected",
                "WorkloadPriorityClassNotFound",
                f'workloadPriorityClass "{workload.tier}" not found',
                policy=(f"no PriorityTier {workload.tier}: one of {', '.join(policy.tiers)}",),
            )
        if workload.tier not in team.tiers:
            policy_lines.append(
                f"tier {workload.tier} is not among team {team.name}'s tiers "
                f"({', '.join(team.tiers)}): Kueue does not check this, hetgitops' policy does"
            )
            fixes.append(Fix(team.origin.at("spec", "tiers"), f"add {workload.tier}"))
    quotas = Quotas(policy, usage)
    verdict = kueue.Assigner(policy, team, quotas, node_free).assign(workload.pod_sets)
    policy_lines.extend(_policy_terms(policy, team, verdict))
    # A placement failure that sent Kueue round again is the cause; the Workload's condition
    # shows it or the resumed cycle's verdict, alternating as the Workload is requeued (seen on
    # the real Kueue v0.19.2 in the sim test), so the headline names the cause.
    shown = verdict.cycles[0] if verdict.cycles and not verdict.admitted else verdict
    state, reason, message = (
        "admitted" if verdict.admitted else "pending",
        shown.reason,
        shown.message,
    )
    # Admitted on quota alone (no Topology): will a pod fit a node at all?
    stuck = unschedulable(policy, verdict, {f.name: f for f in flavors(policy, team)})
    if stuck is not None:
        state, reason, message = "unschedulable", UNSCHEDULABLE, stuck
    refused = _quota_refuses(policy, workload, team) if state == "admitted" else None
    if refused is not None:
        state, reason, message = "rejected", FORBIDDEN, refused.message
        policy_lines.append(_QUOTA_REFUSES.format(quota=refused.quota, pods=refused.pods))
        fixes.append(Fix(team.origin.at("spec", "namespaceQuota"), "raise the cap to the reach"))
    found: Advice | None = None
    if with_advice and state not in ("admitted", "rejected"):

        def judge(edited: Policy) -> bool:
            again = explain(
                edited,
                asked,
                usage=usage,
                node_free=node_free,
                namespaces=namespaces,
                with_advice=False,
            )
            return again.verdict == "admitted"

        found = advise(policy, team, asked, judge)
        policy_lines.extend(found.lines())
        fixes.extend(Fix(e.span, e.change()) for e in found.edits)
    return Explanation(
        workload,
        team.name,
        state,
        reason,
        message,
        kueue=verdict,
        volcano=_volcano_view(policy, team, workload, verdict),
        scheduler=kube_scheduler(policy, workload, verdict),
        policy=tuple(policy_lines),
        fixes=tuple(fixes),
        advice=found,
    )


def _policy_terms(policy: Policy, team: Team, verdict: kueue.KueueVerdict) -> list[str]:
    """What the chosen flavors borrow, and from where (the edits that admit a pending job are
    `advice.py`'s)."""
    lines: list[str] = []
    plans = {p.pool.name: p for p in team_plan(policy, team)}
    for result in verdict.pod_sets:
        if result.flavor is None:
            continue
        for resource, amount in sorted(result.flavor.borrowing.items()):
            if resource in HOST_RESOURCES:
                continue
            lines.append(
                f"borrows {amount} {resource} in pool {result.flavor.pool} from cohort "
                f"{team.cohort} (quota at {plans[result.flavor.pool].origin})"
            )
    return lines


def _volcano_queue(policy: Policy, name: str | None) -> QueuePlan | None:
    plans = derived(policy, "explain_volcano", lambda: {q.name: q for q in queue_plans(policy)})
    return plans.get(name or "")


def _volcano_view(
    policy: Policy, team: Team, workload: Workload, verdict: kueue.KueueVerdict
) -> tuple[str, ...]:
    fleet = policy.fleet
    if fleet is None or "volcano" not in fleet.targets:
        return ()
    if not verdict.admitted:
        return ("Kueue keeps the job suspended: Volcano never sees its pods",)
    pool = next((r.flavor.pool for r in verdict.pod_sets if r.flavor), None)
    return (
        f"pods run under kube-scheduler (schedulerName unset); the Volcano queue "
        f"{leaf_queue_name(team, pool or '')} is not involved",
    )


def _volcano(policy: Policy, workload: Workload, team: Team | None) -> Explanation:
    """A Volcano Job (or pods for Volcano): the queue's capability and the gang."""
    queue = _volcano_queue(policy, workload.queue)
    name = team.name if team else None
    if queue is None:
        message = f"unable to find job queue: {workload.queue}"
        return Explanation(workload, name, "rejected", "QueueNotFound", message)
    total = workload.pods
    gang = workload.min_available or total
    if gang > total:
        message = f"minAvailable {gang} is greater than the {total} task replicas"
        return Explanation(workload, name, "rejected", "NotEnoughTasks", message)
    need: dict[str, int] = {}
    left = gang
    for pod_set in workload.pod_sets:
        pods = min(left, pod_set.count)
        left -= pods
        for resource, amount in pod_set.requests.items():
            need[resource] = need.get(resource, 0) + amount * pods
    lines: list[str] = []
    short = []
    for resource, amount in sorted(need.items()):
        capability = queue.capability.get(resource)
        if capability is None:
            continue
        cap = int(capability * 1000) if resource == "cpu" else int(capability)
        lines.append(f"queue {queue.name} capability {resource}: {cap}, gang needs {amount}")
        if amount > cap:
            short.append(resource)
    if short:
        message = f"queue resource quota insufficient: insufficient {short[0]}"
        fixes = (Fix(queue.origin, f"raise by {need[short[0]]}", short[0]),)
        return Explanation(
            workload,
            name,
            "pending",
            "NotEnoughResources",
            message,
            volcano=tuple(lines),
            fixes=fixes,
            policy=(
                f"raise team {queue.team.name}'s quota in pool "
                f"{queue.pool or ', '.join(queue.pools)} at {queue.origin}",
            ),
        )
    nodes = _queue_nodes(policy, queue, workload)
    room = sum(slots(n, workload.pod_sets[0].requests, None) for n in nodes)
    if room < gang:
        message = (
            f"{gang - room}/{gang} tasks in gang unschedulable: pod group is not ready, "
            f"{gang} minAvailable"
        )
        return Explanation(
            workload, name, "pending", "Unschedulable", message, volcano=tuple(lines)
        )
    return Explanation(workload, name, "admitted", "", "", volcano=tuple(lines))


def _queue_nodes(policy: Policy, queue: QueuePlan, workload: Workload) -> list[NodeView]:
    """The nodes a Volcano queue's gang may land on: its pool's, or for a team queue (which
    binds no nodegroup) those of the team's pools the first pod set's selector admits."""
    if queue.pool:
        return pool_nodes(policy, policy.pools[queue.pool])
    first = workload.pod_sets[0]
    return [
        n
        for pool in queue.pools
        for n in pool_nodes(policy, policy.pools[pool])
        if admits(first.node_selector, first.node_affinity, n.labels)
    ]
