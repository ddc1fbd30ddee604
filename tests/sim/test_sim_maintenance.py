"""`capacity --without` judged by the real Kueue and kube-scheduler: the plan's own kubectl
cordon and taint commands are run on the named kwok nodes, then a job of exactly what the plan
says the team can physically reach during the window (min(reach, what remains)) is admitted
and placed, and one GPU more pends (Kueue v0.19.2's topology-aware flavor drops cordoned nodes
from its TAS cache, pkg/cache/scheduler/tas_nodes_cache.go:57-65). The plan's untaint and
uncordon commands restore the nodes."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from harness.simcluster import cluster

from hetgitops.capacity import maintenance
from hetgitops.model.policy import Policy

from .checks import get, settle
from .test_sim_quota import _full_then_one_more, _per_node, _queue, job

pytestmark = pytest.mark.sim

TEAM, POOL, GPU = "pretraining", "a800-train", "nvidia.com/gpu"
WINDOW = ("rack=rack-a03", "rack=rack-a04")


def _run(sim: cluster.SimCluster, commands: list[str]) -> None:
    for command in commands:
        args = shlex.split(command)
        assert args[0] == "kubectl"
        sim.kubectl(*args[1:])


def _unschedulable(sim: cluster.SimCluster, names: set[str]) -> set[str]:
    nodes = get(sim, "nodes")["items"]
    return {n["metadata"]["name"] for n in nodes if n["spec"].get("unschedulable")} & names


def test_kueue_admits_what_the_plan_says_remains(
    sim: cluster.SimCluster, fleet_policy: Policy, synced: Path
) -> None:
    plan = maintenance.build(fleet_policy, WINDOW)
    ((pool_name, nodes, cards),) = plan.nodes
    assert (pool_name, len(nodes), cards) == (POOL, 8, 64)
    (left,) = [r for r in plan.resources if r.resource == GPU]
    pool = fleet_policy.pools[POOL]
    (row,) = [b for b in plan.borrowing if b.team == TEAM and b.resource == GPU]
    # What the team physically reaches during the window with every other team idle: the
    # plan's borrowing row (nominal + borrowable after) capped by what remains.
    most = min(row.nominal + row.after, left.after)
    assert (most, row.before, row.after) == (64, 12, 0)
    verbs = [(s.command, s.command.split()[1]) for s in plan.steps]
    before = [
        c for c, verb in verbs if verb == "cordon" or (verb == "taint" and not c.endswith("-"))
    ]
    after = [c for c, verb in verbs if verb == "uncordon" or (verb == "taint" and c.endswith("-"))]
    assert len(before) == len(after) == 16
    names = set(nodes)
    try:
        _run(sim, before)
        settle(lambda: sorted(names - _unschedulable(sim, names)), timeout=60, what="cordoned")
        namespace, queue = _queue(sim, TEAM)
        full = job(
            "sim-window-full", namespace, queue, pool, GPU, most, _per_node(fleet_policy, pool, GPU)
        )
        extra = job("sim-window-extra", namespace, queue, pool, GPU, 1, 1)
        _full_then_one_more(sim, namespace, [full, extra], f"{TEAM} without {WINDOW}: {most}")
    finally:
        _run(sim, after)
        settle(lambda: sorted(_unschedulable(sim, names)), timeout=60, what="uncordoned")
