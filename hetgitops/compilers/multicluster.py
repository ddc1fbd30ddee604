"""Compile stage, multi-cluster fleets: one manifest set per Cluster, each Manifest naming it.

Workers and standalone clusters get what a single cluster gets for their own pools (their
narrowed policy through every target compiler); every team keeps its namespaces and LocalQueues
there, because MultiKueue finds a job's place on a worker by namespace and LocalQueue name.
A worker's kueue target also gets the manager's ServiceAccount and role (multikueue_rbac).
The manager gets the queues users submit to: per team a ClusterQueue whose quota is the sum
of the team's worker quotas (`quotaManagement: Manual`; `Automated` rewrites ClusterQueue
spec and would fight a GitOps controller's self-heal), carrying the MultiKueue admission
check, plus the AdmissionChecks, MultiKueueConfigs and MultiKueueClusters; no pools, no
Volcano (Volcano jobs cannot be dispatched).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from hetgitops.compilers import COMPILERS, CompileError, compile_single
from hetgitops.compilers.core import TARGET as CORE
from hetgitops.compilers.core import team_label
from hetgitops.compilers.drift_rbac import TARGET as DRIFT_RBAC
from hetgitops.compilers.drift_rbac import rbac_manifests
from hetgitops.compilers.kueue import compile_kueue
from hetgitops.compilers.kueue_queues import NEVER, TARGET, fungibility
from hetgitops.compilers.multikueue_rbac import worker_rbac
from hetgitops.model.policy import MANAGER, WORKER, Cluster, Fleet, Policy, Team
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan.clusters import MANAGER_TARGETS, cluster_policy, manager_quota, team_workers
from hetgitops.plan.namespace_quota import QUOTA_NAME
from hetgitops.plan.quota_plan import admissible

CONTROLLER = "kueue.x-k8s.io/multikueue"
# The manager's one flavor: its flavor does not reach the worker (KEP-9988), so per-card
# flavors there would only pretend to steer jobs; the workers' own flavors place them.
FLAVOR = "multikueue"
QUOTA_MANAGEMENT = "Manual"
# What the manager keeps of a single-cluster Kueue render: no pools' flavors, cohorts or
# topology; its ClusterQueues are its own.
_KEPT = ("WorkloadPriorityClass", "LocalQueue")


def compile_clusters(policy: Policy, targets: tuple[str, ...] | None) -> list[Manifest]:
    manifests: list[Manifest] = []
    for cluster in policy.clusters.values():
        narrowed = cluster_policy(policy, cluster.name)
        if cluster.role == MANAGER:
            found = compile_manager(policy, narrowed, cluster, targets)
        else:
            found = compile_single(narrowed, targets)
            if narrowed.fleet and "core" in _chosen(narrowed, targets):
                found.extend(_closed_namespaces(narrowed, narrowed.fleet, found))
            if cluster.role == WORKER and narrowed.fleet and TARGET in _chosen(narrowed, targets):
                found.extend(worker_rbac(narrowed.fleet, cluster))
        manifests.extend(replace(m, cluster=cluster.name) for m in found)
    return manifests


def _closed_namespaces(narrowed: Policy, fleet: Fleet, found: list[Manifest]) -> list[Manifest]:
    """A team without quota on this cluster still has its namespaces here (MultiKueue needs
    them); a ResourceQuota of zero keeps pods created around Kueue there off the cluster's
    accelerators, as the team's share caps them where it has quota."""
    capped = {m.namespace for m in found if m.kind == "ResourceQuota"}
    resources = sorted({r for t in narrowed.teams.values() for r in admissible(narrowed, t)})
    closed: list[Manifest] = []
    for team in narrowed.teams.values():
        for index, name in enumerate(team.namespaces):
            if name in capped or not resources:
                continue
            capped.add(name)
            quota = {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": metadata(
                    fleet, QUOTA_NAME, namespace=name, labels={team_label(fleet): team.name}
                ),
                "spec": {"hard": {f"requests.{r}": "0" for r in resources}},
            }
            origin = team.origin.at("spec", "namespaces", index)
            closed.append(Manifest(CORE, quota, origin))
    return closed


def _chosen(narrowed: Policy, targets: tuple[str, ...] | None) -> tuple[str, ...]:
    return targets or (narrowed.fleet.targets if narrowed.fleet else ())


