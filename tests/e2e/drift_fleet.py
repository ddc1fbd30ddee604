"""E2E helpers for `drift`: apply a rendered tree as a GitOps controller would, create the
policy's nodes with their labels, taints and accelerators, and a kubeconfig holding exactly
the rendered drift-rbac permissions (a ServiceAccount token)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dra_driver
import yaml
from harness.controlplane.harness import ControlPlane

from hetgitops import api
from hetgitops.compilers.nodes import desired_node_labels
from hetgitops.drift.accelerators import node_resources
from hetgitops.model.policy import Policy
from hetgitops.output import manifests

ARGOCD = "argocd-controller"
FLUX = "kustomize-controller"
SELECTOR = "app.kubernetes.io/managed-by=hetgitops"
# Marks the nodes these tests create, so that cleaning up never touches other tests' nodes.
NODE_MARK = "e2e.hetgitops.io/drift"


def render(policy: Path, *, targets: tuple[str, ...] | None = None) -> api.Result:
    result = api.render([policy], api.Options(check_output=False, targets=targets))
    assert not result.failed(), [str(d) for d in result.diagnostics]
    return result


def applied(result: api.Result) -> list[dict[str, Any]]:
    return [dict(m.obj) for m in manifests.ordered(result.manifests) if m.applied]


def server_side_apply(
    plane: ControlPlane, objects: Iterable[dict[str, Any]], *, manager: str, force: bool = False
) -> None:
    """`kubectl apply --server-side` of a List, as Argo CD (argocd-controller) or Flux
    (kustomize-controller) apply a tree."""
    objects = list(objects)
    _operator_namespaces(plane, objects)
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    args = ["apply", "--server-side", f"--field-manager={manager}", "-f", "-"]
    plane.kubectl(*args, *(["--force-conflicts"] if force else []), input=body)


def _operator_namespaces(plane: ControlPlane, objects: list[dict[str, Any]]) -> None:
    """Namespaces the tree uses but does not render (the GPU Operator's, Volcano's) exist in a
    real cluster before the tree is synced; create them without hetgitops' labels."""
    rendered = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    used = {o["metadata"].get("namespace") for o in objects} - rendered - {None}
    items = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in sorted(used)
    ]
    if items:
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        plane.kubectl(
            "apply", "--server-side", "--field-manager=e2e-operators", "-f", "-", input=body
        )


def reset(plane: ControlPlane) -> None:
    """Forget every earlier scenario: delete hetgitops-labelled objects and nodes; namespaces
    (which never finish terminating without a controller-manager) are replaced by bare ones,
    dropping their labels and field owners."""
    kinds = (
        "clusterqueues.kueue.x-k8s.io,localqueues.kueue.x-k8s.io,cohorts.kueue.x-k8s.io,"
        "resourceflavors.kueue.x-k8s.io,topologies.kueue.x-k8s.io,"
        "workloadpriorityclasses.kueue.x-k8s.io,queues.scheduling.volcano.sh,"
        "nodefeaturerules.nfd.k8s-sigs.io,priorityclasses.scheduling.k8s.io,configmaps,"
        "resourcequotas"
    )
    plane.kubectl("delete", kinds, "-A", "-l", SELECTOR, "--wait=false")
    plane.kubectl("delete", "nodes", "-l", NODE_MARK, "--wait=false")
    names = plane.kubectl("get", "namespaces", "-l", SELECTOR, "-o", "name").stdout.split()
    for name in names:
        bare = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name.split("/")[1]}}
        plane.kubectl("replace", "-f", "-", input=json.dumps(bare))


def node_objects(policy: Policy) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(Node, status) per policy node, as a healthy fleet would show them."""
    found = []
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        for node in pool.nodes:
            taints = [
                {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}
                for t in pool.taints
            ]
            obj = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node.name,
                    "labels": {**desired_node_labels(policy, pool, node), NODE_MARK: "yes"},
                },
                "spec": {"taints": taints} if taints else {},
            }
            units = node_resources(policy, pool, card, node) if card else {}
            resources = {"cpu": "64", "memory": "512Gi", "pods": "110"}
            resources.update({name: str(count) for name, count in units.items()})
            found.append((obj, {"capacity": resources, "allocatable": resources}))
    return found


def create_nodes(plane: ControlPlane, policy: Policy) -> None:
    nodes = node_objects(policy)
    if not nodes:
        return
    items = [{**obj, "status": status} for obj, status in nodes]
    body = json.dumps({"kind": "List", "apiVersion": "v1", "items": items})
    plane.kubectl("apply", "--server-side", "--field-manager=e2e-nodes", "-f", "-", input=body)
    # What a kubelet and device plugin report: status is a subresource of its own.
    status = ("apply", "--server-side", "--subresource=status", "--field-manager=e2e-kubelet")
    plane.kubectl(*status, "-f", "-", input=body)
    # What NVIDIA's DRA driver would publish on a DRA pool's nodes (no driver runs here).
    published = dra_driver.slices(policy)
    if published:
        listed = json.dumps({"kind": "List", "apiVersion": "v1", "items": published})
        plane.kubectl(
            "apply", "--server-side", "--field-manager=e2e-dra-driver", "-f", "-", input=listed
        )


def set_node_status(plane: ControlPlane, name: str, status: dict[str, Any]) -> None:
    patch = json.dumps({"status": status})
    plane.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", patch)


def drift_kubeconfig(plane: ControlPlane, policy: Path, directory: Path) -> Path:
    """Apply the rendered drift-rbac objects and return a kubeconfig with the ServiceAccount's
    token: exactly the permissions `render --target drift-rbac` grants."""
    rbac = applied(render(policy, targets=("drift-rbac",)))
    server_side_apply(plane, rbac, manager="hetgitops-e2e-rbac", force=True)
    account = next(o for o in rbac if o["kind"] == "ServiceAccount")["metadata"]
    token = plane.kubectl(
        "create", "token", account["name"], "-n", account["namespace"], "--duration=2h"
    ).stdout.strip()
    admin = yaml.safe_load(plane.admin_kubeconfig.read_text())
    cluster = admin["clusters"][0]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "drift", "user": {"token": token}}],
        "contexts": [{"name": "drift", "context": {"cluster": cluster["name"], "user": "drift"}}],
        "current-context": "drift",
    }
    path = directory / "drift.kubeconfig"
    path.touch(mode=0o600)
    path.write_text(json.dumps(config))
    return path
