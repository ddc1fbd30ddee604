"""Compile stage, `monitoring` target: the promtool scenarios of the queue alerts: work
pending while its cohort idles, admission wait over a tier's objective, spend over a team's
budget, and ClusterQueues or Volcano Queues that stopped; a stale Kueue follower replica
reports other numbers as a trap."""

from __future__ import annotations

import math
from fractions import Fraction

from hetgitops.compilers.monitoring import alerts as a
from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring.facts import PoolFacts, TeamFacts
from hetgitops.compilers.monitoring.policy_rules import number
from hetgitops.compilers.monitoring.promtests import SAMPLE, Case, Fired
from hetgitops.compilers.monitoring.scenario_base import FOLLOWER, LEADER, Scene, cards, minutes


def pending(scene: Scene, alert: a.Alert) -> list[Case]:
    cases = []
    for team in [t for t in scene.facts.teams.values() if t.root_cohort][:SAMPLE]:
        lender = _lender(scene, team)
        if lender is None:
            continue
        other, flavor, pool = lender
        for busy in (False, True):
            cases.append(_pending_case(scene, alert, team, other, flavor, pool, busy=busy))
    return cases


def _lender(scene: Scene, team: TeamFacts) -> tuple[TeamFacts, str, PoolFacts] | None:
    types = {scene.facts.pools[p].card_type for p in team.pools.values()}
    peers = [t for t in scene.facts.teams.values() if t.root_cohort == team.root_cohort]
    peers.sort(key=lambda t: (t.name == team.name, t.name))  # another team first
    for peer in peers:
        for flavor, counts in peer.nominal.items():
            pool = scene.facts.pools[peer.pools[flavor]]
            if pool.card_type in types and cards(counts, pool.weights) >= 1:
                return peer, flavor, pool
    return None


def _pending_case(
    scene: Scene,
    alert: a.Alert,
    team: TeamFacts,
    lender: TeamFacts,
    flavor: str,
    pool: PoolFacts,
    *,
    busy: bool,
) -> Case:
    name = f"team {team.name} pending, {lender.name} {'busy' if busy else 'idle'} in {flavor}"
    case = Case(name, minutes(alert.duration))
    queue = {"cluster_queue": team.cluster_queue}
    case.add(names.PENDING, 2, status="active", **queue, **LEADER)
    case.add(names.PENDING, 5, status="inadmissible", **queue, **LEADER)
    case.add(names.PENDING, 0, status="active", **queue, **FOLLOWER)
    for resource, count in lender.nominal[flavor].items():
        ids = {"cluster_queue": lender.cluster_queue, "flavor": flavor, "resource": resource}
        case.add(names.NOMINAL, count, **ids, **LEADER)
        case.add(names.USAGE, count if busy else 0, **ids, **LEADER)
        case.add(names.USAGE, count, **ids, **FOLLOWER)  # trap: a stale follower
    if not busy:
        ids = {
            "team": team.name,
            "cluster_queue": team.cluster_queue,
            "root_cohort": team.root_cohort,
            "card_type": pool.card_type,
        }
        case.fired.append(Fired(ids, 2.0))
    return case


def wait(scene: Scene, alert: a.Alert) -> list[Case]:
    cases = []
    for tier, objective in list(scene.facts.tiers.items())[:SAMPLE]:
        team = next((t for t in scene.facts.teams.values() if tier in t.tiers), None)
        if team is None:
            continue
        for slow in (False, True):
            cases.append(_wait_case(scene, alert, tier, objective, team, slow=slow))
    return cases


def _wait_case(
    scene: Scene, alert: a.Alert, tier: str, objective: float, team: TeamFacts, *, slow: bool
) -> Case:
    case = Case(f"tier {tier} in {team.name} {'slow' if slow else 'fast'}", 30)
    low, high = objective / 2, objective * 2
    ids = {"cluster_queue": team.cluster_queue, "priority_class": tier, **LEADER}
    case.counter(names.ADMISSION_WAIT + "_bucket", 0 if slow else 10, le=number(low), **ids)
    case.counter(names.ADMISSION_WAIT + "_bucket", 10, le=number(high), **ids)
    case.counter(names.ADMISSION_WAIT + "_bucket", 10, le="+Inf", **ids)
    p = scene.fleet.monitoring.wait_percentile
    if slow:  # every admission waited between low and high: Prometheus interpolates
        labels = {
            "cluster_queue": team.cluster_queue,
            "priority_class": tier,
            "quantile": number(p),
        }
        case.fired.append(Fired(labels, low + (high - low) * p))
    return case


