"""E2E: `explain --kubeconfig` and `explain workload` against a real API server, read-only
(issue 20 item 2): the ClusterQueue's flavorsUsage and admitted Workloads (what preemption
would free), the policy's nodes with a bound pod (per-node free units for the topology
placement), Volcano Queue status, an existing PodGroup and bare Pod in policy terms, and the
team Namespace's live labels, which Kueue matches the ClusterQueue's namespaceSelector against."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from drift_fleet import applied, create_nodes, render, reset, server_side_apply
from harness.controlplane.harness import ControlPlane

from hetgitops.cli.main import main
from hetgitops.explain import run

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
NOW = "2026-12-01"
H100 = "h100-infer-ddcde6d9"  # the bundled render's flavor of h100-infer
WHEN = "2026-12-01T00:00:00Z"
MANAGER = "e2e-explain"


def _apply(plane: ControlPlane, obj: dict[str, Any]) -> None:
    done = plane.kubectl(
        "apply",
        "--server-side",
        f"--field-manager={MANAGER}",
        "-f",
        "-",
        input=json.dumps(obj),
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _status(plane: ControlPlane, kind: str, name: str, namespace: str, status: Any) -> None:
    scope = ["-n", namespace] if namespace else []
    patch = json.dumps({"status": status})
    done = plane.kubectl(
        "patch",
        kind,
        name,
        *scope,
        "--subresource=status",
        "--type=merge",
        "-p",
        patch,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def fleet(control_plane: ControlPlane, kueue_workload: Any) -> Iterator[ControlPlane]:
    plane = control_plane
    reset(plane)
    policy = run.load_policy([REPO / "policies"], dt.date(2026, 12, 1))
    tree = applied(render(REPO / "policies", targets=("core", "kueue", "volcano")))
    server_side_apply(plane, tree, manager="e2e-explain-gitops", force=True)
    create_nodes(plane, policy)
    # finetune-nlp holds 12 H100s: two dev (priority 100) and one training Workload.
    for name, priority in (("dev-a", 100), ("dev-b", 100), ("train-a", 10000)):
        admitted = ("finetune-nlp", H100)
        kueue_workload(name, "ft-nlp", "ft-nlp", 4, admitted=admitted, priority=priority)
    usage = [{"name": "nvidia.com/gpu", "total": "12", "borrowed": "4"}]
    _status(
        plane,
        "clusterqueue",
        "finetune-nlp",
        "",
        {"flavorsUsage": [{"name": H100, "resources": usage}]},
    )
    # A running pod holds all four whole H100s of gpu-h100-001.
    holder = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "holder", "namespace": "ft-nlp"},
        "spec": {
            "nodeName": "gpu-h100-001",
            "containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "4"}}}
            ],
        },
    }
    _apply(plane, holder)
    _status(plane, "pod", "holder", "ft-nlp", {"phase": "Running"})
    _status(
        plane,
        "queue.scheduling.volcano.sh",
        "finetune-nlp-h100-infer",
        "",
        {"state": "Open", "allocated": {"nvidia.com/gpu": "4"}, "running": 1, "pending": 1},
    )
    # Volcano's PodGroup CRD has no status subresource: its status is written with the object.
    message = "4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable"
    _apply(
        plane,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "gang", "namespace": "ft-nlp"},
            "spec": {"queue": "finetune-nlp-h100-infer", "minMember": 4},
            "status": {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "Unschedulable",
                        "status": "True",
                        "reason": "NotEnoughResources",
                        "message": message,
                        "lastTransitionTime": WHEN,
                    }
                ],
            },
        },
    )
    _apply(
        plane,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "gang.quota", "namespace": "ft-nlp"},
            "involvedObject": {"kind": "PodGroup", "namespace": "ft-nlp", "name": "gang"},
            "reason": "Unschedulable",
            "message": "queue resource quota insufficient: insufficient nvidia.com/gpu",
            "type": "Normal",
        },
    )
    lonely = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "lonely", "namespace": "research"},
        "spec": {
            "containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
            ]
        },
    }
    _apply(plane, lonely)
    scheduled = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "lastTransitionTime": WHEN,
        "message": "0/34 nodes are available: 6 Insufficient nvidia.com/gpu, 28 node(s) had "
        "untolerated taint {hetgitops.io/pool: a800-train}.",
    }
    _status(plane, "pod", "lonely", "research", {"phase": "Pending", "conditions": [scheduled]})
    yield plane
    for namespace, kind, name in (
        ("ft-nlp", "pod", "holder"),
        ("research", "pod", "lonely"),
        ("ft-nlp", "podgroup", "gang"),
        ("ft-nlp", "event", "gang.quota"),
    ):
        plane.kubectl(
            "delete", kind, name, "-n", namespace, "--grace-period=0", "--force", check=False
        )
    plane.kubectl("delete", "workloads.kueue.x-k8s.io", "--all", "-n", "ft-nlp", check=False)
    reset(plane)


def _explain(plane: ControlPlane, *args: str) -> Any:
    base = ["explain", "--policy", str(REPO / "policies"), "--now", NOW]
    live = ["--kubeconfig", str(plane.readonly_kubeconfig)]
    return CliRunner().invoke(main, [*base, *live, *args])


def test_what_preemption_would_free(fleet: ControlPlane) -> None:
    asked = ("--team", "finetune-nlp", "--card", "h100-80gb", "--gpus", "8", "--per-node", "4")
    result = _explain(fleet, *asked, "--tier", "training")
    assert result.exit_code == 1, result.output
    assert f"insufficient unused quota for nvidia.com/gpu in flavor {H100}, 4 more needed" in (
        result.output
    )
    # One of the two dev Workloads frees the 4 (the preemption model, as `explain --preempt`
    # answers); admitted at the same time, Kueue breaks the tie by UID, the model by name.
    assert "preemption: Kueue preempts 1 workload(s) in pool h100-infer to admit it" in (
        result.output
    )
    assert (
        "preemption: preempts ft-nlp/dev-a of ClusterQueue finetune-nlp, priority 100: "
        "InClusterQueue, allowed by ClusterQueue finetune-nlp's withinClusterQueue: LowerPriority"
    ) in result.output
    assert "ClusterQueue finetune-nlp holds 12 nvidia.com/gpu in h100-infer now" in result.output


def test_placement_uses_each_nodes_free_units_and_volcano_queue_status(
    fleet: ControlPlane,
) -> None:
    asked = ("--team", "finetune-nlp", "--card", "h100-80gb", "--gpus", "4", "--format", "json")
    result = _explain(fleet, *asked)
    assert result.exit_code == 0, result.output
    (e,) = json.loads(result.stdout)["explanations"]
    (pod_set,) = e["kueue"]["podSets"]
    # gpu-h100-001 would be first on an idle cluster; its four cards are taken.
    assert pod_set["placement"]["nodes"] == ["gpu-h100-002"]
    assert (
        "Volcano queue finetune-nlp-h100-infer: Open, allocated 4 nvidia.com/gpu; PodGroups "
        "running 1, inqueue 0, pending 1"
    ) in e["live"]


def test_explain_workload_reads_a_podgroup_and_a_bare_pod(fleet: ControlPlane) -> None:
    group = _explain(fleet, "workload", "ft-nlp/gang")
    assert group.exit_code == 1, group.output
    assert "PodGroup ft-nlp/gang (Volcano queue finetune-nlp-h100-infer): pending" in group.output
    assert "Volcano queue finetune-nlp-h100-infer lacks nvidia.com/gpu for the gang" in (
        group.output
    )
    assert "policies/teams/training.yaml:" in group.output
    assert "4 of the gang's 4 tasks find no node: minMember 4" in group.output
    pod = _explain(fleet, "workload", "research/lonely")
    assert pod.exit_code == 1, pod.output
    assert "Pod research/lonely (ClusterQueue ?): pending" in pod.output
    assert "6 node(s) lack nvidia.com/gpu" in pod.output
    assert "28 node(s) carry the taint {hetgitops.io/pool: a800-train}" in pod.output
    assert "no kueue.x-k8s.io/queue-name label" in pod.output


def test_the_namespace_selector_is_judged_on_the_live_namespace(fleet: ControlPlane) -> None:
    """Kueue matches the ClusterQueue's namespaceSelector against the live Namespace (v0.19.2
    pkg/workload/resources.go:237-246): with ft-nlp's team label taken off in the cluster, a
    job the policy's labels admit pends, Misconfigured, and the answer is to sync the policy's
    labels, not to add them to it."""
    label = "hetgitops.io/team"
    asked = ("--team", "finetune-nlp", "--card", "h100-80gb", "--gpus", "4", "--format", "json")
    fleet.kubectl("label", "namespace", "ft-nlp", f"{label}-")
    try:
        result = _explain(fleet, *asked)
    finally:
        fleet.kubectl("label", "namespace", "ft-nlp", f"{label}=finetune-nlp")
    assert result.exit_code == 1, result.output
    (e,) = json.loads(result.stdout)["explanations"]
    assert (e["verdict"], e["reason"]) == ("pending", "Misconfigured"), e
    assert e["message"] == "workload namespace doesn't match ClusterQueue selector"
    (hint,) = e["policy"]
    labelled, renders = hint.split("; the policy renders ")
    # the live labels: the API server's own name label among them, the team label not
    assert labelled.startswith("namespace ft-nlp is labelled in the cluster "), hint
    assert "kubernetes.io/metadata.name=ft-nlp" in labelled and label not in labelled
    assert renders.startswith(f"{label}=finetune-nlp on it"), hint
    assert f"the policy renders {label}=finetune-nlp on it, which the selector selects" in hint
    assert "spec.namespaceLabels" not in hint and e["fixes"] == []
    # labelled again as the policy renders it: judged on the same live reading, selected
    again = json.loads(_explain(fleet, *asked).stdout)["explanations"][0]
    assert again["verdict"] == "admitted", again
