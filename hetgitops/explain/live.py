"""Live mode (read-only): the same question against what the cluster holds now, and an existing
Workload's conditions translated into policy terms.

Reads, through `hetgitops.live` (LISTs only, nothing is written): ClusterQueues'
`status.flavorsUsage` (what every queue holds per flavor and resource, Kueue's Usage that
Available subtracts) and Workloads (who is admitted, who waits in which ClusterQueue: the
`live.workloads` reader the diff blast radius uses too, Kueue v0.19.2's own definitions)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.explain import kueue
from hetgitops.live import resources, workloads
from hetgitops.live.client import Cluster, Forbidden, NotServed
from hetgitops.model.policy import Policy
from hetgitops.plan.quota_plan import kueue_amount, team_plan


def _kueue_api(policy: Policy) -> str:
    return policy.fleet.kueue_api_version if policy.fleet else resources.KUEUE_API


def flavor_pools(policy: Policy) -> dict[str, str]:
    """ResourceFlavor name -> pool, as the teams' ClusterQueues name them."""
    found: dict[str, str] = {}
    for team in policy.teams.values():
        for flavor in kueue.flavors(policy, team):
            found[flavor.name] = flavor.plan.pool.name
    return found


def _pool_of(policy: Policy, flavor: str, pools: Mapping[str, str]) -> str | None:
    if flavor in pools:
        return pools[flavor]
    # A flavor renamed by an earlier render (`<pool>-<digest>`): the longest pool name prefix.
    matches = [p for p in policy.pools if flavor == p or flavor.startswith(p + "-")]
    return max(matches, key=len) if matches else None


@dataclass(frozen=True)
class Waiting:
    name: str  # namespace/name
    cluster_queue: str
    priority: int
    created: str
    message: str


@dataclass(frozen=True)
class Holder:
    """An admitted Workload: what it holds per (pool, resource), Kueue's integers."""

    name: str  # namespace/name
    cluster_queue: str
    priority: int
    usage: Mapping[tuple[str, str], int]


@dataclass(frozen=True)
class QueueStatus:
    """A Volcano Queue's status: its state, PodGroups per phase, what it has allocated."""

    name: str
    state: str
    allocated: Mapping[str, int]
    pending: int
    running: int
    inqueue: int


@dataclass(frozen=True)
class LiveState:
    usage: kueue.Usage
    admitted: Mapping[str, tuple[str, ...]]  # ClusterQueue -> admitted workloads
    waiting: tuple[Waiting, ...]
    server: str
    notes: tuple[str, ...] = field(default=())
    holders: tuple[Holder, ...] = ()
    volcano: Mapping[str, QueueStatus] = field(default_factory=dict)
    # Node -> accelerator units free now (allocatable minus the requests of the pods bound
    # to it that have not finished): what topology-aware placement has left.
    node_free: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def read_state(policy: Policy, cluster: Cluster) -> LiveState:
    pools = flavor_pools(policy)
    usage: dict[tuple[str, str, str], int] = {}
    notes: list[str] = []
    for cq in cluster.list(resources.cluster_queues(_kueue_api(policy))):
        name = cq["metadata"]["name"]
        for flavor in (cq.get("status") or {}).get("flavorsUsage") or []:
            pool = _pool_of(policy, flavor["name"], pools)
            if pool is None:
                notes.append(f"ClusterQueue {name} uses flavor {flavor['name']} of no pool")
                continue
            for resource in flavor.get("resources") or []:
                total = kueue_amount(resource["name"], str(resource.get("total", "0")))
                if total:
                    key = (name, pool, resource["name"])
                    usage[key] = usage.get(key, 0) + total
    admitted: dict[str, list[str]] = {}
    waiting: list[Waiting] = []
    holders: list[Holder] = []
    for wl in cluster.list(resources.workloads(_kueue_api(policy))):
        meta = wl["metadata"]
        ref = f"{meta.get('namespace', '')}/{meta['name']}"
        if workloads.holds_quota(wl):
            queue = workloads.cluster_queue(wl)
            admitted.setdefault(queue, []).append(ref)
            priority = int((wl.get("spec") or {}).get("priority") or 0)
            held = _held(policy, workloads.admission(wl), pools)
            holders.append(Holder(ref, queue, priority, held))
            continue
        reserved = workloads.condition(wl, "QuotaReserved")
        if workloads.waiting(wl) and reserved is not None and reserved.get("status") == "False":
            waiting.append(
                Waiting(
                    ref,
                    _cluster_queue_of(policy, wl) or "",
                    int((wl.get("spec") or {}).get("priority") or 0),
                    str(meta.get("creationTimestamp", "")),
                    str(reserved.get("message", "")),
                )
            )
    volcano = _volcano_queues(policy, cluster, notes)
    node_free = _node_free(policy, cluster, notes)
    return LiveState(
        usage,
        {k: tuple(sorted(v)) for k, v in sorted(admitted.items())},
        tuple(sorted(waiting, key=lambda w: (w.cluster_queue, -w.priority, w.created, w.name))),
        cluster.server,
        tuple(notes),
        tuple(sorted(holders, key=lambda h: h.name)),
        volcano,
        node_free,
    )