def budget(scene: Scene, alert: a.Alert) -> list[Case]:
    cases = []
    budgeted = [t for t in scene.facts.teams.values() if t.budget_monthly is not None]
    for team in budgeted:
        priced = _priced(scene, team)
        hourly = sum(n * c for _f, _r, n, c in priced)
        if hourly <= 0:
            continue
        limit = (team.budget_monthly or 0) * scene.fleet.monitoring.budget_percent / 100
        over = math.floor(limit / (hourly * a.HOURS_PER_MONTH)) + 1
        for scale in sorted({0, 1, over}):
            cases.append(_budget_case(scene, alert, team, priced, scale, limit))
        if len(cases) >= 3 * SAMPLE:
            break
    return cases


def _priced(scene: Scene, team: TeamFacts) -> list[tuple[str, str, int, float]]:
    found = []
    for flavor, counts in team.nominal.items():
        pool = scene.facts.pools[team.pools[flavor]]
        for resource, count in counts.items():
            if pool.cost_per_hour is not None and count:
                cost = pool.cost_per_hour * float(pool.weights.get(resource, Fraction(1)))
                found.append((flavor, resource, count, cost))
    return found


def _budget_case(
    scene: Scene,
    alert: a.Alert,
    team: TeamFacts,
    priced: list[tuple[str, str, int, float]],
    scale: int,
    limit: float,
) -> Case:
    case = Case(f"team {team.name} using {scale}x its quota", minutes(alert.duration, 10))
    for flavor, resource, count, _cost in priced:
        ids = {"cluster_queue": team.cluster_queue, "flavor": flavor, "resource": resource}
        case.add(names.USAGE, count * scale, **ids, **LEADER)
    monthly = sum(count * scale * cost for _f, _r, count, cost in priced) * a.HOURS_PER_MONTH
    if monthly > limit:
        case.fired.append(Fired({"team": team.name}, monthly))
    return case


def cluster_queue(scene: Scene, alert: a.Alert) -> list[Case]:
    teams = list(scene.facts.teams.values())
    cases = []
    for team in teams[:SAMPLE]:
        for leader, follower in ((1, 0), (0, 0), (0, 1)):
            name = f"{team.cluster_queue} leader active={leader} follower active={follower}"
            case = Case(name, minutes(alert.duration))
            for other in teams:
                ids = {"cluster_queue": other.cluster_queue, "status": "active"}
                up = leader if other is team else 1
                case.add(names.CQ_STATUS, up, **ids, **LEADER)
                case.add(names.CQ_STATUS, follower if other is team else 0, **ids, **FOLLOWER)
            if not leader:
                ids = {
                    "team": team.name,
                    "cluster_queue": team.cluster_queue,
                    "root_cohort": team.root_cohort,
                }
                case.fired.append(Fired(ids, 1.0))
            cases.append(case)
    return cases


def volcano_queue(scene: Scene, alert: a.Alert) -> list[Case]:
    queues = [(q, t, p) for t in scene.facts.teams.values() for q, p in t.volcano_queues.items()]
    cases = []
    for queue, team, pool in queues[:SAMPLE]:
        for state in ("Open", "Closed"):
            case = Case(f"queue {queue} {state}", minutes(alert.duration))
            for other, _t, _p in queues:
                now = state if other == queue else "Open"
                for value in ("Open", "Closed"):
                    case.add(names.VOLCANO_QUEUE_STATE, int(now == value), queue=other, state=value)
            if state != "Open":
                ids = {"queue": queue, "queue_name": queue, "team": team.name, "pool": pool}
                case.fired.append(Fired(ids, 1.0))
            cases.append(case)
    return cases
