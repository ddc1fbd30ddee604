"""Compile stage, `monitoring` target: the policy's numbers the rules, tests and dashboards use.

Computed once per policy (`derived`) from the same plan the Kueue and Volcano compilers use, so
an alert's "committed quota" is exactly the sum of the rendered nominal quotas in cards.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction

from hetgitops.compilers import nvidia
from hetgitops.model.policy import CardType, Fleet, Policy, Pool, Team, derived
from hetgitops.plan import capacity, dra
from hetgitops.plan import node_labels as labels
from hetgitops.plan.flavors import flavor_name
from hetgitops.plan.quota_plan import cohort_root, team_plan
from hetgitops.plan.volcano_quota import leaf_queue_name


@dataclass(frozen=True)
class PoolFacts:
    name: str
    card_type: str
    flavor: str
    nvidia: bool
    mig: bool  # utilisation from GR_ENGINE_ACTIVE (MIG instances), not GPU_UTIL
    # GPUs as DRA devices (claims or the extended-resource path): no Node allocatable shows
    # them, so live capacity is the GPUs dcgm-exporter sees (`recording.NODE_CARDS`).
    dra: bool
    declared_cards: int
    committed_cards: Fraction  # Σ teams' nominal quota in physical cards
    weights: Mapping[str, Fraction]  # resource (Kueue spelling) -> cards per unit of quota
    # The same per unit a node holds (kube_node_status_allocatable, pod requests): during a
    # staged sharing reduction a replica there is 1/retiringReplicas of a card (plan/capacity).
    node_weights: Mapping[str, Fraction]
    slices: frozenset[str]  # the resources whose unit is a MIG instance (`capacity.is_mig`)
    # On a DRA pool with MIG: the card share of one instance per profile, as `node_weights`
    # weighs its resource, so the instances dcgm-exporter reports count as the device plugin's.
    profile_weights: Mapping[str, Fraction]
    cost_per_hour: float | None  # one card
    mig_configs: tuple[str, ...]  # the nvidia.com/mig.config values its nodes are given
    expires: dt.date | None


@dataclass(frozen=True)
class TeamFacts:
    name: str
    cluster_queue: str
    root_cohort: str  # "" without a cohort
    namespaces: tuple[str, ...]
    tiers: tuple[str, ...]
    budget_monthly: float | None
    nominal: Mapping[str, Mapping[str, int]]  # flavor -> resource -> units
    pools: Mapping[str, str]  # flavor -> pool
    volcano_queues: Mapping[str, str]  # queue -> pool


@dataclass(frozen=True)
class Facts:
    pools: Mapping[str, PoolFacts]
    teams: Mapping[str, TeamFacts]
    tiers: Mapping[str, float]  # tier -> admission wait objective in seconds
    volcano: bool


def facts(policy: Policy, fleet: Fleet) -> Facts:
    return derived(policy, "monitoring_facts", lambda: _facts(policy, fleet))


def seconds(duration: str) -> float:
    """A Prometheus duration in seconds (`1h30m` -> 5400)."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    total, number = 0.0, ""
    i = 0
    while i < len(duration):
        if duration[i].isdigit():
            number += duration[i]
            i += 1
            continue
        unit = "ms" if duration.startswith("ms", i) else duration[i]
        total += int(number) * units[unit]
        number, i = "", i + len(unit)
    return total


def _uses_mig(pool: Pool, fleet: Fleet) -> bool:
    return bool(pool.mig) and fleet.mig_strategy != "none"


def _pool(policy: Policy, fleet: Fleet, pool: Pool, card: CardType) -> PoolFacts:
    offered = capacity.pool_resources(pool, card, fleet)
    weights = {r: capacity.unit_weight(pool, card, r, fleet) for r in offered}
    held = {r: capacity.unit_weight(pool, card, r, fleet, replicas="advertised") for r in offered}
    slices = frozenset(r for r in offered if capacity.is_mig(pool, card, r, fleet))
    profiles = {
        profile: held[r]
        for r in sorted(slices)
        for profile in capacity.mig_profiles(pool, card, r, fleet)
    }
    configs = sorted(
        {found[0] for node in pool.nodes if (found := nvidia.node_mig_config(policy, pool, node))}
    )
    return PoolFacts(
        name=pool.name,
        card_type=labels.label_value(card.name),
        flavor=flavor_name(policy, fleet, pool),
        nvidia=nvidia.is_nvidia(card),
        mig=_uses_mig(pool, fleet),
        dra=dra.on_dra(pool),
        declared_cards=sum(node.cards for node in pool.nodes),
        committed_cards=Fraction(0),
        weights=weights,
        node_weights=held,
        slices=slices,
        profile_weights=profiles if dra.on_dra(pool) else {},
        cost_per_hour=card.cost_per_hour,
        mig_configs=tuple(configs),
        expires=pool.expires,
    )


def _team(policy: Policy, fleet: Fleet, team: Team) -> TeamFacts:
    plans = team_plan(policy, team)
    nominal = {flavor_name(policy, fleet, p.pool): dict(p.nominal) for p in plans}
    return TeamFacts(
        name=team.name,
        cluster_queue=team.name,
        root_cohort=cohort_root(policy, team.cohort) if team.cohort else "",
        namespaces=team.namespaces,
        tiers=team.tiers,
        budget_monthly=team.budget_monthly,
        nominal=nominal,
        pools={flavor_name(policy, fleet, p.pool): p.pool.name for p in plans},
        # A team queue (`volcano.layout: team`) spans the pools: no pool label.
        volcano_queues={
            leaf_queue_name(team, p.pool.name): "" if team.volcano_layout == "team" else p.pool.name
            for p in plans
        },
    )


def _facts(policy: Policy, fleet: Fleet) -> Facts:
    pools: dict[str, PoolFacts] = {}
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        if card is not None:
            pools[pool.name] = _pool(policy, fleet, pool, card)
    committed: dict[str, Fraction] = {}
    for team in policy.teams.values():
        for plan in team_plan(policy, team):
            cards = plan.cards(plan.nominal) or Fraction(0)
            committed[plan.pool.name] = committed.get(plan.pool.name, Fraction(0)) + cards
    pools = {
        name: _with_committed(p, committed.get(name, Fraction(0))) for name, p in pools.items()
    }
    teams = {t.name: _team(policy, fleet, t) for t in policy.teams.values()}
    wait = fleet.monitoring
    tiers = {t: seconds(wait.wait_tiers.get(t, wait.wait_default)) for t in policy.tiers}
    volcano = "volcano" in fleet.targets and fleet.volcano is not None
    return Facts(pools, teams, tiers, volcano)


def _with_committed(pool: PoolFacts, cards: Fraction) -> PoolFacts:
    return replace(pool, committed_cards=cards)
