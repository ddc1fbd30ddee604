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
admits and its pods wait at kube-scheduler. Room is counted per pool and resource over the
remaining nodes (not per topology domain).

Why apart from `preemption_report`: that module asks for one new job and picks its flavor by
explain's replay; here the Workloads already hold flavors, many are asked in order and each
answer changes the snapshot the next one is asked in."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from hetgitops.explain.preemption import Running, Snapshot
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
                "finds no room, so Kueue keeps it pending (tas_nodes_cache.go:57-65)"
            )
        return (
            f"its quota fits and Kueue admits it, but {where} and it holds {value}: its pods "
            "wait at kube-scheduler (the flavor counts quota, not nodes)"
        )
    return None


def _order(r: Running) -> tuple[int, float, str]:
    return (-r.priority, r.created, r.name)


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
    room = _room(reduced, [r for r in held if r.name not in gone])
    fair = fair_sharing(reduced)
    found = []
    for moving in sorted((r for r in held if r.name in gone), key=_order):
        probe = replace(moving, admitted=math.inf, evicted=False)
        pools_held = tuple(sorted({p for p, _ in probe.usage}))
        row = Readmission(moving.name, moving.cluster_queue, moving.priority, pools_held, "")
        if probe.cluster_queue not in snap.specs:
            why = f"ClusterQueue {probe.cluster_queue} is not one the policy renders"
            found.append(replace(row, outcome=maintenance.UNKNOWN, why=(why,)))
            continue
        said = answer(snap, probe, fair_sharing=fair)
        if said.outcome == UNKNOWN:
            found.append(replace(row, outcome=maintenance.UNKNOWN, why=said.why))
            continue
        if said.outcome == NONE:
            found.append(replace(row, outcome=maintenance.PENDING, why=said.why))
            continue
        victims = [snap.workloads[v.cluster_queue][v.name] for v in said.victims]
        freed: Room = Counter()
        for v in victims:
            freed.update(v.usage)
        full = _no_room(reduced, probe, room + freed if victims else room)
        if full is not None:
            found.append(replace(row, outcome=maintenance.PENDING, why=(full,)))
            continue
        for v in victims:
            snap.remove(v)
            room.update(v.usage)
        snap.add(probe)
        room.subtract(probe.usage)
        outcome = maintenance.PREEMPTS if said.outcome == PREEMPT else maintenance.READMITTED
        chosen = tuple(
            Preempted(v.name, v.cluster_queue, v.priority, v.reason, v.setting)
            for v in said.victims
        )
        found.append(replace(row, outcome=outcome, victims=chosen))
    return tuple(found)
