"""Diff stage, day-2 hazards of MIG: a re-partition whose quota follows it in the same change,
and which pods the re-made GPUs hold.

Kueue takes the new quotas as soon as the ClusterQueues sync, while the nodes hold the old
layout until mig-manager has re-made their GPUs, and keep it when an instance is in use (the
apply fails: mig.py). A quota raised to the new layout is therefore admitted onto nodes that
still hold the old one: the pool is overbooked during the sync by what the new quotas claim of
a resource above what the old layout holds. The pods at risk are those on the GPUs being
re-made: on those nodes, the pods that request a resource the changed GPUs held (a pod's MIG
device is not in its spec, so a profile that the node's unchanged GPUs carry too makes this
an upper bound), not every pod on the nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hetgitops.diff.hazards.registry import Hazard
from hetgitops.model.policy import Policy, Pool
from hetgitops.plan import capacity


def _remade(policy: Policy, pool: Pool, nodes: set[str], gpus: set[int]) -> list[str]:
    """The resources the changed GPUs of `nodes` held before (what their pods request)."""
    card = policy.card_type_of(pool)
    if card is None:
        return []
    found: set[str] = set()
    for node in pool.nodes:
        if node.name not in nodes:
            continue
        layout = capacity.covered_gpus(pool, node.cards)
        for index in gpus or set(range(node.cards)):
            for profile in layout.get(index, {}):
                found.add(capacity.mig_resource(pool, card, profile, policy.fleet))
    return sorted(found)


def _overbooked(old: Policy, new: Policy, was: Pool, now: Pool) -> dict[str, tuple[int, int]]:
    """Resource -> (new quotas, what the pool holds in its old layout), where the first is
    larger."""
    old_card, new_card = old.card_type_of(was), new.card_type_of(now)
    if old_card is None or new_card is None:
        return {}
    held = capacity.pool_resources(was, old_card, old.fleet)
    after = capacity.pool_resources(now, new_card, new.fleet)
    found = {}
    for resource in sorted(after):
        quotas = capacity.pool_quota_total(new, now, resource)
        if quotas > held.get(resource, 0):
            found[resource] = (quotas, held.get(resource, 0))
    return found


def _exact(old: Policy, new: Policy, hazard: Hazard) -> Hazard:
    scope = dict(hazard.scope)
    was, now = old.pools.get(scope.get("pool", "")), new.pools.get(scope.get("pool", ""))
    if was is None or now is None:
        return hazard
    nodes = set(scope.get("nodes", "").split(",")) - {""}
    gpus = {int(g) for g in scope.get("gpus", "").split(",") if g}
    requests = tuple(("requests", r) for r in _remade(old, was, nodes, gpus))
    over = _overbooked(old, new, was, now)
    if not over:
        return replace(hazard, scope=(*hazard.scope, *requests))
    said = ", ".join(
        f"{quotas - held} {resource} (quotas {quotas}, the old layout holds {held})"
        for resource, (quotas, held) in over.items()
    )
    fits = ", ".join(f"{held} {resource}" for resource, (_, held) in over.items())
    return replace(
        hazard,
        message=f"{hazard.message}. The quotas follow the new layout in the same change: Kueue "
        "admits them as soon as the ClusterQueues sync, while the nodes hold the old layout "
        "until mig-manager has re-made their GPUs (and keep it if a slice is in use), so pool "
        f"{now.name} is overbooked during the sync by {said}",
        action=f"{hazard.action}; and keep the quotas within what the old layout holds ({fits}) "
        "in this change, raising them in the next once every node reports "
        "nvidia.com/mig.config.state=success",
        scope=(*hazard.scope, *requests),
    )


def quota_follows(old: Policy | None, new: Policy | None, found: Sequence[Hazard]) -> list[Hazard]:
    """`found` with each `mig-repartition` told whether its quota overbooks the pool during
    the sync, and narrowed to the pods on the GPUs being re-made."""
    if old is None or new is None:
        return list(found)
    return [_exact(old, new, h) if h.rule == "mig-repartition" else h for h in found]
