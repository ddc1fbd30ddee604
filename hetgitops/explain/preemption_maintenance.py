"""`capacity --without --kubeconfig`: what Kueue v0.19.2 does with the admitted Workloads whose
nodes a maintenance window takes out, from the one preemption model (`preemption_answer`).

Each Workload on the nodes loses its placement and is queued again; Kueue takes them highest
priority first, then by queue-order time (its creation time), then UID
(pkg/cache/queue/cluster_queue.go:1074-1090, pkg/workload/workload.go:1148-1166), and asks
for the quota it held, in the same flavors, among the Workloads that stay and those already
re-admitted. Per Workload: it fits its ClusterQueue (re-admitted), it preempts others to come
back (the model's victims, each with Kueue's reason), or it stays pending (the model's why).
Then the nodes: a topology-aware flavor admits only where its node cache, which drops
cordoned nodes (pkg/cache/scheduler/tas_nodes_cache.go:57-65), has room; a quota-only flavor
admits and its pods wait at kube-scheduler. When its quota fits, Kueue does not preempt for
topology room (flavorassigner.go:875-897 tries the TAS preemption only in Preempt mode), so a
Workload whose quota fits but whose nodes do not stays pending. Room is counted per pool and
resource over the remaining nodes (not per topology domain). A Workload it preempts is queued
again and asked once, in the same order (no preemption cycles are followed).

Why apart from `preemption_report`: that module asks for one new job and picks its flavor by
explain's replay; here the Workloads already hold flavors, many are asked in order and each
answer changes the snapshot the next one is asked in."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from hetgitops.explain.preemption import IN_COHORT_RECLAIM_WHILE_BORROWING, Running, Snapshot
from hetgitops.explain.preemption_answer import NONE, PREEMPT, UNKNOWN, answer
from hetgitops.explain.preemption_input import cohorts, fair_sharing, queues, running
from hetgitops.explain.state import flavor_pools, holder_of
from hetgitops.live import workloads as wl
from hetgitops.model.policy import Policy
from hetgitops.plan import capacity, flavors, maintenance
from hetgitops.plan.maintenance import Preempted, Readmission

Room = Counter[tuple[str, str]]


def _room(reduced: Policy, held: Sequence[Running]) -> Room:
    """Units per (pool, resource) the remaining nodes offer, minus what `held` holds there."""
    room: Room = Counter()
    for pool in reduced.pools.values():
        card = reduced.card_type_of(pool)
        if card is not None:
            for resource, units in capacity.pool_resources(pool, card, reduced.fleet).items():
                room[pool.name, resource] += units
    for r in held:
        room.subtract(r.usage)
    return room


def _topology(policy: Policy, pool: str) -> bool:
    fleet = policy.fleet
    return fleet is not None and "topologyName" in flavors.flavor_spec(
        policy, fleet, policy.pools[pool]
    )


def _no_room(policy: Policy, wl: Running, room: Room) -> str | None:
    """Why the remaining nodes cannot take `wl` (None: they can)."""
    for (pool, resource), value in sorted(wl.usage.items()):
        left = room[pool, resource]
        if value <= left or pool not in policy.pools:
            continue
        nodes = len(policy.pools[pool].nodes)
        where = f"the {nodes} node(s) left in pool {pool} have {max(0, left)} {resource} free"
        if _topology(policy, pool):
            return (
                f"its quota fits, but {where} and it holds {value}: the topology-aware flavor "
                "finds no room and preempts no one for it (Kueue looks for topology room by "
                "preemption only when the quota needs preemption): it stays pending "
                "(tas_nodes_cache.go:57-65, flavorassigner.go:875-897)"
            )
        return (
            f"its quota fits and Kueue admits it, but {where} and it holds {value}: its pods "
            "wait at kube-scheduler (the flavor counts quota, not nodes)"
        )
    return None


def _order(item: tuple[Running, str]) -> tuple[int, float, str]:
    """Kueue's queue order: higher priority first, then the queue-order time, then UID (here
    the name): pkg/cache/queue/cluster_queue.go:1074-1090."""
    r, _ = item
    return (-r.priority, r.created, r.name)


def _requeued(victim: Running, reason: str) -> Running:
    """A victim queued again: its queue-order time is its creation time, but one preempted
    InCohortReclaimWhileBorrowing takes the preemption time (now, after every creation
    time): pkg/workload/workload.go:1148-1166."""
    created = math.inf if reason == IN_COHORT_RECLAIM_WHILE_BORROWING else victim.created
    return replace(victim, created=created, admitted=math.inf, evicted=False)


class Readmit:
    """The preemption model as `capacity.maintenance.PreemptionModel`."""

    def readmit(
        self,
        policy: Policy,
        reduced: Policy,
        workloads: Sequence[Mapping[str, Any]],
        leaving: Sequence[str],
    ) -> tuple[Readmission, ...]:
        return readmit(policy, reduced, workloads, leaving)


def readmit(
    policy: Policy,
    reduced: Policy,
    workloads: Sequence[Mapping[str, Any]],
    leaving: Sequence[str],
) -> tuple[Readmission, ...]:
    """`leaving` (namespace/name of admitted Workloads on the nodes) in Kueue's order, each
    asked among the admitted `workloads` that stay, in the quota of `reduced` (the policy
    during the window)."""
    pools = flavor_pools(policy)
    held = running(holder_of(policy, w, pools) for w in workloads if wl.holds_quota(w))
    gone = set(leaving)
    staying = [r for r in held if r.name not in gone]
    snap = Snapshot(queues(reduced), cohorts(reduced), staying)
    room = _room(reduced, staying)
    fair = fair_sharing(reduced)
    queued = [(replace(r, admitted=math.inf, evicted=False), "") for r in held if r.name in gone]
    asked: set[str] = set()
    found = []
    while queued:
        queued.sort(key=_order)
        probe, by = queued.pop(0)
        asked.add(probe.name)
        row, victims = _ask(reduced, snap, room, probe, fair)
        found.append(replace(row, preempted_by=by))
        for v in victims:  # preempted: queued again, asked once (no preemption cycles)
            if v.name not in asked:
                reason = next(p.reason for p in row.victims if p.name == v.name)
                queued.append((_requeued(v, reason), probe.name))
    return tuple(found)


def _ask(
    reduced: Policy, snap: Snapshot, room: Room, probe: Running, fair: bool
) -> tuple[Readmission, list[Running]]:
    """One Workload asked back: its row, and the Workloads it preempts (taken out of `snap`
    and `room`, the probe added when it comes back)."""
    pools_held = tuple(sorted({p for p, _ in probe.usage}))
    row = Readmission(probe.name, probe.cluster_queue, probe.priority, pools_held, "")
    if probe.cluster_queue not in snap.specs:
        why = f"ClusterQueue {probe.cluster_queue} is not one the policy renders"
        return replace(row, outcome=maintenance.UNKNOWN, why=(why,)), []
    said = answer(snap, probe, fair_sharing=fair)
    if said.outcome == UNKNOWN:
        return replace(row, outcome=maintenance.UNKNOWN, why=said.why), []
    if said.outcome == NONE:
        return replace(row, outcome=maintenance.PENDING, why=said.why), []
    victims = [snap.workloads[v.cluster_queue][v.name] for v in said.victims]
    freed: Room = Counter()
    for v in victims:
        freed.update(v.usage)
    full = _no_room(reduced, probe, room + freed if victims else room)
    if full is not None:
        return replace(row, outcome=maintenance.PENDING, why=(full,)), []
    for v in victims:
        snap.remove(v)
        room.update(v.usage)
    snap.add(probe)
    room.subtract(probe.usage)
    outcome = maintenance.PREEMPTS if said.outcome == PREEMPT else maintenance.READMITTED
    chosen = tuple(
        Preempted(v.name, v.cluster_queue, v.priority, v.reason, v.setting) for v in said.victims
    )
    return replace(row, outcome=outcome, victims=chosen), victims