def _held(
    policy: Policy, admission: Mapping[str, Any], pools: Mapping[str, str]
) -> dict[tuple[str, str], int]:
    """An admission's resourceUsage per (pool, resource), through its flavors."""
    held: dict[tuple[str, str], int] = {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        for resource, amount in (assignment.get("resourceUsage") or {}).items():
            pool = _pool_of(policy, str(flavors.get(resource, "")), pools)
            if pool is not None:
                key = (pool, str(resource))
                held[key] = held.get(key, 0) + kueue_amount(str(resource), str(amount))
    return held


def _volcano_queues(policy: Policy, cluster: Cluster, notes: list[str]) -> dict[str, QueueStatus]:
    """The Volcano Queues' status (when the fleet renders Volcano): state, allocated, PodGroups
    per phase."""
    if policy.fleet is None or "volcano" not in policy.fleet.targets:
        return {}
    try:
        items = cluster.list(resources.VOLCANO_QUEUES)
    except (NotServed, Forbidden) as exc:
        notes.append(f"Volcano Queues not read: {exc}")
        return {}
    found = {}
    for queue in items:
        status = queue.get("status") or {}
        allocated = {
            str(r): kueue_amount(str(r), str(v)) for r, v in (status.get("allocated") or {}).items()
        }
        name = queue["metadata"]["name"]
        found[name] = QueueStatus(
            name,
            str(status.get("state", "")),
            allocated,
            int(status.get("pending") or 0),
            int(status.get("running") or 0),
            int(status.get("inqueue") or 0),
        )
    return found


def _node_free(policy: Policy, cluster: Cluster, notes: list[str]) -> dict[str, dict[str, int]]:
    """Per policy node: allocatable accelerator units minus the requests of the pods bound to
    it that have not finished (what Kueue's TAS cache subtracts); a policy node the cluster
    lacks has nothing free."""
    from hetgitops.explain.nodes import pool_nodes
    from hetgitops.explain.workload import pod_requests

    wanted = {n.name: n for pool in policy.pools.values() for n in pool_nodes(policy, pool)}
    live = {
        n["metadata"]["name"]: n
        for n in cluster.list(resources.NODES)
        if n["metadata"]["name"] in wanted
    }
    used: dict[str, dict[str, int]] = {}
    for pod in cluster.list(resources.PODS):
        node = workloads.pod_node(pod)
        if node not in live or workloads.pod_finished(pod):
            continue
        for resource, amount in pod_requests(pod.get("spec") or {}).items():
            used.setdefault(node, {})[resource] = used.get(node, {}).get(resource, 0) + amount
    free: dict[str, dict[str, int]] = {}
    for name, view in sorted(wanted.items()):
        if name not in live:
            free[name] = {r: 0 for r in view.units}
            continue
        allocatable = (live[name].get("status") or {}).get("allocatable") or {}
        free[name] = {
            r: kueue_amount(r, str(allocatable.get(r, "0"))) - used.get(name, {}).get(r, 0)
            for r in [*view.units, *(h for h in ("cpu", "memory") if h in allocatable)]
        }
    missing = len(wanted) - len(live)
    if missing:
        notes.append(f"{missing} node(s) of the policy are not in the cluster (counted as full)")
    return free


def _cluster_queue_of(policy: Policy, wl: Mapping[str, Any]) -> str | None:
    """A waiting Workload's ClusterQueue: the team owning its namespace (its LocalQueue)."""
    namespace = wl["metadata"].get("namespace")
    for team in policy.teams.values():
        if namespace in team.namespaces:
            return team.name
    return None


def live_lines(policy: Policy, team: str | None, state: LiveState) -> tuple[str, ...]:
    """Who the request would queue behind and what the team's queue holds now."""
    if team is None:
        return ()
    lines = []
    held = sorted(
        (k, v) for k, v in state.usage.items() if k[0] == team and k[2] not in ("cpu", "memory")
    )
    if held:
        parts = ", ".join(f"{v} {r} in {p}" for (_, p, r), v in held)
        lines.append(f"ClusterQueue {team} holds {parts} now")
    else:
        lines.append(f"ClusterQueue {team} holds no accelerator now")
    ahead = [w for w in state.waiting if w.cluster_queue == team]
    if ahead:
        names = ", ".join(w.name for w in ahead[:10])
        more = f" and {len(ahead) - 10} more" if len(ahead) > 10 else ""
        count = len(ahead)
        lines.append(
            f"queued behind {count} pending workload(s) of ClusterQueue {team}: {names}{more}"
        )
    admitted = state.admitted.get(team, ())
    if admitted:
        lines.append(f"admitted in ClusterQueue {team}: {', '.join(admitted[:10])}")
    return tuple(lines)


# Kueue v0.19.2's message shapes (flavorassigner.go :1071, :1247, :1343-1368; tas :2006-2009).
EXCEEDS = re.compile(
    r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), previously considered "
    r"podsets requests \((?P<before>[^)]*)\) \+ current podset request \((?P<request>[^)]*)\) "
    r"> maximum capacity \((?P<most>[^)]*)\)"
)
WAITING = re.compile(
    r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), "
    r"(?P<more>\S+) more needed"
)
AFFINITY = re.compile(r"flavor (?P<flavor>\S+) doesn't match node affinity")
UNAVAILABLE = re.compile(r"resource (?P<resource>\S+) unavailable in ClusterQueue")
TOPOLOGY = re.compile(r"topology \"(?P<topology>[^\"]+)\" (doesn't allow to fit|allows to fit)")


