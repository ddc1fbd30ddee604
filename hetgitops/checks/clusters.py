"""Check stage, clusters family: how a multi-cluster policy is laid out (which pool runs where,
one manager, worker credentials as references) before anything is compiled per cluster."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import did_you_mean, error_at
from hetgitops.checks.references import lost_hint
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity, listing
from hetgitops.model.policy import MANAGER, WORKER, Cluster, Policy
from hetgitops.plan.clusters import MANAGER_TARGETS, cluster_fleet, managers, workers

# Kueue serves the MultiKueue API hetgitops writes (kueue.x-k8s.io/v1beta2) from 0.15.
MULTIKUEUE_MIN_KUEUE = (0, 15)


@rule("pool-cluster", Severity.ERROR)
def pool_cluster(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """With Cluster documents every pool names the cluster its nodes are in, a defined one
    that is not the manager; without them no pool names one.

    A pool without `cluster` would be in no cluster's tree: its nodes, flavor and quotas would
    silently vanish from the render.
    Fails: `cluster: hopper-eats` (no such Cluster), or no `cluster` in a multi-cluster policy.
    Passes: `cluster: hopper-east`, a Cluster with role worker or standalone.
    Fix: set `spec.cluster` on the pool to the Cluster its nodes are in (a worker or standalone one,
    not the manager); fix a misspelled name; or, in a single-cluster policy without Cluster
    documents, delete `spec.cluster`.
    """
    for pool in policy.pools.values():
        if pool.cluster is None:
            if policy.clusters:
                known = listing(sorted(policy.clusters))
                yield error_at(
                    "pool-cluster",
                    f"pool '{pool.name}' names no cluster; the policy has Cluster documents, "
                    "so it would be in no cluster's render",
                    pool.origin,
                    "spec",
                    key=True,
                    hint=f"add spec.cluster: one of {known}",
                )
            continue
        cluster = policy.clusters.get(pool.cluster)
        if cluster is None:
            cause = policy.unknown.object("Cluster", pool.cluster)
            yield error_at(
                "pool-cluster",
                f"pool '{pool.name}' names cluster '{pool.cluster}', which no Cluster "
                "document defines",
                pool.origin,
                "spec",
                "cluster",
                hint=lost_hint(cause)
                if cause
                else did_you_mean(pool.cluster, policy.clusters)
                or "add a Cluster document, or drop spec.cluster in a single-cluster policy",
            ).because(cause)
        elif cluster.role == MANAGER:
            yield error_at(
                "pool-cluster",
                f"pool '{pool.name}' is on the MultiKueue manager '{cluster.name}'; a manager "
                "only dispatches (it cannot be its own worker)",
                pool.origin,
                "spec",
                "cluster",
                hint="put the pool on a worker or standalone cluster",
            )


@rule("cluster-roles", Severity.ERROR)
def cluster_roles(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Workers need exactly one manager to dispatch to them; a manager needs a worker. Only
    a manager carries `admissionChecks`, and a manager renders only core, kueue and
    drift-rbac (it runs no pools, so no Volcano, NFD or GPU Operator).

    Fails: two Clusters with `role: manager`, workers without a manager, or a manager with
    `targets: [kueue, volcano]`.
    Passes: one manager and one or more workers (plus any standalone clusters).
    Fix: keep exactly one Cluster with `role: manager` and at least one `role: worker` (or make
    every cluster `standalone`); move `admissionChecks` from workers and standalone clusters to the
    manager; leave only core, kueue and drift-rbac in a manager's `targets`. Two managers mean two
    fleets: split them into two policies.
    """
    found = managers(policy)
    ready = workers(policy)
    for extra in found[1:]:
        yield error_at(
            "cluster-roles",
            f"a second manager '{extra.name}' (the first is '{found[0].name}'); hetgitops "
            "renders one MultiKueue manager per policy",
            extra.origin,
            "spec",
            "role",
            hint="make it a worker or standalone, or split the fleet into two policies",
            related=[found[0].origin.at("spec", "role")],
        )
    if ready and not found:
        yield error_at(
            "cluster-roles",
            f"worker cluster '{ready[0].name}' has no manager to dispatch jobs to it",
            ready[0].origin,
            "spec",
            "role",
            hint="add a Cluster with role: manager, or make the cluster standalone",
        )
    for cluster in policy.clusters.values():
        yield from _role_fields(cluster)
    if found and not ready:
        yield error_at(
            "cluster-roles",
            f"manager '{found[0].name}' has no worker cluster to dispatch to",
            found[0].origin,
            "spec",
            "role",
            hint="add a Cluster with role: worker, or make this cluster standalone",
        )


