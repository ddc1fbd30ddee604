"""Compile stage, `monitoring` target: the usage scenarios of the generated promtool tests.

One function per alert: it picks a few entities of the policy (`SAMPLE`), synthesises the
exporter series a cluster would show (ready, degraded, idle, busy...) and states which alerts
the policy's arithmetic expects, with their values. Traps are built in where a rule could be
subtly wrong: a second kube-state-metrics replica (double counting), a Kueue follower replica
reporting stale numbers, `DCGM_FI_DEV_GPU_UTIL` on MIG GPUs (not reported there upstream).
"""

from __future__ import annotations

from collections.abc import Callable

from hetgitops.compilers.monitoring import alerts as a
from hetgitops.compilers.monitoring import scenarios_pools as pools
from hetgitops.compilers.monitoring import scenarios_queues as queues
from hetgitops.compilers.monitoring.facts import Facts
from hetgitops.compilers.monitoring.promtests import Case
from hetgitops.compilers.monitoring.scenario_base import Scene
from hetgitops.model.policy import Fleet, Policy


def cases(policy: Policy, fleet: Fleet, found: Facts, alert: a.Alert) -> list[Case]:
    scene = Scene(policy, fleet, found)
    makers: dict[str, Callable[[Scene, a.Alert], list[Case]]] = {
        a.CAPACITY: pools.capacity,
        a.IDLE: pools.idle,
        a.PENDING: queues.pending,
        a.WAIT: queues.wait,
        a.BUDGET: queues.budget,
        a.EXPIRED: pools.expired,
        a.MIG: pools.mig,
        a.CQ_STATE: queues.cluster_queue,
        a.VOLCANO_STATE: queues.volcano_queue,
    }
    return makers[alert.name](scene, alert)