@dataclass(frozen=True)
class WorkloadReport:
    name: str
    cluster_queue: str | None
    # A Workload: admitted | pending | finished | inactive (live.workloads.status) or unknown;
    # a PodGroup or Pod: running, pending, ...
    state: str
    conditions: tuple[str, ...]
    policy: tuple[str, ...]
    events: tuple[str, ...] = ()
    kind: str = "Workload"  # Workload | PodGroup | Pod: what was found under the name


def translate(
    policy: Policy, team_name: str | None, message: str, requested: Iterable[str] = ()
) -> list[str]:
    """Kueue's pending message in policy terms: the quota line and by how much. `requested`:
    the resources the Workload's pod sets ask; one the team's ClusterQueue does not cover is
    named even when Kueue's message speaks only of flavors (its resource order decides which
    it reports, kueue.Assigner._pod_set)."""
    team = policy.teams.get(team_name or "")
    pools = flavor_pools(policy)
    plans = {p.pool.name: p for p in team_plan(policy, team)} if team else {}
    lines: list[str] = []
    for m in EXCEEDS.finditer(message):
        resource, pool = m["resource"], _pool_of(policy, m["flavor"], pools)
        need = kueue_amount(resource, m["before"]) + kueue_amount(resource, m["request"])
        short = need - kueue_amount(resource, m["most"])
        where = plans[pool].origin if pool in plans else None
        lines.append(
            f"ExceedsMaxQuota in pool {pool}: {resource} needs {short} more than team "
            f"{team_name} can ever reach there; raise the quota"
            + (f" at {where}" if where else "")
            + " or its borrowingLimit / the cohort's lending"
        )
    for m in WAITING.finditer(message):
        pool = _pool_of(policy, m["flavor"], pools)
        lines.append(
            f"WaitingForQuota in pool {pool}: {m['more']} {m['resource']} more are in use by "
            "this queue or borrowed by others; it is admitted when they finish or are preempted"
        )
    for m in AFFINITY.finditer(message):
        pool = _pool_of(policy, m["flavor"], pools)
        lines.append(f"NoMatchingFlavor: the job's node selector excludes pool {pool}")
    missing = [m["resource"] for m in UNAVAILABLE.finditer(message)]
    if team is not None:
        covered = set(kueue.covered(policy, team))
        missing += [r for r in sorted(set(requested)) if r not in covered and r not in missing]
    for resource in missing:
        lines.append(
            f"team {team_name} holds no {resource} in any pool"
            + (f" (quotas at {team.origin.at('spec', 'quotas')})" if team else "")
        )
    if TOPOLOGY.search(message):
        lines.append("TopologyPlacementFailed: the quota fits but no topology domain has the room")
    return lines


