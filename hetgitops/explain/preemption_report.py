"""`explain --preempt` and explain's live preemption lines: for one workload, the flavor Kueue
would preempt in and the victims, from the one preemption model (`preemption_answer`).

Why apart from the model: this picks the flavor (the pools explain's flavor replay finds the
pod sets may run on, in the ClusterQueue's order, then the fleet's whenCanPreempt), turns an
explain `Workload` into the model's probe, and holds the report the formats lay out."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hetgitops.explain.explanation import team_of
from hetgitops.explain.kueue import Assigner
from hetgitops.explain.nodes import pool_nodes
from hetgitops.explain.preemption import Answer, Placer, Running, Snapshot, Victim
from hetgitops.explain.preemption_answer import FITS, NONE, PREEMPT, UNKNOWN, answer, words
from hetgitops.explain.preemption_input import cohorts, fair_sharing, queues, running
from hetgitops.explain.quotas import Quotas, Usage, covered, flavors
from hetgitops.explain.state import Holder
from hetgitops.explain.tas_usage import PerNode, add
from hetgitops.explain.topology import place
from hetgitops.explain.workload import DEFAULT, KOORDINATOR, KUEUE, VOLCANO, Workload
from hetgitops.model.policy import Policy, Team


@dataclass(frozen=True)
class PreemptReport:
    workload: str
    team: str | None
    priority: int
    pool: str | None  # the flavor's pool the answer is for (None: no pool could take it)
    outcome: str  # fits | preempt | none | unknown
    victims: tuple[Victim, ...] = ()
    why: tuple[str, ...] = ()
    requests: Mapping[str, int] = field(default_factory=dict)  # the workload's, Kueue's integers


def priority_of(policy: Policy, tier: str | None) -> int:
    """The workload's priority: its tier's value, else the default tier's, else 0
    (Kueue's WorkloadPriorityClass, or 0 without one)."""
    if tier is not None and tier in policy.tiers:
        return policy.tiers[tier].value
    default = next((t for t in policy.tiers.values() if t.global_default), None)
    return default.value if default is not None else 0


def usage_of(holders: Iterable[Holder]) -> Usage:
    """What each ClusterQueue holds per (pool, resource): the usage explain's replay subtracts."""
    total: Counter[tuple[str, str, str]] = Counter()
    for h in holders:
        for (pool, resource), value in h.usage.items():
            total[h.cluster_queue, pool, resource] += value
    return dict(total)


def _name(workload: Workload) -> str:
    return f"{workload.namespace or ''}/{workload.name}" if workload.namespace else workload.name


def _pools(policy: Policy, workload: Workload, team: Team) -> list[list[str]]:
    """Per pod set, the pools in the ClusterQueue's flavor order whose flavor it matches (node
    selector, affinity, topology, taints: checkFlavorForPodSets, flavorassigner.go:1208-1257),
    whatever their quota says. Not read from a replayed cycle: Kueue's assigner stops at the
    first pod set that does not fit and a later cycle resumes after the flavor each pod set last
    tried (flavorassigner.go:1088-1090), so a cycle shows only part of what each could use."""
    assigner = Assigner(policy, team, Quotas(policy, {}))
    return [assigner.matching(pod_set) for pod_set in workload.pod_sets]


def _ordered(policy: Policy, workload: Workload, team: Team) -> tuple[list[str], tuple[str, str]]:
    """The pools every pod set matches, in flavor order, and the outcome and why to answer
    when none of them can take it: `unknown` when each pod set matches some pool but no pool
    matches all (the model answers for one flavor per workload), else `none`."""
    matched = _pools(policy, workload, team)
    common = [p for p in (matched[0] if matched else []) if all(p in m for m in matched)]
    if matched and all(matched) and not common:
        names = "; ".join(
            f"{ps.name}: {', '.join(m)}" for ps, m in zip(workload.pod_sets, matched, strict=False)
        )
        return [], (UNKNOWN, words("pools-differ", pools=names))
    return common, (NONE, words("no-flavor"))


def placer(
    policy: Policy,
    team: Team,
    workload: Workload,
    pool: str,
    holders: Iterable[Holder],
    node_free: Mapping[str, Mapping[str, int]] | None,
) -> Placer | None:
    """The workload's topology placement in the pool's flavor given what the preemptions so far
    freed (Kueue's workloadFits, preemption.go:676-680), or None when the flavor has no
    Topology. What is free before: live, Kueue's TAS view (`tas_usage.node_free`); offline, each
    node's units less what the holders' topology assignments hold there (none in a usage file)."""
    flavor = next((f for f in flavors(policy, team) if f.plan.pool.name == pool), None)
    if flavor is None or flavor.topology is None or policy.fleet is None:
        return None
    nodes = pool_nodes(policy, flavor.plan.pool)
    base: PerNode
    if node_free is None:
        base = {n.name: dict(n.units) for n in nodes}
        for h in holders:
            add(base, {n: u for n, u in h.placed.items() if n in base}, -1)
    else:
        base = {n.name: dict(node_free.get(n.name, n.units)) for n in nodes}
    pod_sets = [ps for ps in workload.pod_sets if ps.count]
    seen: dict[tuple[tuple[str, tuple[tuple[str, int], ...]], ...], bool] = {}

    def fits(freed: Mapping[str, Mapping[str, int]]) -> bool:
        # The same freed units give the same answer: without placements (a usage file) every
        # removal frees nothing on the nodes, and the preemptor asks once per removal.
        key = tuple(
            sorted((n, tuple(sorted(u.items()))) for n, u in freed.items() if any(u.values()))
        )
        if key not in seen:
            now = {
                n: {r: v + freed.get(n, {}).get(r, 0) for r, v in units.items()}
                for n, units in base.items()
            }
            taken: dict[str, dict[str, int]] = {}
            seen[key] = all(
                place(policy, flavor, ps, free=taken, node_free=now)[0] is not None
                for ps in pod_sets
            )
        return seen[key]

    return fits


def preempt(
    policy: Policy,
    workload: Workload,
    holders: Iterable[Holder],
    node_free: Mapping[str, Mapping[str, int]] | None = None,
) -> PreemptReport:
    """Whom Kueue preempts to admit `workload` now, among `holders` (the admitted workloads);
    `node_free`: Kueue's free units per node, read live (None: offline)."""
    held = tuple(holders)
    team = team_of(policy, workload)
    priority = priority_of(policy, workload.tier)
    if team is None:
        why = f"namespace {workload.namespace} belongs to no team: Kueue never admits it"
        return PreemptReport(_name(workload), None, priority, None, NONE, why=(why,), requests={})
    if workload.scheduler != KUEUE:
        named = {VOLCANO: "Volcano", KOORDINATOR: "koord-scheduler", DEFAULT: "kube-scheduler"}
        why = words("not-kueue", scheduler=named.get(workload.scheduler, workload.scheduler))
        asked = sorted({r for ps in workload.pod_sets for r in ps.requests})
        requests = {r: sum(ps.total(r) for ps in workload.pod_sets) for r in asked}
        return PreemptReport(
            _name(workload), team.name, priority, None, UNKNOWN, why=(why,), requests=requests
        )
    resources = [r for r in covered(policy, team) if any(ps.total(r) for ps in workload.pod_sets)]
    requests = {r: sum(ps.total(r) for ps in workload.pod_sets) for r in resources}
    snap = Snapshot(queues(policy), cohorts(policy), running(held))
    stop = policy.fleet is not None and policy.fleet.when_can_preempt in (
        "MayStopSearch",
        "Preempt",
    )
    first: tuple[str, Answer] | None = None
    chosen: tuple[str, Answer] | None = None
    pools, (outcome, why) = _ordered(policy, workload, team)
    for pool in pools:
        probe = Running(
            _name(workload),
            team.name,
            priority,
            {(pool, r): v for r, v in requests.items() if v},
            admitted=math.inf,
            created=math.inf,
        )
        placing = placer(policy, team, workload, pool, held, node_free)
        found = answer(snap, probe, fair_sharing=fair_sharing(policy), placer=placing)
        first = first or (pool, found)
        if found.outcome == FITS:
            chosen = (pool, found)
            break
        if found.outcome == PREEMPT and chosen is None:
            chosen = (pool, found)
            if stop:
                break
    picked = chosen or first
    if picked is None:
        return PreemptReport(
            _name(workload), team.name, priority, None, outcome, why=(why,), requests=requests
        )
    pool, found = picked
    return PreemptReport(
        _name(workload),
        team.name,
        priority,
        pool,
        found.outcome,
        found.victims,
        found.why,
        requests,
    )
