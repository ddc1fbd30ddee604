"""`hetgitops capacity --without NODES|POOL`: what a maintenance window costs, from the policy.

The nodes named (`plan.maintenance.select`) are taken out of their pools and every number is
computed twice by the plan stage, for the whole fleet and for the fleet without them:
- what remains per card type and per pool x resource (`plan.capacity.pool_resources`);
- teams whose nominal quota the remaining nodes no longer back: in a pool whose Σ nominal exceeds
  what remains by S, each team there may miss up to min(nominal, S) of its nominal (Kueue keeps
  admitting up to nominal: quota is ClusterQueue arithmetic, not nodes);
- borrowing that ends: what a team can physically reach above nominal with every other team idle is
  min(reach, capacity) - nominal; where that shrinks, the borrowing ends or shrinks;
- MIG layouts that must drain (the nodes' GPUs and their profiles, `plan.capacity.covered_gpus`);
- the cordon/taint sequence (`steps`).

What Kueue v0.19.2 does with a cordoned node (the reason for the steps' order): a flavor with a
topology (TAS) drops an unschedulable or NotReady node from its node cache
(SchedulerLibraryIntegration is off by default in 0.19), so new TAS admissions stop counting it; a
flavor without a topology never looks at nodes (quota only), so its work is admitted and then waits
at kube-scheduler. With the live Workloads, what Kueue does with those on the nodes (re-admit,
preempt others, leave pending, in its order) is issue 37 item 1's model: `PreemptionModel`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hetgitops.capacity import maintenance_live
from hetgitops.capacity.maintenance_live import LiveOnNodes
from hetgitops.capacity.maintenance_steps import Step, steps
from hetgitops.live import resources
from hetgitops.model.policy import Policy, Pool
from hetgitops.plan import capacity, grants, maintenance
from hetgitops.plan.entitlement import Entitlement, entitlements
from hetgitops.plan.maintenance import Readmission, Selection


@dataclass(frozen=True)
class ResourceLeft:
    pool: str
    card_type: str
    resource: str
    kind: str  # whole | mig PROFILE | replica 1/N (plan.entitlement's label)
    before: int
    after: int
    nominal: int  # Σ of the teams' nominal quota there

    @property
    def shortfall(self) -> int:
        return max(0, self.nominal - self.after)


@dataclass(frozen=True)
class TeamShort:
    team: str
    pool: str
    resource: str
    kind: str
    nominal: int
    unbacked: int  # at most this much of the nominal has no node behind it


@dataclass(frozen=True)
class BorrowEnd:
    team: str
    pool: str
    resource: str
    kind: str
    nominal: int
    reach: int
    before: int  # physically borrowable above nominal, every other team idle
    after: int


@dataclass(frozen=True)
class MigDrain:
    pool: str
    node: str
    gpus: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]  # GPU index, profile counts


@dataclass(frozen=True)
class CardsLeft:
    card_type: str
    before: int
    after: int


class PreemptionModel(Protocol):
    """What Kueue does with the admitted Workloads on the nodes (issue 37 item 1's model,
    `explain.preemption_maintenance.Readmit`, passed in by the CLI: capacity does not import
    explain): `leaving` (namespace/name, on the nodes) in the order Kueue processes them, each
    re-admitted, preempting others, or pending, in the quota of `reduced` (the policy during
    the window) among `workloads` (every quota-holding Workload read)."""

    def readmit(
        self,
        policy: Policy,
        reduced: Policy,
        workloads: Sequence[Mapping[str, Any]],
        leaving: Sequence[str],
    ) -> Sequence[Readmission]: ...


@dataclass(frozen=True)
class MaintenancePlan:
    selectors: tuple[str, ...]
    nodes: tuple[tuple[str, tuple[str, ...], int], ...]  # pool, node names, cards
    cards: tuple[CardsLeft, ...]
    resources: tuple[ResourceLeft, ...]
    short: tuple[TeamShort, ...]
    borrowing: tuple[BorrowEnd, ...]
    drains: tuple[MigDrain, ...]
    steps: tuple[Step, ...]
    today: dt.date | None = None
    live: LiveOnNodes | None = None
    readmissions: tuple[Readmission, ...] | None = None  # PreemptionModel's; None: not asked


def _kinds(rows: Sequence[Entitlement]) -> dict[tuple[str, str], str]:
    return {(e.pool, e.resource): e.label for e in rows}


def _resources(
    policy: Policy, reduced: Policy, selection: Selection, rows: Sequence[Entitlement]
) -> tuple[ResourceLeft, ...]:
    kinds, found = _kinds(rows), []
    for name in selection.nodes:
        pool, card = policy.pools[name], policy.card_type_of(policy.pools[name])
        if card is None:
            continue
        before = capacity.pool_resources(pool, card, policy.fleet)
        after = capacity.pool_resources(reduced.pools[name], card, policy.fleet)
        for resource in sorted(set(before) | set(after)):
            nominal = sum(e.nominal for e in rows if (e.pool, e.resource) == (name, resource))
            kind = kinds.get((name, resource), resource)
            found.append(
                ResourceLeft(
                    name,
                    pool.card_type,
                    resource,
                    kind,
                    before.get(resource, 0),
                    after.get(resource, 0),
                    nominal,
                )
            )
    return tuple(found)


def _short(resources: Sequence[ResourceLeft], rows: Sequence[Entitlement]) -> tuple[TeamShort, ...]:
    found = []
    for left in resources:
        if not left.shortfall:
            continue
        for e in rows:
            if (e.pool, e.resource) == (left.pool, left.resource) and e.nominal:
                unbacked = min(e.nominal, left.shortfall)
                found.append(TeamShort(e.team, e.pool, e.resource, e.label, e.nominal, unbacked))
    return tuple(found)


def _borrowing(
    resources: Sequence[ResourceLeft], rows: Sequence[Entitlement]
) -> tuple[BorrowEnd, ...]:
    found = []
    for left in resources:
        for e in rows:
            if (e.pool, e.resource) != (left.pool, left.resource) or e.reach <= e.nominal:
                continue
            before = max(0, min(e.reach, left.before) - e.nominal)
            after = max(0, min(e.reach, left.after) - e.nominal)
            if after < before:
                found.append(
                    BorrowEnd(
                        e.team, e.pool, e.resource, e.label, e.nominal, e.reach, before, after
                    )
                )
    return tuple(found)


def _drains(policy: Policy, selection: Selection) -> tuple[MigDrain, ...]:
    if policy.fleet is not None and capacity.mig_strategy(policy.fleet) == "none":
        return ()
    found = []
    for name, nodes in selection.nodes.items():
        pool = policy.pools[name]
        for node in nodes if pool.mig else ():
            layout = capacity.covered_gpus(pool, node.cards)
            gpus = tuple((i, tuple(sorted(p.items()))) for i, p in sorted(layout.items()))
            found.append(MigDrain(name, node.name, gpus))
    return tuple(found)


def _cards(policy: Policy, reduced: Policy) -> tuple[CardsLeft, ...]:
    def count(pools: Sequence[Pool]) -> dict[str, int]:
        total: dict[str, int] = {}
        for pool in pools:
            total[pool.card_type] = total.get(pool.card_type, 0) + sum(n.cards for n in pool.nodes)
        return total

    before, after = count(list(policy.pools.values())), count(list(reduced.pools.values()))
    return tuple(
        CardsLeft(card, before[card], after.get(card, 0))
        for card in sorted(before)
        if before[card] != after.get(card, 0)
    )


def build(
    policy: Policy,
    selectors: Sequence[str],
    *,
    today: dt.date | None = None,
    live: LiveOnNodes | None = None,
    preemption: PreemptionModel | None = None,
) -> MaintenancePlan:
    """The plan for taking the nodes `selectors` name out; `selectors` must match
    (`plan.maintenance.select(...).unmatched` empty: the CLI refuses a typo first)."""
    if today is not None:  # time-boxed quota in force that day (plan.grants)
        policy = grants.at(policy, today)
    selection = maintenance.select(policy, selectors)
    reduced = maintenance.without(policy, selection)
    rows = entitlements(policy)
    resources = _resources(policy, reduced, selection, rows)
    drains = _drains(policy, selection)
    return MaintenancePlan(
        tuple(selectors),
        tuple(
            (p, tuple(n.name for n in nodes), sum(n.cards for n in nodes))
            for p, nodes in selection.nodes.items()
        ),
        _cards(policy, reduced),
        resources,
        _short(resources, rows),
        _borrowing(resources, rows),
        drains,
        steps(policy, selection, {d.node for d in drains}),
        today,
        live,
        _readmissions(policy, reduced, live, preemption),
    )


def _readmissions(
    policy: Policy, reduced: Policy, live: LiveOnNodes | None, model: PreemptionModel | None
) -> tuple[Readmission, ...] | None:
    if model is None or live is None:
        return None
    leaving = [f"{w.namespace}/{w.name}" for w in live.workloads]
    return tuple(model.readmit(policy, reduced, live.admitted, leaving))


class UnknownNodes(ValueError):
    """A selector of `--without` names no pool, node, rack or zone of the policy."""


def run(
    policy: Policy,
    selectors: Sequence[str],
    *,
    today: dt.date | None = None,
    read_live: bool = False,
    kubeconfig: Path | None = None,
    context: str | None = None,
    preemption: PreemptionModel | None = None,
) -> MaintenancePlan:
    """`capacity --without`: refuse selectors that match nothing, read the live Workloads on
    the nodes when asked (read-only), and build the plan."""
    selection = maintenance.select(policy, selectors)
    if selection.unmatched or not selection.nodes:
        names = ", ".join(selection.unmatched) or "nothing"
        raise UnknownNodes(
            f"--without {names}: no pool, node, node pattern, rack=NAME or zone=NAME of the "
            f"policy matches (pools: {', '.join(policy.pools) or 'none'})"
        )
    live = None
    if read_live:
        version = policy.fleet.kueue_api_version if policy.fleet else resources.KUEUE_API
        live = maintenance_live.read(
            selection.names, kueue_api_version=version, kubeconfig=kubeconfig, context=context
        )
    return build(policy, selectors, today=today, live=live, preemption=preemption)
