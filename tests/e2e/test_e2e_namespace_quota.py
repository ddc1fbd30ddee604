"""E2E: the team namespace's ResourceQuota as `render` writes it, enforced by the real
kube-apiserver's quota admission, against what `explain` predicts (issue 34): an adopted
quota's cpu and pods limits refuse the pod explain says they refuse, in the same words.

No controller-manager runs here, so the quota's status is set as its controller would first
write it (every hard key used 0); from there the API server's admission counts each pod it
creates into `status.used` itself."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import bundled
import pytest
from drift_fleet import applied, render, reset, server_side_apply
from harness.controlplane.harness import ControlPlane

from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.koord_runtime import KoordUsage
from hetgitops.explain.koord_state import _namespaces
from hetgitops.explain.workload import from_manifest
from hetgitops.model.policy import Policy
from tests.explain.test_namespace_quota import ADOPTED, job

pytestmark = pytest.mark.e2e

NAMESPACE = "ft-nlp"
QUOTA = "compute"


@pytest.fixture(scope="module")
def fleet(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ControlPlane, Policy, dict[str, str]]]:
    """finetune-nlp's Namespace and adopted ResourceQuota `compute`, as rendered, applied."""
    root = bundled.copy(
        tmp_path_factory.mktemp("ns-quota-e2e"), koordinator=True, team_fields=ADOPTED
    )
    plane = control_plane
    reset(plane)
    objects = [
        o
        for o in applied(render(root, targets=("core",)))
        if NAMESPACE in (o["metadata"]["name"], o["metadata"].get("namespace"))
    ]
    assert sorted(o["kind"] for o in objects) == ["Namespace", "ResourceQuota"]
    server_side_apply(plane, objects, manager="e2e-namespace-quota")
    hard = next(o for o in objects if o["kind"] == "ResourceQuota")["spec"]["hard"]
    yield plane, run.load_policy([root], dt.date(2026, 12, 1)), hard
    plane.kubectl("delete", "pods", "--all", "-n", NAMESPACE, "--grace-period=0", "--force")
    plane.kubectl("delete", "resourcequota", QUOTA, "-n", NAMESPACE)


def _fresh(plane: ControlPlane, hard: dict[str, str]) -> None:
    """No pods in the namespace, and the quota's status as its controller writes it."""
    plane.kubectl("delete", "pods", "--all", "-n", NAMESPACE, "--grace-period=0", "--force")
    status = {"hard": hard, "used": {key: "0" for key in hard}}
    plane.kubectl(
        "patch",
        "resourcequota",
        QUOTA,
        "-n",
        NAMESPACE,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def _pod(name: str, cpu: str) -> dict[str, Any]:
    template = job(1, cpu)["spec"]["template"]
    metadata = {"name": name, "namespace": NAMESPACE, **template["metadata"]}
    spec = template["spec"]
    spec["containers"][0]["image"] = "registry.k8s.io/pause:3.10"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _create(plane: ControlPlane, pod: dict[str, Any]) -> str:
    """The API server's refusal of `pod` ("" when it creates it)."""
    done = plane.kubectl("create", "-f", "-", input=json.dumps(pod), check=False)
    return "" if done.returncode == 0 else done.stderr.strip()


def _predicted(plane: ControlPlane, policy: Policy, pod: dict[str, Any]) -> str:
    """explain's message for `pod`, the namespace's live pods counted (the live path's
    reading of what a ResourceQuota holds as used)."""
    listed = json.loads(plane.kubectl("get", "pods", "-n", NAMESPACE, "-o", "json").stdout)
    used = KoordUsage(namespaces=_namespaces(listed["items"]))
    found = explain(policy, from_manifest(pod), koord=used)
    assert (found.verdict, found.reason) == ("rejected", "Forbidden"), found.message
    return found.message


@pytest.mark.parametrize(
    ("cpu", "created", "words"),
    [
        ("1", 3, "requested: cpu=1, used: cpu=3, limited: cpu=3"),
        ("500m", 4, "requested: pods=1, used: pods=4, limited: pods=4"),
    ],
)
def test_the_api_server_refuses_the_pod_explain_refuses(
    fleet: tuple[ControlPlane, Policy, dict[str, str]], cpu: str, created: int, words: str
) -> None:
    plane, policy, hard = fleet
    assert hard["cpu"] == "3" and hard["pods"] == "4"
    _fresh(plane, hard)
    for number in range(created):
        assert _create(plane, _pod(f"before-{number}", cpu)) == ""
    over = _pod("train", cpu)
    predicted = _predicted(plane, policy, over)
    refused = _create(plane, over)
    assert predicted == f'pods "train" is forbidden: exceeded quota: {QUOTA}, {words}'
    assert refused.endswith(predicted), refused
