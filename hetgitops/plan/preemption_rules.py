"""The preemption settings of a team's ClusterQueue (`spec.preemption`): the team's own, else
reclaim from a pool that lends with `reclaim`, else Kueue's defaults (`Never`).

A fact, not spelling (habit 12): the kueue compiler writes it and the preemption model
(explain/preemption_input) replays Kueue with it, both from here."""

from __future__ import annotations

from typing import Any

from hetgitops.model.policy import Policy, Team

NEVER = "Never"


def reclaims(policy: Policy, team: Team) -> bool:
    """A pool that lends with `reclaim` lets its quota holders preempt borrowers."""
    pools = (policy.pools.get(q.pool) for q in team.quotas)
    return team.cohort is not None and any(
        p is not None and not p.isolated and p.lend_max_percent is not None and p.reclaim
        for p in pools
    )


def preemption(policy: Policy, team: Team) -> dict[str, Any]:
    """Team settings first, then Kueue's own defaults (`Never`), all three fields written."""
    wanted = team.preemption
    reclaim = wanted.reclaim_within_cohort or ("Any" if reclaims(policy, team) else NEVER)
    borrow: dict[str, Any] = {"policy": wanted.borrow_within_cohort or NEVER}
    if wanted.borrow_max_priority_threshold is not None:
        borrow["maxPriorityThreshold"] = wanted.borrow_max_priority_threshold
    return {
        "borrowWithinCohort": borrow,
        "reclaimWithinCohort": reclaim,
        "withinClusterQueue": wanted.within_cluster_queue or NEVER,
    }
