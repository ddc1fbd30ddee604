"""Quotas behave as the policy says, judged by the real Kueue: for each team and pool, a workload
of exactly what hetgitops says the team can reach (nominal + what it may borrow from its cohort,
plan/quota_plan.Reach) is admitted on an idle cluster, and one more unit then pends. An
isolated pool's reach is its nominal quota: it lends and borrows nothing."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from harness.simcluster import cluster, gitops, policyfleet
from harness.simcluster.fleet import node_resources

from hetgitops.model.policy import Policy, Pool, Team
from hetgitops.plan.quota_plan import (
    HOST_RESOURCES,
    accelerator_resources,
    kueue_amount,
    reach,
    team_plan,
)

from .checks import ISSUE_7_ITEM_1, agents_run, eventually, get, settle
from .conftest import NOW, POLICIES

XFAIL_ITEM_1 = pytest.mark.xfail(strict=True, reason=ISSUE_7_ITEM_1)

pytestmark = pytest.mark.sim

LABEL = "hetgitops.io/sim-quota"


def cases() -> list[Any]:
    policy = policyfleet.load(POLICIES, now=NOW)
    found = []
    for team in policy.teams.values():
        for plan in team_plan(policy, team):
            for resource in accelerator_resources([plan]):
                if plan.nominal.get(resource, 0) > 0:
                    marks = [] if agents_run(policy, plan.pool) else [XFAIL_ITEM_1]
                    found.append(pytest.param(team.name, plan.pool.name, resource, marks=marks))
    return sorted(found, key=lambda p: p.values)


def host_cases() -> list[Any]:
    """(team, pool, cpu|memory) for every flavor of every team: what the queue reaches there
    is its own per-card amounts plus the lenders' (quota_plan.Reach, in Kueue's integers)."""
    policy = policyfleet.load(POLICIES, now=NOW)
    return sorted(
        (
            pytest.param(team.name, plan.pool.name, resource)
            for team in policy.teams.values()
            for plan in team_plan(policy, team)
            for resource in HOST_RESOURCES
        ),
        key=lambda p: p.values,
    )


def _queue(sim: cluster.SimCluster, team: str) -> tuple[str, str]:
    for lq in get(sim, "localqueues.kueue.x-k8s.io", "-A")["items"]:
        if lq["spec"].get("clusterQueue") == team:
            return lq["metadata"]["namespace"], lq["metadata"]["name"]
    raise AssertionError(f"no LocalQueue points at ClusterQueue {team}")


def _per_node(policy: Policy, pool: Pool, resource: str) -> int:
    return max(int(node_resources(policy, pool, n).get(resource, "0")) for n in pool.nodes)


def job(
    name: str, namespace: str, queue: str, pool: Pool, resource: str, units: int, per_pod: int
) -> dict[str, Any]:
    """A batch Job of `units` of `resource` in pods of at most `per_pod`, pinned to `pool`."""
    per_pod = math.gcd(units, per_pod) if units % per_pod else per_pod
    pods = units // per_pod
    tolerations = [
        {"key": t.key, "operator": "Equal", "value": t.value or "", "effect": t.effect}
        for t in pool.taints
    ]
    container = {
        "name": "main",
        "image": "busybox",
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi", resource: str(per_pod)},
            "limits": {resource: str(per_pod)},
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": queue, LABEL: "true"},
        },
        "spec": {
            "suspend": True,
            "parallelism": pods,
            "completions": pods,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"hetgitops.io/pool": pool.name},
                    "tolerations": tolerations,
                    "containers": [container],
                }
            },
        },
    }


def host_jobs(
    namespace: str, queue: str, policy: Policy, pool: Pool, resource: str, amount: int
) -> list[dict[str, Any]]:
    """Jobs of one pod each that together ask `amount` of cpu (milli-units) or memory (bytes)
    and a sliver of the other, pinned to `pool`; no accelerator. One pod per node at most a
    node's worth: with a Topology, Kueue admits only what it can also place on the nodes."""
    chunk = min(
        kueue_amount(resource, node_resources(policy, pool, n)[resource]) for n in pool.nodes
    )
    sizes = [chunk] * (amount // chunk) + ([amount % chunk] if amount % chunk else [])
    assert len(sizes) <= len(pool.nodes), f"{amount} {resource} does not fit {pool.name}"
    return [
        host_job(f"sim-quota-full-{i}", namespace, queue, pool, resource, size)
        for i, size in enumerate(sizes)
    ]


def host_job(
    name: str, namespace: str, queue: str, pool: Pool, resource: str, amount: int
) -> dict[str, Any]:
    obj = job(name, namespace, queue, pool, "cpu", 1, 1)
    requests = {"cpu": "1m", "memory": "1"}
    requests[resource] = f"{amount}m" if resource == "cpu" else str(amount)
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": requests}
    return obj


def workload_state(sim: cluster.SimCluster, namespace: str, job_name: str) -> str | None:
    for wl in get(sim, "workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        owners = [o["name"] for o in wl["metadata"].get("ownerReferences", [])]
        if job_name in owners:
            if wl.get("status", {}).get("admission"):
                return "admitted"
            conditions = {c["type"]: c for c in wl.get("status", {}).get("conditions", [])}
            pending = conditions.get("QuotaReserved")
            if pending is not None and pending["status"] == "False":
                return "pending: " + pending.get("message", "")
    return None


@pytest.mark.parametrize(("team_name", "pool_name", "resource"), host_cases())
def test_team_reaches_exactly_its_predicted_host_limit(
    sim: cluster.SimCluster,
    fleet_policy: Policy,
    synced: Path,
    team_name: str,
    pool_name: str,
    resource: str,
) -> None:
    team, pool = fleet_policy.teams[team_name], fleet_policy.pools[pool_name]
    most = reach(fleet_policy).most(team, pool, resource)
    assert most is not None and most > 0
    namespace, queue = _queue(sim, team_name)
    full = host_jobs(namespace, queue, fleet_policy, pool, resource, most)
    extra = host_job("sim-quota-extra", namespace, queue, pool, resource, 1)
    _full_then_one_more(sim, namespace, [*full, extra], f"{team_name} {pool_name} {resource}")


def _full_then_one_more(
    sim: cluster.SimCluster, namespace: str, jobs: list[dict[str, Any]], what: str
) -> None:
    """Every job but the last is admitted on the idle queue; the last (one unit more than the
    team can reach) then pends."""
    wanted = ["admitted"] * (len(jobs) - 1) + ["pending"]
    try:
        for obj, verdict in zip(jobs, wanted, strict=True):
            gitops.apply_objects(sim, [obj], manager="hetgitops-sim-user")
            name = obj["metadata"]["name"]
            state = eventually(
                lambda n=name: workload_state(sim, namespace, n), timeout=60, what="a verdict"
            )
            assert state.startswith(verdict), f"{what}: {name}: {verdict}? Kueue: {state}"
    finally:
        gitops.prune(sim, jobs[::-1])
        settle(
            lambda: [
                w["metadata"]["name"]
                for w in get(sim, "workloads.kueue.x-k8s.io", "-n", namespace)["items"]
            ],
            timeout=60,
            what="workloads left",
        )


@pytest.mark.parametrize(("team_name", "pool_name", "resource"), cases())
def test_team_reaches_exactly_its_predicted_limit(
    sim: cluster.SimCluster,
    fleet_policy: Policy,
    synced: Path,
    team_name: str,
    pool_name: str,
    resource: str,
) -> None:
    policy = fleet_policy
    team: Team = policy.teams[team_name]
    pool = policy.pools[pool_name]
    most = reach(policy).most(team, pool, resource)
    assert most is not None and most > 0
    namespace, queue = _queue(sim, team_name)
    per_node = _per_node(policy, pool, resource)
    full = job("sim-quota-full", namespace, queue, pool, resource, most, per_node)
    extra = job("sim-quota-extra", namespace, queue, pool, resource, 1, 1)
    what = f"{team_name} in {pool_name}, {most} {resource} (nominal + borrowable per hetgitops)"
    _full_then_one_more(sim, namespace, [full, extra], what)