def _named_or_owned_by(
    items: list[dict[str, Any]], namespace: str, name: str
) -> list[dict[str, Any]]:
    """The objects in `namespace` called `name`, or owned by an object called `name` (a job's
    Workload or PodGroup is found by the job's name)."""
    return [
        obj
        for obj in items
        if obj["metadata"].get("namespace") == namespace
        and (
            obj["metadata"]["name"] == name
            or any(o.get("name") == name for o in obj["metadata"].get("ownerReferences") or [])
        )
    ]


def explain_workload(policy: Policy, cluster: Cluster, namespace: str, name: str) -> WorkloadReport:
    """An existing Workload (by its name or its job's) and the FailedScheduling events of its
    pods, in policy terms."""
    items = cluster.list(resources.workloads(_kueue_api(policy)))
    found = _named_or_owned_by(items, namespace, name)
    if not found:
        other = _podgroup_report(policy, cluster, namespace, name) or _pod_report(
            policy, cluster, namespace, name
        )
        if other is not None:
            return other
        return WorkloadReport(
            f"{namespace}/{name}",
            None,
            "unknown",
            (f"no Workload, PodGroup or Pod {name} (or of a job {name}) in {namespace}",),
            (),
        )
    wl = found[0]
    cq = workloads.cluster_queue(wl) or _cluster_queue_of(policy, wl)
    conditions = _conditions(wl)
    state = workloads.status(wl)
    reserved = workloads.condition(wl, "QuotaReserved")
    policy_lines = (
        translate(policy, cq, str((reserved or {}).get("message", "")), workloads.requested(wl))
        if state == workloads.PENDING
        else []
    )
    events = _events(cluster, namespace, name)
    return WorkloadReport(
        f"{namespace}/{wl['metadata']['name']}", cq, state, conditions, tuple(policy_lines), events
    )


def _events(cluster: Cluster, namespace: str, name: str) -> tuple[str, ...]:
    """kube-scheduler's FailedScheduling events of the job's pods (pods are named after it)."""
    found = []
    for event in cluster.list(resources.EVENTS):
        involved = event.get("involvedObject") or {}
        if (
            involved.get("namespace") == namespace
            and involved.get("kind") == "Pod"
            and str(involved.get("name", "")).startswith(name)
            and event.get("reason") == "FailedScheduling"
        ):
            found.append(f"{involved['name']}: FailedScheduling: {event.get('message', '')}")
    return tuple(sorted(found))


def volcano_lines(policy: Policy, team: str | None, state: LiveState) -> tuple[str, ...]:
    """The team's Volcano Queues now: state, what they hold, PodGroups waiting."""
    if team is None or not state.volcano:
        return ()
    lines = []
    for plan in team_plan(policy, policy.teams[team]) if team in policy.teams else []:
        name = f"{team}-{plan.pool.name}"
        queue = state.volcano.get(name)
        if queue is None:
            lines.append(f"Volcano queue {name} is not in the cluster")
            continue
        held = ", ".join(f"{kueue.fmt(r, v)} {r}" for r, v in sorted(queue.allocated.items()) if v)
        lines.append(
            f"Volcano queue {name}: {queue.state or 'state unknown'}, allocated "
            f"{held or 'nothing'}; PodGroups running {queue.running}, inqueue {queue.inqueue}, "
            f"pending {queue.pending}"
        )
    return tuple(lines)


def _priority(policy: Policy, tier: str | None) -> int:
    if tier is not None and tier in policy.tiers:
        return policy.tiers[tier].value
    default = next((t for t in policy.tiers.values() if t.global_default), None)
    return default.value if default is not None else 0


