"""Split the sim slice into shards that run side by side, each on its own simulated cluster.

The slice mostly waits (on controllers, queues and timers: a warm run used half a core over 48
minutes), so shards on their own clusters side by side take a fraction of the wall time on a
2-core machine. `HETGITOPS_SIM_SHARD=K/N` keeps the modules of shard K of N; .ci/sim-slice runs
$HETGITOPS_SIM_SHARDS of them (3 unless set) and gives each its own HETGITOPS_SIMCLUSTER_DIR and
HETGITOPS_PORT_RANGE (tests/harness/controlplane/procs.py).

Whole modules move (their module fixtures stay shared), longest first onto the least loaded
shard, by the wall seconds each module took in a measured run (COST). A module missing from
COST counts DEFAULT_COST; tests/sim/test_simcluster_units.py says when one is missing.
"""

from __future__ import annotations

import os

SHARD = "HETGITOPS_SIM_SHARD"
DEFAULT_COST = 120.0

# Wall seconds per module (setup, calls and teardown; the first module of a shard also starts its
# cluster), rounded to 10 s: the mean of the `--durations=0` lists of two fresh-clone `.ci/run`s
# on 2026-12-05 (7126962 and 7b790ba, three shards each; the busy day-2 module from the second
# alone, which has its new cases). Only the ratios matter here.
COST: dict[str, float] = {
    "test_sim_argocd.py": 70.0,
    "test_sim_bundled.py": 190.0,
    "test_sim_busy.py": 170.0,
    "test_sim_day2.py": 630.0,
    "test_sim_day2_busy.py": 1060.0,
    "test_sim_dra.py": 80.0,
    "test_sim_dra_mig.py": 100.0,
    "test_sim_explain.py": 480.0,
    "test_sim_explain_generated.py": 300.0,
    "test_sim_flavor_rename.py": 140.0,
    "test_sim_flux.py": 60.0,
    "test_sim_grants.py": 30.0,
    "test_sim_import.py": 100.0,
    "test_sim_koordinator.py": 30.0,
    "test_sim_koordinator_explain.py": 100.0,
    "test_sim_koordinator_fleet.py": 570.0,
    "test_sim_kuberay.py": 30.0,
    "test_sim_kuberay_explain.py": 330.0,
    "test_sim_maintenance.py": 10.0,
    "test_sim_multicluster.py": 90.0,
    "test_sim_preempt.py": 70.0,
    "test_sim_quota.py": 210.0,
    "test_sim_volcano.py": 20.0,
    "test_sim_volcano_day2.py": 60.0,
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