@rule("cluster-credentials-inline", Severity.ERROR)
def cluster_credentials_inline(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A Cluster refers to its credentials; it never carries them.

    A kubeconfig, token or key in the policy is a secret in Git, in every render and in every
    CI log. Kueue reads a worker's kubeconfig from a Secret in its own namespace (key
    `kubeconfig`) or through a ClusterProfile; name one of those.
    Fails: `credentials: {kubeconfig: "apiVersion: v1 ..."}` or `credentials: {token: ...}`.
    Passes: `credentials: {secret: gpu-east-kubeconfig}`.
    Fix: delete the inline kubeconfig, token or key and rotate it (it is in the Git history now).
    Store it on the manager as a Secret with key `kubeconfig` in Kueue's namespace (`kubectl create
    secret generic NAME -n kueue-system --from-file=kubeconfig=FILE`) and write `credentials:
    {secret: NAME}`, or name a ClusterProfile with `credentials: {clusterProfile: NAME}`.
    """
    for cluster in policy.clusters.values():
        for key in cluster.inline_credentials:
            yield error_at(
                "cluster-credentials-inline",
                f"cluster '{cluster.name}' writes credentials inline ({key}); a policy in Git "
                "must only name where they are",
                cluster.origin,
                "spec",
                "credentials",
                key,
                key=True,
                hint="remove it (and rotate it: it is in Git history now); create a Secret "
                "with key `kubeconfig` in Kueue's namespace and write credentials: {secret: NAME}",
            )


@rule("cluster-credentials-missing", Severity.ERROR)
def cluster_credentials_missing(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A worker names exactly one credential reference: a Secret or a ClusterProfile.

    The manager's MultiKueueCluster for the worker takes exactly one source; without one it
    cannot reach the worker and every job waits on the manager.
    Fails: a worker without `credentials`, or with both `secret` and `clusterProfile`.
    Passes: `credentials: {clusterProfile: gpu-east}`.
    Fix: give the worker exactly one of `credentials: {secret: NAME}` (a Secret with key
    `kubeconfig` in Kueue's namespace on the manager) or `credentials: {clusterProfile: NAME}`; with
    both set, delete the one the manager does not use.
    """
    for cluster in workers(policy):
        refs = [r for r in (cluster.secret, cluster.cluster_profile) if r]
        if len(refs) == 1:
            continue
        both = len(refs) == 2
        yield error_at(
            "cluster-credentials-missing",
            f"worker '{cluster.name}' names "
            + ("both a Secret and a ClusterProfile" if both else "no credentials")
            + "; the manager's MultiKueueCluster takes exactly one",
            cluster.origin,
            "spec",
            *(("credentials",) if both else ()),
            key=not both,
            hint="write credentials: {secret: NAME} (a kubeconfig Secret in Kueue's "
            "namespace) or credentials: {clusterProfile: NAME}",
        )


@rule("multikueue-kueue-version", Severity.ERROR)
def multikueue_kueue_version(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """MultiKueue clusters run Kueue 0.15 or later.

    hetgitops writes the MultiKueue objects as kueue.x-k8s.io/v1beta2, which Kueue serves from
    0.15 (MultiKueueCluster changed shape between v1beta1 and v1beta2).
    Fails: a manager whose Kueue version (its own or the Fleet's) is 0.14.
    Passes: 0.15 or later, or no version given (the newest API is assumed).
    Fix: upgrade Kueue on the manager and workers to 0.15 or later and set `spec.versions.kueue` (on
    the Cluster or the Fleet) to the version now running.
    """
    if policy.fleet is None:
        return
    for cluster in [*managers(policy), *workers(policy)]:
        kueue = cluster_fleet(policy.fleet, cluster).kueue
        if kueue is not None and kueue < MULTIKUEUE_MIN_KUEUE:
            own = cluster.kueue is not None
            origin = cluster.origin if own else policy.fleet.origin
            shown = ".".join(map(str, kueue))
            yield error_at(
                "multikueue-kueue-version",
                f"{_role(cluster)} '{cluster.name}' runs Kueue {shown}; hetgitops writes "
                "MultiKueue objects for Kueue 0.15 or later (kueue.x-k8s.io/v1beta2)",
                origin,
                "spec",
                "versions",
                "kueue",
                hint="upgrade Kueue on the cluster to 0.15 or later",
            )


def _role_fields(cluster: Cluster) -> Iterator[Diagnostic]:
    if cluster.role != MANAGER and cluster.admission_checks:
        yield error_at(
            "cluster-roles",
            f"{cluster.role} '{cluster.name}' lists admissionChecks; only a MultiKueue "
            "manager's queues carry them (they would not be rendered)",
            cluster.origin,
            "spec",
            "admissionChecks",
            key=True,
            hint="move them to the manager, or drop them",
        )
    for index, target in enumerate(cluster.targets or ()):
        if cluster.role == MANAGER and target not in MANAGER_TARGETS:
            yield error_at(
                "cluster-roles",
                f"manager '{cluster.name}' lists target {target}; a manager runs no pools "
                f"and renders only {', '.join(MANAGER_TARGETS)}",
                cluster.origin,
                "spec",
                "targets",
                index,
                hint=f"drop {target} from the manager's targets",
            )


def _role(cluster: Cluster) -> str:
    return "manager" if cluster.role == MANAGER else "worker" if cluster.role == WORKER else ""