def preemption_lines(
    policy: Policy, team_name: str | None, tier: str | None, message: str, state: LiveState
) -> tuple[str, ...]:
    """For each "insufficient unused quota ... N more needed" of a pending verdict: the admitted
    Workloads Kueue's preemption rules let it take (withinClusterQueue among its own queue's,
    reclaimWithinCohort among other queues' borrowed quota, as render writes them) and how much
    of the N they hold. Candidates by rule, not the preemptor's exact choice (it also orders
    by priority and admission time, and stops once enough is free)."""
    from hetgitops.compilers.kueue_queues import preemption

    team = policy.teams.get(team_name or "")
    if team is None:
        return ()
    rules = preemption(policy, team)
    mine = _priority(policy, tier)
    pools = flavor_pools(policy)
    nominal = {
        (t.name, p.pool.name, r): v
        for t in policy.teams.values()
        for p in team_plan(policy, t)
        for r, v in p.nominal.items()
    }
    lines = []
    for m in WAITING.finditer(message):
        pool, resource = _pool_of(policy, m["flavor"], pools), m["resource"]
        if pool is None:
            continue
        more = kueue_amount(resource, m["more"])
        within = _eligible(rules["withinClusterQueue"], mine)
        reclaim = _eligible(rules["reclaimWithinCohort"], mine)
        own = [
            h
            for h in state.holders
            if h.cluster_queue == team.name and within(h.priority) and h.usage.get((pool, resource))
        ]
        borrowed = {
            cq: used - nominal.get((cq, p, r), 0)
            for (cq, p, r), used in state.usage.items()
            if p == pool
            and r == resource
            and cq != team.name
            and cq in policy.teams
            and policy.teams[cq].cohort is not None
            and team.cohort is not None
            and used > nominal.get((cq, p, r), 0)
        }
        others = [
            h
            for h in state.holders
            if h.cluster_queue in borrowed and reclaim(h.priority) and h.usage.get((pool, resource))
        ]
        freed = sum(h.usage[pool, resource] for h in own) + min(
            sum(h.usage[pool, resource] for h in others), sum(borrowed.values())
        )
        if not own and not others:
            lines.append(
                f"preemption in pool {pool}: nothing Kueue may preempt holds {resource} "
                f"(withinClusterQueue {rules['withinClusterQueue']}, reclaimWithinCohort "
                f"{rules['reclaimWithinCohort']}): it waits until {kueue.fmt(resource, more)} "
                "are released"
            )
            continue
        names = ", ".join(h.name for h in [*own, *others][:10])
        enough = "enough" if freed >= more else "not enough: it also waits for releases"
        lines.append(
            f"preemption in pool {pool}: Kueue may preempt {len(own)} lower-priority workload(s) "
            f"of ClusterQueue {team.name} and {len(others)} borrowing from the cohort ({names}); "
            f"they would free {kueue.fmt(resource, freed)} of the {kueue.fmt(resource, more)} "
            f"{resource} needed ({enough})"
        )
    return tuple(lines)


def _eligible(rule: str, mine: int) -> Callable[[int], bool]:
    """Kueue's preemption policies on the candidate's priority (LowerOrNewerEqualPriority
    also takes equal priorities admitted later; counted here as equal)."""
    if rule == "Any":
        return lambda _: True
    if rule == "LowerPriority":
        return lambda p: p < mine
    if rule == "LowerOrNewerEqualPriority":
        return lambda p: p <= mine
    return lambda _: False


# Volcano v1.15's PodGroup condition messages (pkg/scheduler/framework/job_updater.go, the
# gang and capacity/proportion plugins) and kube-scheduler's FailedScheduling parts.
VOLCANO_QUOTA = re.compile(
    r"queue resource quota insufficient(?:: insufficient (?P<resource>\S+))?"
)
VOLCANO_GANG = re.compile(r"(?P<short>\d+)/(?P<total>\d+) tasks in gang unschedulable")
SCHEDULER_INSUFFICIENT = re.compile(r"(?P<count>\d+) Insufficient (?P<resource>[\w./-]+)")
SCHEDULER_TAINT = re.compile(r"(?P<count>\d+) node\(s\) had untolerated taint \{(?P<taint>[^}]*)\}")
SCHEDULER_SELECTOR = re.compile(r"(?P<count>\d+) node\(s\) didn't match Pod's node affinity")


