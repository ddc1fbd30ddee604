"""Compile stage, `monitoring` target: the usage scenarios of the generated promtool tests.

One function per alert: it picks a few entities of the policy (`SAMPLE`), synthesises the
exporter series a cluster would show (ready, degraded, idle, busy...) and states which alerts
the policy's arithmetic expects, with their values. Traps are built in where a rule could be
subtly wrong: a second kube-state-metrics replica (double counting), a Kueue follower replica
reporting stale numbers, `DCGM_FI_DEV_GPU_UTIL` on MIG GPUs (not reported there upstream).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

from hetgitops.compilers import nvidia
from hetgitops.compilers.monitoring import alerts as a
from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring.facts import Facts, PoolFacts, TeamFacts, seconds
from hetgitops.compilers.monitoring.policy_rules import number
from hetgitops.compilers.monitoring.promtests import INTERVAL_MINUTES, SAMPLE, Case, Fired
from hetgitops.model import mig
from hetgitops.model.policy import Fleet, Node, Policy, Pool
from hetgitops.plan import capacity
from hetgitops.plan.node_labels import domain

LEADER = {"replica_role": "leader"}
FOLLOWER = {"replica_role": "follower"}


def _minutes(duration: str | None, extra: int = INTERVAL_MINUTES) -> int:
    """An evaluation time past `duration` (an alert's `for`), on the tests' 5-minute grid."""
    minutes = math.ceil(seconds(duration or "0s") / 60) + extra
    return math.ceil(minutes / INTERVAL_MINUTES) * INTERVAL_MINUTES


def node_units(policy: Policy, fleet: Fleet, pool: Pool, node: Node) -> dict[str, int]:
    """What the device plugin advertises on one node (Kueue resource names)."""
    card = policy.card_type_of(pool)
    if card is None:
        return {}
    strategy = capacity.mig_strategy(fleet)
    layout = capacity.covered_gpus(pool, node.cards) if pool.mig and strategy != "none" else {}
    units: Counter[str] = Counter()
    units[capacity.main_resource(pool, card)] += (node.cards - len(layout)) * pool.shared_replicas
    for profiles in layout.values():
        for profile, count in profiles.items():
            name = card.resource_name if strategy == "single" else mig.resource_name(profile)
            units[name] += count
    return {r: n for r, n in sorted(units.items()) if n}


def _cards(units: dict[str, int], pool: PoolFacts) -> Fraction:
    return sum((n * pool.weights.get(r, Fraction(1)) for r, n in units.items()), Fraction(0))


class Builder:
    def __init__(self, policy: Policy, fleet: Fleet, found: Facts) -> None:
        self.policy, self.fleet, self.facts = policy, fleet, found
        prefix = domain(policy)
        self.pool_label = names.node_label(f"{prefix}/pool")
        self.card_label = names.node_label(f"{prefix}/card-type")

    def node(self, case: Case, pool: PoolFacts, node: str, **extra: str) -> None:
        labels = {self.pool_label: pool.name, self.card_label: pool.card_type, **extra}
        case.add(names.NODE_LABELS, 1, node=node, **labels)

    # -- capacity ---------------------------------------------------------------------------

    def capacity(self, alert: a.Alert) -> list[Case]:
        committed = [p for p in self.facts.pools.values() if p.committed_cards > 0]
        cases: list[Case] = []
        for pool in committed[:SAMPLE]:
            for degraded in (False, True):
                cases.append(self._capacity_case(alert, pool, committed, degraded=degraded))
        return cases

    def _capacity_case(
        self, alert: a.Alert, pool: PoolFacts, committed: list[PoolFacts], *, degraded: bool
    ) -> Case:
        case = Case(
            f"pool {pool.name} {'degraded' if degraded else 'ready'}", _minutes(alert.duration)
        )
        nodes = self.policy.pools[pool.name].nodes
        live = sum((_cards(self._units(pool, n), pool) for n in nodes), Fraction(0))
        cordoned: set[str] = set()
        for node in nodes if degraded else ():
            if live < pool.committed_cards:
                break
            cordoned.add(node.name)
            live -= _cards(self._units(pool, node), pool)
        replicas = ("ksm-0", "ksm-1") if degraded else ("ksm-0",)
        for node in nodes:
            self.node(case, pool, node.name)
            for instance in replicas:
                for resource, count in self._units(pool, node).items():
                    case.add(
                        names.NODE_ALLOCATABLE,
                        count,
                        node=node.name,
                        instance=instance,
                        resource=names.sanitise(resource),
                        unit="integer",
                    )
                case.add(
                    names.NODE_ALLOCATABLE,
                    64,
                    node=node.name,
                    instance=instance,
                    resource="cpu",
                    unit="core",
                )
                case.add(
                    names.NODE_UNSCHEDULABLE,
                    int(node.name in cordoned),
                    node=node.name,
                    instance=instance,
                )
        ids = {"pool": pool.name, "card_type": pool.card_type}
        if live < pool.committed_cards:
            case.fired.append(Fired(ids, float(live)))
        # Pools without nodes in this test have no schedulable cards at all.
        for other in committed:
            if other.name != pool.name:
                case.fired.append(Fired({"pool": other.name, "card_type": other.card_type}, 0.0))
        return case

    def _units(self, pool: PoolFacts, node: Node) -> dict[str, int]:
        return node_units(self.policy, self.fleet, self.policy.pools[pool.name], node)

    # -- idle -------------------------------------------------------------------------------

    def idle(self, alert: a.Alert) -> list[Case]:
        pairs = [
            (team, self.facts.pools[pool])
            for team in self.facts.teams.values()
            for flavor, pool in team.pools.items()
            if self.facts.pools[pool].nvidia and _nominal_resource(team, flavor, self.facts)
        ]
        chosen = [p for p in pairs if p[1].mig][:1]
        chosen += [p for p in pairs if not p[1].mig][: SAMPLE - len(chosen)]
        threshold = self.fleet.monitoring.idle_percent
        cases = []
        for team, pool in chosen:
            for busy in (False, True):
                percent = (threshold + 100) / 2 if busy else threshold / 2
                cases.append(self._idle_case(alert, team, pool, percent, fires=not busy))
        return cases

    def _idle_case(
        self, alert: a.Alert, team: TeamFacts, pool: PoolFacts, percent: float, *, fires: bool
    ) -> Case:
        state = "idle" if fires else "busy"
        case = Case(f"team {team.name} in {pool.name} {state}", _minutes(alert.duration))
        node = self.policy.pools[pool.name].nodes[0]
        self.node(case, pool, node.name)
        namespace, pod = team.namespaces[0], "work-0"
        owner = {"namespace": namespace, "pod": pod, "container": "main"}
        card = self.policy.card_types[self.policy.pools[pool.name].card_type]
        model = card.product_names[0] if card.product_names else card.model
        for gpu in range(node.cards):
            ids = {
                "gpu": str(gpu),
                "UUID": f"GPU-{node.name}-{gpu}",
                "modelName": model,
                "Hostname": node.name,
                **owner,
            }
            if pool.mig:
                case.add(
                    names.GR_ENGINE_ACTIVE, percent / 100, GPU_I_ID="1", GPU_I_PROFILE="1g", **ids
                )
                case.add(names.GPU_UTIL, 100 - percent, **ids)  # trap: not reported upstream
            else:
                case.add(names.GPU_UTIL, percent, **ids)
        flavor = next(f for f, p in team.pools.items() if p == pool.name)
        resource = _nominal_resource(team, flavor, self.facts)
        case.add(
            names.POD_REQUESTS,
            1,
            node=node.name,
            resource=names.sanitise(resource),
            unit="integer",
            **owner,
        )
        case.add(names.POD_PHASE, 1, namespace=namespace, pod=pod, phase="Running")
        if fires:
            ids = {"team": team.name, "pool": pool.name, "card_type": pool.card_type}
            case.fired.append(Fired(ids, percent / 100))
        return case

    # -- pending while the cohort idles -----------------------------------------------------

    def pending(self, alert: a.Alert) -> list[Case]:
        cases = []
        for team in [t for t in self.facts.teams.values() if t.root_cohort][:SAMPLE]:
            lender = self._lender(team)
            if lender is None:
                continue
            other, flavor, pool = lender
            for busy in (False, True):
                cases.append(self._pending_case(alert, team, other, flavor, pool, busy=busy))
        return cases

    def _lender(self, team: TeamFacts) -> tuple[TeamFacts, str, PoolFacts] | None:
        types = {self.facts.pools[p].card_type for p in team.pools.values()}
        peers = [t for t in self.facts.teams.values() if t.root_cohort == team.root_cohort]
        peers.sort(key=lambda t: (t.name == team.name, t.name))  # another team first
        for peer in peers:
            for flavor, counts in peer.nominal.items():
                pool = self.facts.pools[peer.pools[flavor]]
                if pool.card_type in types and _cards(dict(counts), pool) >= 1:
                    return peer, flavor, pool
        return None

    def _pending_case(
        self,
        alert: a.Alert,
        team: TeamFacts,
        lender: TeamFacts,
        flavor: str,
        pool: PoolFacts,
        *,
        busy: bool,
    ) -> Case:
        name = f"team {team.name} pending, {lender.name} {'busy' if busy else 'idle'} in {flavor}"
        case = Case(name, _minutes(alert.duration))
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

    # -- admission wait ---------------------------------------------------------------------

    def wait(self, alert: a.Alert) -> list[Case]:
        cases = []
        for tier, objective in list(self.facts.tiers.items())[:SAMPLE]:
            team = next((t for t in self.facts.teams.values() if tier in t.tiers), None)
            if team is None:
                continue
            for slow in (False, True):
                cases.append(self._wait_case(alert, tier, objective, team, slow=slow))
        return cases

    def _wait_case(
        self, alert: a.Alert, tier: str, objective: float, team: TeamFacts, *, slow: bool
    ) -> Case:
        case = Case(f"tier {tier} in {team.name} {'slow' if slow else 'fast'}", 30)
        low, high = objective / 2, objective * 2
        ids = {"cluster_queue": team.cluster_queue, "priority_class": tier, **LEADER}
        case.counter(names.ADMISSION_WAIT + "_bucket", 0 if slow else 10, le=number(low), **ids)
        case.counter(names.ADMISSION_WAIT + "_bucket", 10, le=number(high), **ids)
        case.counter(names.ADMISSION_WAIT + "_bucket", 10, le="+Inf", **ids)
        p = self.fleet.monitoring.wait_percentile
        if slow:  # every admission waited between low and high: Prometheus interpolates
            labels = {
                "cluster_queue": team.cluster_queue,
                "priority_class": tier,
                "quantile": number(p),
            }
            case.fired.append(Fired(labels, low + (high - low) * p))
        return case

    # -- budget -----------------------------------------------------------------------------

    def budget(self, alert: a.Alert) -> list[Case]:
        cases = []
        budgeted = [t for t in self.facts.teams.values() if t.budget_monthly is not None]
        for team in budgeted:
            priced = self._priced(team)
            hourly = sum(n * c for _f, _r, n, c in priced)
            if hourly <= 0:
                continue
            limit = (team.budget_monthly or 0) * self.fleet.monitoring.budget_percent / 100
            over = math.floor(limit / (hourly * a.HOURS_PER_MONTH)) + 1
            for scale in sorted({0, 1, over}):
                cases.append(self._budget_case(alert, team, priced, scale, limit))
            if len(cases) >= 3 * SAMPLE:
                break
        return cases

    def _priced(self, team: TeamFacts) -> list[tuple[str, str, int, float]]:
        found = []
        for flavor, counts in team.nominal.items():
            pool = self.facts.pools[team.pools[flavor]]
            for resource, count in counts.items():
                if pool.cost_per_hour is not None and count:
                    cost = pool.cost_per_hour * float(pool.weights.get(resource, Fraction(1)))
                    found.append((flavor, resource, count, cost))
        return found

    def _budget_case(
        self,
        alert: a.Alert,
        team: TeamFacts,
        priced: list[tuple[str, str, int, float]],
        scale: int,
        limit: float,
    ) -> Case:
        case = Case(f"team {team.name} using {scale}x its quota", _minutes(alert.duration, 10))
        for flavor, resource, count, _cost in priced:
            ids = {"cluster_queue": team.cluster_queue, "flavor": flavor, "resource": resource}
            case.add(names.USAGE, count * scale, **ids, **LEADER)
        monthly = sum(count * scale * cost for _f, _r, count, cost in priced) * a.HOURS_PER_MONTH
        if monthly > limit:
            case.fired.append(Fired({"team": team.name}, monthly))
        return case

    # -- transition pools -------------------------------------------------------------------

    def expired(self, alert: a.Alert) -> list[Case]:
        """promtool's clock starts at 1970: an expiry date is never reached in a test, so
        the case checks the alert stays silent before expiry and the usage it would read."""
        cases = []
        for pool in [p for p in self.facts.pools.values() if p.expires][:SAMPLE]:
            user = next(
                (t for t in self.facts.teams.values() if pool.name in t.pools.values()), None
            )
            if user is None:
                continue
            flavor = next(f for f, p in user.pools.items() if p == pool.name)
            case = Case(f"pool {pool.name} in use before its expiry", 10)
            for resource, count in user.nominal[flavor].items():
                ids = {"cluster_queue": user.cluster_queue, "flavor": flavor, "resource": resource}
                case.add(names.USAGE, count, **ids, **LEADER)
            used = _cards(dict(user.nominal[flavor]), pool)
            if used.denominator == 1 and used > 0:
                ids = {"pool": pool.name, "card_type": pool.card_type}
                case.samples.append(("hetgitops:pool_usage_cards", ids, float(used)))
            cases.append(case)
        return cases

    # -- MIG --------------------------------------------------------------------------------

    def mig(self, alert: a.Alert) -> list[Case]:
        cases = []
        for pool in [p for p in self.facts.pools.values() if p.mig_configs][:SAMPLE]:
            node = self.policy.pools[pool.name].nodes[0]
            found = nvidia.node_mig_config(self.policy, self.policy.pools[pool.name], node)
            declared = found[0] if found else pool.mig_configs[0]
            foreign = "hetgitops-test-foreign"
            for config, state in (
                (declared, "success"),
                (declared, "failed"),
                (foreign, "success"),
            ):
                name = f"pool {pool.name} node {node.name} {config} {state}"
                case = Case(name, _minutes(alert.duration))
                self.node(
                    case,
                    pool,
                    node.name,
                    **{
                        names.node_label(names.MIG_CONFIG_LABEL): config,
                        names.node_label(names.MIG_STATE_LABEL): state,
                    },
                )
                if state != "success" or config not in pool.mig_configs:
                    ids = {
                        "node": node.name,
                        "pool": pool.name,
                        "mig_config": config,
                        "mig_state": state,
                    }
                    case.fired.append(Fired(ids, 1.0))
                cases.append(case)
        return cases

    # -- queue states -----------------------------------------------------------------------

    def cluster_queue(self, alert: a.Alert) -> list[Case]:
        teams = list(self.facts.teams.values())
        cases = []
        for team in teams[:SAMPLE]:
            for leader, follower in ((1, 0), (0, 0), (0, 1)):
                name = f"{team.cluster_queue} leader active={leader} follower active={follower}"
                case = Case(name, _minutes(alert.duration))
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

    def volcano_queue(self, alert: a.Alert) -> list[Case]:
        queues = [(q, t, p) for t in self.facts.teams.values() for q, p in t.volcano_queues.items()]
        cases = []
        for queue, team, pool in queues[:SAMPLE]:
            for state in ("Open", "Closed"):
                case = Case(f"queue {queue} {state}", _minutes(alert.duration))
                for other, _t, _p in queues:
                    now = state if other == queue else "Open"
                    for value in ("Open", "Closed"):
                        case.add(
                            names.VOLCANO_QUEUE_STATE, int(now == value), queue=other, state=value
                        )
                if state != "Open":
                    ids = {"queue": queue, "queue_name": queue, "team": team.name, "pool": pool}
                    case.fired.append(Fired(ids, 1.0))
                cases.append(case)
        return cases


def _nominal_resource(team: TeamFacts, flavor: str, found: Facts) -> str:
    """A resource the team holds quota of in `flavor` (MIG slices first in MIG pools)."""
    counts = team.nominal.get(flavor, {})
    held = [r for r, n in counts.items() if n]
    held.sort(key=lambda r: (not r.startswith(mig.resource_name("")), r))
    return held[0] if held else ""


def cases(policy: Policy, fleet: Fleet, found: Facts, alert: a.Alert) -> list[Case]:
    builder = Builder(policy, fleet, found)
    makers: dict[str, Callable[[a.Alert], list[Case]]] = {
        a.CAPACITY: builder.capacity,
        a.IDLE: builder.idle,
        a.PENDING: builder.pending,
        a.WAIT: builder.wait,
        a.BUDGET: builder.budget,
        a.EXPIRED: builder.expired,
        a.MIG: builder.mig,
        a.CQ_STATE: builder.cluster_queue,
        a.VOLCANO_STATE: builder.volcano_queue,
    }
    return makers[alert.name](alert)
