"""Split the sim slice into shards that run side by side, each on its own simulated cluster.

The slice mostly waits (on controllers, queues and timers: a warm run used half a core over 48
minutes), so two shards on two clusters take about half the wall time on a 2-core machine.
`HETGITOPS_SIM_SHARD=K/N` keeps the modules of shard K of N; .ci/run gives each shard its own
HETGITOPS_SIMCLUSTER_DIR and HETGITOPS_PORT_RANGE (tests/controlplane/procs.py).

Whole modules move (their module fixtures stay shared), longest first onto the least loaded
shard, by the wall seconds each module took in a measured run (COST). A module missing from
COST counts DEFAULT_COST; tests/sim/test_simcluster_units.py says when one is missing.
"""

from __future__ import annotations

import os

SHARD = "HETGITOPS_SIM_SHARD"
DEFAULT_COST = 120.0

# Wall seconds per module (setup, calls and teardown) in the sim slice of a warm `.ci/run`
# (measured with `pytest -m sim --durations=0`, 2026-12-05, one cluster, 2-core machine).
COST: dict[str, float] = {
    "test_sim_argocd.py": 60.0,
    "test_sim_bundled.py": 120.0,
    "test_sim_busy.py": 120.0,
    "test_sim_day2.py": 150.0,
    "test_sim_day2_busy.py": 700.0,
    "test_sim_explain.py": 320.0,
    "test_sim_flavor_rename.py": 90.0,
    "test_sim_flux.py": 60.0,
    "test_sim_grants.py": 60.0,
    "test_sim_import.py": 120.0,
    "test_sim_koordinator.py": 120.0,
    "test_sim_koordinator_fleet.py": 450.0,
    "test_sim_kuberay.py": 90.0,
    "test_sim_kuberay_explain.py": 180.0,
    "test_sim_maintenance.py": 90.0,
    "test_sim_multicluster.py": 120.0,
    "test_sim_preempt.py": 220.0,
    "test_sim_quota.py": 200.0,
    "test_sim_volcano.py": 90.0,
    "test_sim_volcano_day2.py": 150.0,
}


def parse(spec: str) -> tuple[int, int] | None:
    """`K/N` (1 <= K <= N) as (K, N); None for an empty spec (no sharding)."""
    if not spec:
        return None
    index, _, count = spec.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise ValueError(f"${SHARD}={spec!r}: want K/N with 1 <= K <= N")
    return int(index), int(count)


def assign(modules: list[str], count: int) -> dict[str, int]:
    """Module file name -> shard (1..count): longest first onto the least loaded shard, ties to
    the lower shard; deterministic for the same set of modules."""
    loads = [0.0] * count
    found: dict[str, int] = {}
    for name in sorted(modules, key=lambda m: (-COST.get(m, DEFAULT_COST), m)):
        shard = min(range(count), key=lambda i: (loads[i], i))
        loads[shard] += COST.get(name, DEFAULT_COST)
        found[name] = shard + 1
    return found


def current() -> tuple[int, int] | None:
    return parse(os.environ.get(SHARD, ""))