def _conditions(obj: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}".rstrip(
            ": "
        )
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def _podgroup_report(
    policy: Policy, cluster: Cluster, namespace: str, name: str
) -> WorkloadReport | None:
    """A Volcano PodGroup by its name or its owner's (a vcjob's PodGroup is `<job>-<uid>`):
    its phase and conditions, Volcano's messages in policy terms."""
    if policy.fleet is None or "volcano" not in policy.fleet.targets:
        return None
    try:
        items = cluster.list(resources.PODGROUPS)
    except (NotServed, Forbidden):
        return None
    found = _named_or_owned_by(items, namespace, name)
    if not found:
        return None
    pg = found[0]
    spec, status = pg.get("spec") or {}, pg.get("status") or {}
    queue = str(spec.get("queue") or "default")
    phase = str(status.get("phase") or "Pending")
    lines: list[str] = []
    own = _podgroup_events(cluster, namespace, pg["metadata"]["name"])
    text = " ".join([*(str(c.get("message", "")) for c in status.get("conditions") or []), *own])
    plans = {q.name: q for q in _queue_plans(policy)}
    plan = plans.get(queue)
    quota = VOLCANO_QUOTA.search(text)
    if quota is not None:
        resource = quota["resource"] or "a resource"
        where = f" at {plan.origin}" if plan is not None else ""
        lines.append(
            f"Volcano queue {queue} lacks {resource} for the gang: raise team "
            f"{plan.team.name if plan else '?'}'s quota in pool {plan.pool if plan else '?'}{where}"
        )
    gang = VOLCANO_GANG.search(text)
    if gang is not None:
        lines.append(
            f"{gang['short']} of the gang's {gang['total']} tasks find no node: minMember "
            f"{spec.get('minMember', '?')} must all start together; see the pods' FailedScheduling"
        )
    if plan is None and queue != "default":
        lines.append(f"no team's Volcano queue is named {queue}")
    state = "running" if phase in ("Running", "Completed") else "pending"
    events = (*own, *_events(cluster, namespace, name))
    return WorkloadReport(
        f"{namespace}/{pg['metadata']['name']}",
        queue,
        state,
        (f"phase={phase}", *_conditions(pg)),
        tuple(lines),
        events,
        kind="PodGroup",
    )


def _podgroup_events(cluster: Cluster, namespace: str, name: str) -> list[str]:
    """The Volcano scheduler's events on the PodGroup (Unschedulable: the capacity or
    proportion plugin's "queue resource quota insufficient: insufficient R, ...")."""
    found = []
    for event in cluster.list(resources.EVENTS):
        involved = event.get("involvedObject") or {}
        if (
            involved.get("kind") == "PodGroup"
            and involved.get("namespace") == namespace
            and involved.get("name") == name
        ):
            found.append(f"PodGroup {name}: {event.get('reason', '')}: {event.get('message', '')}")
    return sorted(found)


def _queue_plans(policy: Policy) -> list[Any]:
    from hetgitops.compilers.volcano import queue_plans

    return list(queue_plans(policy))


def _pod_report(
    policy: Policy, cluster: Cluster, namespace: str, name: str
) -> WorkloadReport | None:
    """A bare Pod: its PodScheduled condition and FailedScheduling events, kube-scheduler's
    reasons in policy terms (which pools' nodes, which taint, which resource)."""
    found = [
        p
        for p in cluster.list(resources.PODS)
        if p["metadata"].get("namespace") == namespace and p["metadata"]["name"] == name
    ]
    if not found:
        return None
    pod = found[0]
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    scheduled: Mapping[str, Any] = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {}
    )
    events = _events(cluster, namespace, name)
    text = " ".join([str(scheduled.get("message", "")), *events])
    lines = []
    for m in SCHEDULER_INSUFFICIENT.finditer(text):
        pools = sorted(
            p.name for p in policy.pools.values() if m["resource"] in _pool_resources(policy, p)
        )
        lines.append(
            f"{m['count']} node(s) lack {m['resource']}: the pools offering it "
            f"({', '.join(pools) or 'none'}) are full or too small for one pod"
        )
    for m in SCHEDULER_TAINT.finditer(text):
        lines.append(
            f"{m['count']} node(s) carry the taint {{{m['taint']}}}: tolerate it, or submit "
            "through the team's LocalQueue so Kueue adds its flavor's tolerations"
        )
    for m in SCHEDULER_SELECTOR.finditer(text):
        lines.append(f"{m['count']} node(s) are outside the pod's node selector / affinity")
    queued = ((pod.get("metadata") or {}).get("labels") or {}).get("kueue.x-k8s.io/queue-name")
    if queued is None and phase == "Pending":
        lines.append(
            "no kueue.x-k8s.io/queue-name label: no quota applies, kube-scheduler alone decides"
        )
    state = "pending" if phase == "Pending" else phase.lower()
    return WorkloadReport(
        f"{namespace}/{name}",
        None,
        state,
        (f"phase={phase}", *_conditions(pod)),
        tuple(lines),
        events,
        kind="Pod",
    )


def _pool_resources(policy: Policy, pool: Any) -> set[str]:
    from hetgitops.explain.nodes import pool_nodes

    return {r for n in pool_nodes(policy, pool) for r in n.units}