def compile_manager(
    policy: Policy, narrowed: Policy, cluster: Cluster, targets: tuple[str, ...] | None
) -> list[Manifest]:
    fleet = narrowed.fleet
    if fleet is None:
        return []
    chosen = [t for t in (targets or fleet.targets) if t in MANAGER_TARGETS]
    found: list[Manifest] = []
    if "core" in chosen:
        found.extend(COMPILERS["core"](narrowed))
    if TARGET in chosen:
        base = [m for m in compile_kueue(narrowed) if m.kind in _KEPT]
        found.extend(base)
        found.extend(_multikueue(policy, fleet, cluster))
    if DRIFT_RBAC in chosen:
        found.extend(rbac_manifests(fleet, found))
    return found


def check_name(workers: list[Cluster]) -> str:
    """One AdmissionCheck and MultiKueueConfig per ordered worker list; the name says which
    (a digest when the names would pass the 63 characters a check reference allows)."""
    name = "multikueue-" + "-".join(w.name for w in workers)
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(",".join(w.name for w in workers).encode()).hexdigest()[:10]
    return f"multikueue-{digest}"


def _multikueue(policy: Policy, fleet: Fleet, cluster: Cluster) -> Iterator[Manifest]:
    origin = cluster.origin.span
    yield Manifest(TARGET, _flavor(fleet), origin)
    lists: dict[str, list[Cluster]] = {}
    for team in policy.teams.values():
        workers = team_workers(policy, team)
        check = check_name(workers) if workers else None
        if check is not None:
            lists.setdefault(check, workers)
        queue = _cluster_queue(policy, fleet, cluster, team, check)
        yield Manifest(TARGET, queue, team.origin.span)
    used: dict[str, Cluster] = {}
    for name, workers in sorted(lists.items()):
        yield Manifest(TARGET, _admission_check(fleet, name), origin)
        yield Manifest(TARGET, _config(fleet, name, workers), origin)
        used.update((w.name, w) for w in workers)
    for worker in sorted(used.values(), key=lambda w: w.name):
        yield Manifest(TARGET, _remote(fleet, worker), worker.origin.at("spec", "credentials"))


def _flavor(fleet: Fleet) -> dict[str, Any]:
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "ResourceFlavor",
        "metadata": metadata(fleet, FLAVOR),
        "spec": {},
    }


def _cluster_queue(
    policy: Policy, fleet: Fleet, cluster: Cluster, team: Team, check: str | None
) -> dict[str, Any]:
    """No cohort: the manager only gates dispatch, so borrowing there would dispatch work
    beyond what the workers hold for the team (and nothing to reclaim from)."""
    wanted = {
        "borrowWithinCohort": {"policy": NEVER},
        "reclaimWithinCohort": NEVER,
        "withinClusterQueue": team.preemption.within_cluster_queue or NEVER,
    }
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {team_label(fleet): team.name}},
        "queueingStrategy": team.queueing_strategy or fleet.queueing_strategy,
        "stopPolicy": "None",
        "flavorFungibility": fungibility(fleet),
        "preemption": wanted,
    }
    quota = manager_quota(policy, team)
    if quota:
        resources = [{"name": r, "nominalQuota": q} for r, q in quota.items()]
        flavors = [{"name": FLAVOR, "resources": resources}]
        spec["resourceGroups"] = [{"coveredResources": list(quota), "flavors": flavors}]
    checks: list[dict[str, Any]] = [{"name": check}] if check else []
    checks += [
        {"name": c.name, **({"onFlavors": list(c.on_flavors)} if c.on_flavors else {})}
        for c in cluster.admission_checks
    ]
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "ClusterQueue",
        "metadata": metadata(fleet, team.name, labels={team_label(fleet): team.name}),
        "spec": spec,
    }


def _admission_check(fleet: Fleet, name: str) -> dict[str, Any]:
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "AdmissionCheck",
        "metadata": metadata(fleet, name),
        "spec": {
            "controllerName": CONTROLLER,
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "MultiKueueConfig",
                "name": name,
            },
        },
    }


def _config(fleet: Fleet, name: str, workers: list[Cluster]) -> dict[str, Any]:
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "MultiKueueConfig",
        "metadata": metadata(fleet, name),
        "spec": {
            "clusters": [w.name for w in workers],
            "quotaManagement": QUOTA_MANAGEMENT,
        },
    }


def _remote(fleet: Fleet, worker: Cluster) -> dict[str, Any]:
    """Only a reference: the Secret (key `kubeconfig`, in Kueue's namespace) or the
    ClusterProfile is made outside Git."""
    if worker.cluster_profile:
        source: dict[str, Any] = {"clusterProfileRef": {"name": worker.cluster_profile}}
    elif worker.secret:
        source = {"kubeConfig": {"location": worker.secret, "locationType": "Secret"}}
    else:
        raise CompileError(f"worker cluster {worker.name} names no credentials")
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "MultiKueueCluster",
        "metadata": metadata(fleet, worker.name),
        "spec": {"clusterSource": source},
    }
