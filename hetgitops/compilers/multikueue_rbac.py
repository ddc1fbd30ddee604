"""Compile stage, multi-cluster workers: the identity the MultiKueue manager uses on a worker.

The manager's kubeconfig for a worker (the Secret its MultiKueueCluster names, made outside
Git) authenticates as ServiceAccount `kueue-system/multikueue-sa` (Kueue's
`create-multikueue-kubeconfig.sh`). On connecting, the manager opens a cluster-wide watch on
the worker for the job kind of every MultiKueue adapter of its enabled integrations, and keeps
the MultiKueueCluster inactive (ClientConnectionFailed) while one of them is forbidden
(`multikueuecluster.go` updateConfigAndRefreshWatchers, Kueue v0.19.2; seen live by the
two-cluster test). hetgitops does not render the manager's Kueue Configuration, so the role
covers every adapter kind: granting rights on a kind without its CRD is harmless.
"""

from __future__ import annotations

from typing import Any

from hetgitops.compilers.kueue_queues import TARGET
from hetgitops.model.policy import Cluster, Fleet
from hetgitops.output.manifests import Manifest, metadata

NAME = "multikueue-sa"
ROLE = "hetgitops-multikueue"
NAMESPACE = "kueue-system"
RBAC = "rbac.authorization.k8s.io"
# API group -> job kinds (resources) with a MultiKueue adapter in Kueue v0.19.2
# (pkg/controller/jobs/**/*_multikueue_adapter.go).
JOB_KINDS: dict[str, tuple[str, ...]] = {
    "": ("pods",),
    "apps": ("statefulsets",),
    "batch": ("jobs",),
    "jobset.x-k8s.io": ("jobsets",),
    "kubeflow.org": (
        "jaxjobs",
        "mpijobs",
        "paddlejobs",
        "pytorchjobs",
        "tfjobs",
        "xgboostjobs",
    ),
    "leaderworkerset.x-k8s.io": ("leaderworkersets",),
    "ray.io": ("rayclusters", "rayjobs", "rayservices"),
    "trainer.kubeflow.org": ("trainjobs",),
    "workload.codeflare.dev": ("appwrappers",),
}
VERBS = ["create", "delete", "get", "list", "watch"]


def _rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for group, kinds in JOB_KINDS.items():
        rules.append({"apiGroups": [group], "resources": list(kinds), "verbs": VERBS})
        rules.append(
            {"apiGroups": [group], "resources": [f"{k}/status" for k in kinds], "verbs": ["get"]}
        )
    rules.append({"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": VERBS})
    rules.append(
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads/status"],
            "verbs": ["get", "patch", "update"],
        }
    )
    return rules


def worker_rbac(fleet: Fleet, cluster: Cluster) -> list[Manifest]:
    """ServiceAccount, ClusterRole and ClusterRoleBinding for the manager on `cluster`."""
    span = cluster.origin.span
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": metadata(fleet, NAME, namespace=NAMESPACE),
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": metadata(fleet, ROLE),
            "rules": _rules(),
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": metadata(fleet, ROLE),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
        },
    ]
    return [Manifest(TARGET, obj, span) for obj in objects]
