"""`capacity --without --kubeconfig`: what Kueue v0.19.2 does with the admitted Workloads whose
nodes a maintenance window takes out, from the one preemption model (`preemption_answer`).

Each Workload on the nodes loses its placement and is queued again; Kueue takes them highest
priority first, then by queue-order time (its creation time), then UID
(pkg/cache/queue/cluster_queue.go, pkg/workload/workload.go), and asks for the quota it held, in the
same flavors, among the Workloads that stay and those already re-admitted. Per Workload: it fits its
ClusterQueue (re-admitted), it preempts others to come back (the model's victims, each with Kueue's
reason), or it stays pending (the model's why). Then the nodes: a topology-aware flavor admits only
where its node cache, which drops cordoned nodes (pkg/cache/scheduler/tas_nodes_cache.go), has room;
a quota-only flavor admits and its pods wait at kube-scheduler. In a topology-aware flavor whose
quota fits but whose nodes do not, Kueue turns the flavor to Preempt (flavorassigner.go); if the
Workload fits the nodes with every Workload gone it preempts, else it stays pending, and the
preemptor then removes candidates until quota and topology both fit (preemption.go): the same
classical preemptor, its fit test with the nodes' room. Room is counted per pool and resource over
the remaining nodes (not per topology domain). A Workload it preempts is queued again and asked
once, in the same order (no preemption cycles are followed).

Why apart from `preemption_report`: that module asks for one new job and picks its flavor by
explain's replay; here the Workloads already hold flavors, many are asked in order and each answer
changes the snapshot the next one is asked in."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from hetgitops.explain.preemption import (
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    Candidate,
    Preemptor,
    Running,
    Snapshot,
)
from hetgitops.explain.preemption_answer import NONE, PREEMPT, UNKNOWN, answer, victim
from hetgitops.explain.preemption_input import cohorts, fair_sharing, queues, running
from hetgitops.explain.preemption_tree import FR
from hetgitops.explain.state import flavor_pools, holder_of
from hetgitops.live import workloads as wl
from hetgitops.model.policy import Policy
from hetgitops.plan import capacity, flavors, maintenance
from hetgitops.plan.maintenance import Preempted, Readmission


def _capacity(reduced: Policy) -> dict[FR, int]:
    """Units per (pool, resource) the remaining nodes offer (the accelerator resources the
    plan counts; cpu and memory are not checked)."""
    found: dict[FR, int] = {}
    for pool in reduced.pools.values():
        card = reduced.card_type_of(pool)
        if card is not None:
            for resource, units in capacity.pool_resources(pool, card, reduced.fleet).items():
                found[pool.name, resource] = units
    return found


def _free(snap: Snapshot, room: Mapping[FR, int], fr: FR) -> int:
    """What the nodes left offer in `fr` minus what every admitted Workload there holds (a
    flavor's nodes are shared by every ClusterQueue)."""
    held = sum(r.usage.get(fr, 0) for by in snap.workloads.values() for r in by.values())
    return room[fr] - held


def _short(snap: Snapshot, room: Mapping[FR, int], usage: Mapping[FR, int]) -> FR | None:
    """The first flavor-resource the nodes left cannot give `usage` (None: they can)."""
    return next(
        (fr for fr, v in sorted(usage.items()) if fr in room and v > _free(snap, room, fr)), None
    )


class _RoomPreemptor(Preemptor):
    """The classical preemptor with workloadFits' topology test (preemption.go:667-681) as
    room on the remaining nodes."""

    def __init__(
        self, snap: Snapshot, probe: Running, frs: set[FR], room: Mapping[FR, int]
    ) -> None:
        super().__init__(snap, probe, frs)
        self.room = room

    def fits(self, requests: Mapping[FR, int], borrow: bool) -> bool:
        return super().fits(requests, borrow) and _short(self.snap, self.room, requests) is None


def _topology(policy: Policy, pool: str) -> bool:
    fleet = policy.fleet
    return fleet is not None and "topologyName" in flavors.flavor_spec(
        policy, fleet, policy.pools[pool]
    )


def _no_room(policy: Policy, snap: Snapshot, room: Mapping[FR, int], probe: Running, fr: FR) -> str:
    """Why the nodes left keep `probe` out of its topology-aware flavor, or, in a quota-only
    flavor, why its pods wait at kube-scheduler."""
    pool, resource = fr
    where = (
        f"the {len(policy.pools[pool].nodes)} node(s) left in pool {pool} have "
        f"{max(0, _free(snap, room, fr))} {resource} free and it holds {probe.usage[fr]}"
    )
    if not _topology(policy, pool):
        return (
            f"Kueue admits it (the flavor counts quota, not nodes), but {where}: its pods wait "
            "at kube-scheduler"
        )
    if room[fr] < probe.usage[fr]:
        return (
            f"{where}; the nodes left offer {room[fr]} in all, so no preemption helps: it stays "
            "pending (flavorassigner.go:875-891)"
        )
    return (
        f"{where}, and no Workload Kueue may preempt (lower priority, or in a ClusterQueue above "
        "its nominal quota) frees enough on them: it stays pending"
    )


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
    snap = Snapshot(queues(reduced), cohorts(reduced), [r for r in held if r.name not in gone])
    room = _capacity(reduced)
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
    reduced: Policy, snap: Snapshot, room: Mapping[FR, int], probe: Running, fair: bool
) -> tuple[Readmission, list[Running]]:
    """One Workload asked back: its row, and the Workloads it preempts (taken out of `snap`,
    the probe added when it comes back)."""
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
    rules = snap.specs[probe.cluster_queue].rules
    chosen = [snap.workloads[v.cluster_queue][v.name] for v in said.victims]
    for v in chosen:
        snap.remove(v)
    short = _short(snap, room, probe.usage)
    for v in chosen:
        snap.add(v)
    if short is not None and not _topology(reduced, short[0]):
        row = replace(row, why=(_no_room(reduced, snap, room, probe, short),))
    elif short is not None:
        targets: list[Candidate] = []
        if room[short] >= probe.usage[short]:  # fits the nodes with every Workload gone
            frs = set(said.needs) | {fr for fr in probe.usage if fr in room}
            targets = _RoomPreemptor(snap, probe, frs, room).targets(probe.usage)
        if not targets:
            why = _no_room(reduced, snap, room, probe, short)
            return replace(row, outcome=maintenance.PENDING, why=(why,)), []
        said = replace(said, outcome=PREEMPT, victims=tuple(victim(c, rules) for c in targets))
        chosen = [c.wl for c in targets]
    for v in chosen:
        snap.remove(v)
    snap.add(probe)
    outcome = maintenance.PREEMPTS if said.outcome == PREEMPT else maintenance.READMITTED
    victims = tuple(
        Preempted(v.name, v.cluster_queue, v.priority, v.reason, v.setting) for v in said.victims
    )
    return replace(row, outcome=outcome, victims=victims), chosen
