"""The lanes of the preemption differential (tests/sim/test_sim_preempt.py): one per pool of
the bundled fleet whose ClusterQueues preempt differently, with the Jobs that fill it and the
probes sent into it, all drawn from one seeded `random.Random`.

Why lanes can run at once: each pool is one ResourceFlavor, and Kueue's quota (a ClusterQueue's
and a cohort's usage are kept per flavor-resource, pkg/cache/scheduler/resource_node.go:144-165),
its preemption candidates (only workloads using a contested flavor-resource,
pkg/scheduler/preemption/classical/candidate_generator.go:54-63) and the scheduler's overlap check
(preemption targets already taken this cycle, pkg/scheduler/scheduler.go:468-473) are all per
flavor. Every Job here selects one pool's card type, so a probe in one lane can neither free nor
take quota in another; a ClusterQueue shared by two lanes only offers one head per scheduling
cycle (pkg/cache/queue/manager.go:915-934), which delays and never changes an answer."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from harness.simcluster.workloads import job

from hetgitops.explain import request as requests
from hetgitops.explain.workload import Workload
from hetgitops.model.policy import Policy

ROUND = "hetgitops.io/sim-preempt-round"


@dataclass(frozen=True)
class Lane:
    """A pool and what is sent into it: filler Jobs of `teams` (team, the tiers drawn for its
    fillers), of `sizes` units, `fill` of them; probes of `probes` (team, tier) of
    `probe_sizes` units. `per_node`: at most this many units a pod. `shape` says which
    preemption settings the lane exercises."""

    pool: str
    card: str
    per_node: int
    teams: tuple[tuple[str, tuple[str, ...]], ...]
    sizes: tuple[int, ...]
    fill: tuple[int, int]
    probes: tuple[tuple[str, str], ...]
    probe_sizes: tuple[int, ...]
    shape: str


DEV3 = ("dev", "dev", "training")
LANES = (
    Lane(
        "a800-train", "a800-80gb", 8,
        (("pretraining", DEV3), ("finetune-nlp", DEV3), ("finetune-vision", DEV3)),
        (8, 8, 16), (14, 20),
        (("pretraining", "training"), ("finetune-nlp", "training"),
         ("finetune-vision", "training")),
        (8, 16),
        "one cohort, lending limits; borrowWithinCohort LowerPriority (threshold 100) beside Never",
    ),
    Lane(
        "a100-transition", "a100-40gb", 8,
        (("pretraining", DEV3), ("finetune-nlp", DEV3)),
        (2, 4, 8), (4, 7),
        (("pretraining", "training"), ("finetune-nlp", "training")),
        (4, 8, 16),
        "everything lent (maxPercent 100), no borrowing limit: reclaim while borrowing",
    ),
    Lane(
        "ascend-910b", "ascend-910b", 8,
        (("pretraining", DEV3), ("data-preprocessing", DEV3)),
        (2, 4), (3, 6),
        (("pretraining", "training"), ("data-preprocessing", "training")),
        (4, 8),
        "isolated (nothing lent) across two cohorts; withinClusterQueue beside all Never",
    ),
    Lane(
        "h100-infer", "h100-80gb", 4,
        (("online-inference", ("online-inference",)), ("finetune-nlp", DEV3)),
        (2, 4), (6, 11),
        (("online-inference", "online-inference"), ("finetune-nlp", "training")),
        (4, 8),
        "reclaim Any across cohorts under ai-centre (inference vs training), half lent",
    ),
    Lane(
        "l40s-infer", "l40s-48gb", 8,
        (("online-inference", ("online-inference",)), ("finetune-vision", DEV3)),
        (4, 8), (5, 8),
        (("online-inference", "online-inference"), ("finetune-vision", "training")),
        (8, 16),
        "reclaim Any and borrowWithinCohort LowerPriority (no threshold) across cohorts",
    ),
    Lane(
        "rtx4090-dev", "rtx4090-24gb", 16,
        (("research", DEV3), ("data-preprocessing", DEV3)),
        (4, 8, 16), (4, 8),
        (("research", "training"), ("data-preprocessing", "training")),
        (8, 16),
        "time-sliced replicas; withinClusterQueue LowerOrNewerEqualPriority beside Never",
    ),
)  # fmt: skip


def request(lane: Lane, team: str, units: int, tier: str) -> requests.Request:
    per_node = min(units, lane.per_node)
    return requests.Request(team, gpus=units, card=lane.card, per_node=per_node, tier=tier)


def workload(policy: Policy, lane: Lane, team: str, units: int, tier: str) -> Workload:
    return requests.from_request(policy, request(lane, team, units, tier))


def make_job(
    policy: Policy, lane: Lane, name: str, asked: tuple[str, int, str], number: int
) -> dict[str, Any]:
    """A Job of (team, units, tier) in the lane's pool, labelled with its round."""
    obj = job(name, workload(policy, lane, *asked), tolerate=True, policy=policy)
    obj["metadata"]["labels"][ROUND] = str(number)
    return obj


def fillers(policy: Policy, lane: Lane, rng: random.Random, number: int) -> list[dict[str, Any]]:
    found = []
    for i in range(rng.randint(*lane.fill)):
        team, tiers = rng.choice(lane.teams)
        asked = (team, rng.choice(lane.sizes), rng.choice(tiers))
        found.append(make_job(policy, lane, f"sim-pre-{number}-{lane.pool}-f{i}", asked, number))
    return found


def probe(lane: Lane, rng: random.Random) -> tuple[str, int, str]:
    team, tier = rng.choice(lane.probes)
    return team, rng.choice(lane.probe_sizes), tier
