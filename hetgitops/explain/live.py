"""Live mode (read-only): the same question against what the cluster holds now, and an existing
Workload's conditions translated into policy terms.

Reads, through `hetgitops.live` (LISTs only, nothing is written): ClusterQueues'
`status.flavorsUsage` (what every queue holds per flavor and resource, Kueue's Usage that
Available subtracts) and Workloads (who is admitted, who waits in which ClusterQueue)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hetgitops.explain import kueue
from hetgitops.live.client import Cluster, Resource
from hetgitops.model.policy import Policy
from hetgitops.plan.quota_plan import kueue_amount, team_plan


def _kueue_resource(policy: Policy, plural: str, kind: str, namespaced: bool) -> Resource:
    version = policy.fleet.kueue_api_version if policy.fleet else "kueue.x-k8s.io/v1beta2"
    group, _, api = version.partition("/")
    return Resource(group, api, plural, kind, namespaced)


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
class LiveState:
    usage: kueue.Usage
    admitted: Mapping[str, tuple[str, ...]]  # ClusterQueue -> admitted workloads
    waiting: tuple[Waiting, ...]
    server: str
    notes: tuple[str, ...] = field(default=())


def read_state(policy: Policy, cluster: Cluster) -> LiveState:
    pools = flavor_pools(policy)
    usage: dict[tuple[str, str, str], int] = {}
    notes: list[str] = []
    for cq in cluster.list(_kueue_resource(policy, "clusterqueues", "ClusterQueue", False)):
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
    for wl in cluster.list(_kueue_resource(policy, "workloads", "Workload", True)):
        meta, status = wl["metadata"], wl.get("status") or {}
        ref = f"{meta.get('namespace', '')}/{meta['name']}"
        admission = status.get("admission")
        if admission:
            admitted.setdefault(admission.get("clusterQueue", ""), []).append(ref)
            continue
        reserved = _condition(wl, "QuotaReserved")
        if reserved is not None and reserved.get("status") == "False":
            waiting.append(
                Waiting(
                    ref,
                    _cluster_queue_of(policy, wl) or "",
                    int((wl.get("spec") or {}).get("priority") or 0),
                    str(meta.get("creationTimestamp", "")),
                    str(reserved.get("message", "")),
                )
            )
    return LiveState(
        usage,
        {k: tuple(sorted(v)) for k, v in sorted(admitted.items())},
        tuple(sorted(waiting, key=lambda w: (w.cluster_queue, -w.priority, w.created, w.name))),
        cluster.server,
        tuple(notes),
    )


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


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
    state: str  # admitted | pending | finished | unknown
    conditions: tuple[str, ...]
    policy: tuple[str, ...]
    events: tuple[str, ...] = ()


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


def explain_workload(policy: Policy, cluster: Cluster, namespace: str, name: str) -> WorkloadReport:
    """An existing Workload (by its name or its job's) and the FailedScheduling events of its
    pods, in policy terms."""
    items = cluster.list(_kueue_resource(policy, "workloads", "Workload", True))
    found = [
        wl
        for wl in items
        if wl["metadata"].get("namespace") == namespace
        and (
            wl["metadata"]["name"] == name
            or any(o.get("name") == name for o in wl["metadata"].get("ownerReferences") or [])
        )
    ]
    if not found:
        return WorkloadReport(
            f"{namespace}/{name}",
            None,
            "unknown",
            (f"no Workload {name} (or of a job {name}) in {namespace}",),
            (),
        )
    wl = found[0]
    status = wl.get("status") or {}
    cq = (status.get("admission") or {}).get("clusterQueue") or _cluster_queue_of(policy, wl)
    conditions = tuple(
        f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}".rstrip(
            ": "
        )
        for c in status.get("conditions") or []
    )
    finished = _condition(wl, "Finished")
    if finished is not None and finished.get("status") == "True":
        state = "finished"
    elif status.get("admission"):
        state = "admitted"
    else:
        state = "pending"
    reserved = _condition(wl, "QuotaReserved")
    policy_lines = (
        translate(policy, cq, str((reserved or {}).get("message", "")), _requested(wl))
        if state == "pending"
        else []
    )
    events = _events(cluster, namespace, name)
    return WorkloadReport(
        f"{namespace}/{wl['metadata']['name']}", cq, state, conditions, tuple(policy_lines), events
    )


def _requested(wl: Mapping[str, Any]) -> list[str]:
    """Resource names the Workload's pod sets request (containers and init containers)."""
    found: set[str] = set()
    for pod_set in (wl.get("spec") or {}).get("podSets") or []:
        spec = (pod_set.get("template") or {}).get("spec") or {}
        for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            resources = container.get("resources") or {}
            found |= set(resources.get("requests") or {}) | set(resources.get("limits") or {})
    return sorted(found)


def _events(cluster: Cluster, namespace: str, name: str) -> tuple[str, ...]:
    """kube-scheduler's FailedScheduling events of the job's pods (pods are named after it)."""
    resource = Resource("", "v1", "events", "Event", True)
    found = []
    for event in cluster.list(resource):
        involved = event.get("involvedObject") or {}
        if (
            involved.get("namespace") == namespace
            and involved.get("kind") == "Pod"
            and str(involved.get("name", "")).startswith(name)
            and event.get("reason") == "FailedScheduling"
        ):
            found.append(f"{involved['name']}: FailedScheduling: {event.get('message', '')}")
    return tuple(sorted(found))
