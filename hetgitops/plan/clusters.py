"""Plan stage, multi-cluster fleets: each Cluster's own policy, and what the MultiKueue manager
dispatches to whom.

A cluster's policy is the whole policy narrowed to the pools that name it (team quotas on other
clusters' pools dropped) with the Fleet's versions and targets replaced by the Cluster's. Every
team keeps its namespaces and LocalQueue on every cluster: MultiKueue links a manager job to a
worker by namespace and LocalQueue name only, so those must exist wherever a job may land.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

from hetgitops.model import quantities
from hetgitops.model.policy import (
    MANAGER,
    WORKER,
    Cluster,
    Fleet,
    Policy,
    Team,
    derived,
)
from hetgitops.plan.quota_plan import host_quota, team_plan

# A manager runs no pools: only the queues users submit to and the MultiKueue objects.
MANAGER_TARGETS = ("core", "kueue", "drift-rbac")


def is_multicluster(policy: Policy) -> bool:
    return bool(policy.clusters)


def workers(policy: Policy) -> list[Cluster]:
    """Worker clusters in dispatch preference order (`dispatchOrder`, then name)."""
    found = [c for c in policy.clusters.values() if c.role == WORKER]
    return sorted(found, key=lambda c: (c.dispatch_order, c.name))


def managers(policy: Policy) -> list[Cluster]:
    return [c for c in policy.clusters.values() if c.role == MANAGER]


def cluster_fleet(fleet: Fleet, cluster: Cluster) -> Fleet:
    """The Fleet as `cluster` sees it: its own versions and targets where it states them."""
    targets = cluster.targets or fleet.targets
    if cluster.role == MANAGER and cluster.targets is None:
        targets = tuple(t for t in fleet.targets if t in MANAGER_TARGETS)
    return replace(
        fleet,
        kubernetes=cluster.kubernetes or fleet.kubernetes,
        kueue=cluster.kueue or fleet.kueue,
        volcano=cluster.volcano or fleet.volcano,
        gpu_operator=cluster.gpu_operator or fleet.gpu_operator,
        targets=targets,
    )


def cluster_policy(policy: Policy, name: str) -> Policy:
    """The policy one cluster's tree and per-cluster rules are computed from (memoized)."""
    return derived(policy, ("cluster_policy", name), lambda: _narrow(policy, name))


def _narrow(policy: Policy, name: str) -> Policy:
    cluster = policy.clusters[name]
    pools = {n: p for n, p in policy.pools.items() if p.cluster == name}
    teams = {
        n: replace(t, quotas=tuple(q for q in t.quotas if q.pool in pools))
        for n, t in policy.teams.items()
    }
    return replace(
        policy,
        fleet=None if policy.fleet is None else cluster_fleet(policy.fleet, cluster),
        pools=pools,
        teams=teams,
        clusters={},
        unknown=replace(
            policy.unknown,
            pools={n: c for n, c in policy.unknown.pools.items() if n in pools},
        ),
    )


def team_workers(policy: Policy, team: Team) -> list[Cluster]:
    """The workers holding quota for `team`, in dispatch order: its MultiKueueConfig's list."""
    found = []
    for worker in workers(policy):
        narrowed = cluster_policy(policy, worker.name)
        if team_plan(narrowed, narrowed.teams[team.name]):
            found.append(worker)
    return found


def worker_sums(policy: Policy, team: Team) -> dict[str, str]:
    """What the team's worker ClusterQueues hold together, per resource (cpu and memory first,
    then accelerators by name), computed the way each worker's ClusterQueue is."""
    totals: dict[str, tuple[Decimal, bool]] = {}
    for worker in workers(policy):
        narrowed = cluster_policy(policy, worker.name)
        local = narrowed.teams[team.name]
        for plan in team_plan(narrowed, local):
            cards = plan.cards(plan.nominal) or Fraction(0)
            cpu, memory = host_quota(narrowed, local, cards, plan.pool.name)
            _add(totals, "cpu", cpu)
            _add(totals, "memory", memory)
            for resource, count in sorted(plan.nominal.items()):
                _add(totals, resource, count or 0)
    host = [r for r in ("cpu", "memory") if r in totals]
    ordered = host + sorted(r for r in totals if r not in host)
    return {r: quantities.canonical(*totals[r]) for r in ordered}


def _add(totals: dict[str, tuple[Decimal, bool]], resource: str, amount: str | int) -> None:
    value, binary = quantities.parse(amount)
    before, was_binary = totals.get(resource, (Decimal(0), binary))
    totals[resource] = (before + value, was_binary or binary)


def manager_quota(policy: Policy, team: Team) -> dict[str, str]:
    """The manager ClusterQueue's nominal quota: the workers' sum, with `managerQuota`
    overriding (or adding) single resources."""
    quota = worker_sums(policy, team)
    for resource, amount in team.manager_quota.items():
        quota[resource] = quantities.normalize(amount)
    return quota
