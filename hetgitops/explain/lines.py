"""The answer lines of live mode: what the team's queue holds and who it queues behind, its
Volcano queues, and a Kueue pending message in policy terms (whom Kueue preempts for it is the
preemption model's, `preemption_report`).

Why apart from the state (`state.py`): these only format; they take the frozen `LiveState`
(or a message) and the policy and return lines, so they are tested without a cluster. Kueue's
messages are parsed with the patterns of `kueue_messages`, the module that also writes them."""

from __future__ import annotations

from collections.abc import Iterable

from hetgitops.diagnostics import listing
from hetgitops.explain import quotas
from hetgitops.explain.kueue_messages import AFFINITY, EXCEEDS, TOPOLOGY, UNAVAILABLE, WAITING, fmt
from hetgitops.explain.state import LiveState, flavor_pools, pool_of
from hetgitops.model.policy import Policy
from hetgitops.plan.quota_plan import kueue_amount, team_plan


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
        names = listing([w.name for w in ahead], 10)
        count = len(ahead)
        lines.append(f"queued behind {count} pending workload(s) of ClusterQueue {team}: {names}")
    admitted = state.admitted.get(team, ())
    if admitted:
        lines.append(f"admitted in ClusterQueue {team}: {', '.join(admitted[:10])}")
    return tuple(lines)


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
        resource, pool = m["resource"], pool_of(policy, m["flavor"], pools)
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
        pool = pool_of(policy, m["flavor"], pools)
        lines.append(
            f"WaitingForQuota in pool {pool}: {m['more']} {m['resource']} more are in use by "
            "this queue or borrowed by others; it is admitted when they finish or are preempted"
        )
    for m in AFFINITY.finditer(message):
        pool = pool_of(policy, m["flavor"], pools)
        lines.append(f"NoMatchingFlavor: the job's node selector excludes pool {pool}")
    missing = [m["resource"] for m in UNAVAILABLE.finditer(message)]
    if team is not None:
        covered = set(quotas.covered(policy, team))
        missing += [r for r in sorted(set(requested)) if r not in covered and r not in missing]
    for resource in missing:
        lines.append(
            f"team {team_name} holds no {resource} in any pool"
            + (f" (quotas at {team.origin.at('spec', 'quotas')})" if team else "")
        )
    if TOPOLOGY.search(message):
        lines.append("TopologyPlacementFailed: the quota fits but no topology domain has the room")
    return lines


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
        held = ", ".join(f"{fmt(r, v)} {r}" for r, v in sorted(queue.allocated.items()) if v)
        lines.append(
            f"Volcano queue {name}: {queue.state or 'state unknown'}, allocated "
            f"{held or 'nothing'}; PodGroups running {queue.running}, inqueue {queue.inqueue}, "
            f"pending {queue.pending}"
        )
    return tuple(lines)
