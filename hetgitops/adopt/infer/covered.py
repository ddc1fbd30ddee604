"""Adopt stage, teams phase: a ClusterQueue's coveredResources when the render would not list
them so by itself (`kueue.coveredResources`): hand-written queues cover every accelerator
resource of the fleet in one group, and leave out a MIG pool's card resource no quota claims."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hetgitops.adopt.infer.documents import whole
from hetgitops.adopt.infer.lending import HOST, LentPool
from hetgitops.compilers.kueue_queues import queue_flavors
from hetgitops.model import mig


def offered(lent: LentPool) -> set[str]:
    """What the render lists for the pool without a quota claiming it (plan.capacity
    `pool_resources`): its card resource, and each MIG profile's under migStrategy mixed."""
    pool = lent.pool
    profiles = () if lent.strategy == "single" else pool.mig_profiles
    return {pool.main_resource, *(mig.resource_name(p) for p in profiles)}


def covered_resources(
    spec: Mapping[str, Any], flavor_pool: Mapping[str, LentPool]
) -> list[str] | None:
    """The queue's covered accelerator resources when the render would cover others, else
    None. Only one resource group led by cpu and memory whose every resource some imported
    pool offers can be said (anything else stays as it was: the round trip reports it)."""
    groups = spec.get("resourceGroups")
    if not isinstance(groups, list) or len(groups) != 1 or not isinstance(groups[0], Mapping):
        return None
    listed = [str(r) for r in groups[0].get("coveredResources") or []]
    if listed[:2] != list(HOST) or len(set(listed)) != len(listed):
        return None
    pools = [flavor_pool.get(f.name) for f in queue_flavors(spec)]
    if not pools or any(p is None or p.pool.aliases for p in pools):
        return None
    fleet = set().union(*(offered(p) for p in flavor_pool.values()))
    if not set(listed[2:]) <= fleet:
        return None
    return None if listed[2:] == _natural(spec, flavor_pool) else listed[2:]


def _natural(spec: Mapping[str, Any], flavor_pool: Mapping[str, LentPool]) -> list[str]:
    """The render's own list for the queue: what its pools offer and its quotas claim."""
    found: set[str] = set()
    for flavor in queue_flavors(spec):
        lent = flavor_pool[flavor.name]
        found |= offered(lent)
        found |= {
            r
            for r, item in flavor.by_resource().items()
            if r not in HOST and whole(item.get("nominalQuota"))
        }
    return sorted(found)
