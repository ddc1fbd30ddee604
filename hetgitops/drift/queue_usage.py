"""Drift stage: the live ClusterQueues' quotas: a pool's live nominal quota, and usage above
a nominal quota the policy has cut."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hetgitops.compilers.kueue_queues import queue_flavors, queue_quotas
from hetgitops.diagnostics import Diagnostic
from hetgitops.drift.findings import finding
from hetgitops.model import quantities
from hetgitops.model.policy import Policy, Pool
from hetgitops.output.manifests import Manifest
from hetgitops.plan.flavors import flavor_name


def live_quota(
    policy: Policy, cluster_queues: Sequence[Mapping[str, Any]], pool: Pool, resource: str
) -> int:
    """Σ nominalQuota of `resource` on `pool`'s ResourceFlavor over the live ClusterQueues.
    The flavor is named as the compiler names it: with a Fleet topology `<pool>-<digest>`."""
    flavor = pool.name if policy.fleet is None else flavor_name(policy, policy.fleet, pool)
    total = 0
    for _, _, quota in _quotas(cluster_queues, flavor=flavor, resource=resource):
        total += int(quota)
    return total


def _quotas(
    cluster_queues: Sequence[Mapping[str, Any]], *, flavor: str, resource: str
) -> Iterator[tuple[str, str, Any]]:
    for cq in cluster_queues:
        for quota in queue_quotas(cq.get("spec")):
            if quota.flavor == flavor and quota.resource == resource:
                nominal = 0 if quota.nominal is None else quota.nominal
                yield cq["metadata"]["name"], resource, quantities.value_of(nominal)


def usage(
    manifests: Sequence[Manifest], cluster_queues: Sequence[Mapping[str, Any]]
) -> list[Diagnostic]:
    """ClusterQueues whose live usage exceeds a nominal quota the policy has cut."""
    desired = {m.name: m for m in manifests if m.kind == "ClusterQueue"}
    found: list[Diagnostic] = []
    for cq in cluster_queues:
        name = cq["metadata"]["name"]
        manifest = desired.get(name)
        if manifest is None:
            continue
        for flavor in (cq.get("status") or {}).get("flavorsUsage") or []:
            for item in flavor.get("resources") or []:
                found += _usage_item(manifest, cq, str(flavor.get("name")), item)
    return found


def _usage_item(
    manifest: Manifest, cq: Mapping[str, Any], flavor: str, item: Mapping[str, Any]
) -> list[Diagnostic]:
    resource = str(item.get("name"))
    try:
        used = quantities.value_of(item.get("total", 0))
    except quantities.QuantityError:
        return []
    wanted = [q for _, _, q in _quotas([manifest.obj], flavor=flavor, resource=resource)]
    current = [q for _, _, q in _quotas([cq], flavor=flavor, resource=resource)]
    if not wanted or not current or wanted[0] >= current[0] or used <= wanted[0]:
        return []
    return [
        finding(
            "drift-usage-above-quota",
            f"ClusterQueue {cq['metadata']['name']}: {resource} on {flavor} is in use at "
            f"{quantities.canonical(used)}, above the new nominal quota "
            f"{quantities.canonical(wanted[0])} (live {quantities.canonical(current[0])}); "
            "admitted work keeps running above the new quota",
            manifest.origin_of(_flavor_path(manifest.obj, flavor)),
            path=f"ClusterQueue {cq['metadata']['name']}: {flavor}/{resource}",
            hint="expect no new admissions there until the usage drains below the new quota",
        )
    ]


def _flavor_path(cq: Mapping[str, Any], flavor: str) -> tuple[str | int, ...]:
    """Where the ClusterQueue declares `flavor` (its team's quota entry for the pool is there)."""
    return next((f.path for f in queue_flavors(cq.get("spec")) if f.name == flavor), ())
