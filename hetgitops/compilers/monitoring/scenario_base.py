"""Compile stage, `monitoring` target: what every promtool scenario builds on: the `Scene`
(the policy, its monitoring facts and the node-label names the rules join on), units in
cards, the evaluation time past an alert's `for`, and the Kueue metric labels of the leader
and a (stale) follower replica."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring.facts import Facts, PoolFacts, TeamFacts, seconds
from hetgitops.compilers.monitoring.promtests import INTERVAL_MINUTES, Case
from hetgitops.model.policy import Fleet, Policy
from hetgitops.plan.node_labels import domain

LEADER = {"replica_role": "leader"}
FOLLOWER = {"replica_role": "follower"}


def minutes(duration: str | None, extra: int = INTERVAL_MINUTES) -> int:
    """An evaluation time past `duration` (an alert's `for`), on the tests' 5-minute grid."""
    total = math.ceil(seconds(duration or "0s") / 60) + extra
    return math.ceil(total / INTERVAL_MINUTES) * INTERVAL_MINUTES


def cards(units: Mapping[str, int], weights: Mapping[str, Fraction]) -> Fraction:
    """The units in whole cards, by `weights` (a pool's `weights` for quota units, its
    `node_weights` for what a node holds: a MIG slice or a shared replica weighs less)."""
    return sum((n * weights.get(r, Fraction(1)) for r, n in units.items()), Fraction(0))


class Scene:
    """What one alert's scenarios read: the policy, its fleet and monitoring facts."""

    def __init__(self, policy: Policy, fleet: Fleet, found: Facts) -> None:
        self.policy, self.fleet, self.facts = policy, fleet, found
        prefix = domain(policy)
        self.pool_label = names.node_label(f"{prefix}/pool")
        self.card_label = names.node_label(f"{prefix}/card-type")

    def node(self, case: Case, pool: PoolFacts, node: str, **extra: str) -> None:
        """The node's kube_node_labels series: its pool and card type, and `extra` labels."""
        labels = {self.pool_label: pool.name, self.card_label: pool.card_type, **extra}
        case.add(names.NODE_LABELS, 1, node=node, **labels)


def nominal_resource(team: TeamFacts, flavor: str, found: Facts) -> str:
    """A resource the team holds quota of in `flavor` (MIG slices first in MIG pools, as
    the plan tells them: `nvidia.com/gpu` under migStrategy single, the DRA quota resources
    of a pool on claims)."""
    counts = team.nominal.get(flavor, {})
    pool = found.pools.get(team.pools.get(flavor, ""))
    slices = pool.slices if pool else frozenset()
    held = [r for r, n in counts.items() if n]
    held.sort(key=lambda r: (r not in slices, r))
    return held[0] if held else ""
