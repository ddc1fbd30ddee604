"""E2E, issue 32 item 5: a hand-written cluster (tests/generated/clustergen.py) whose Volcano
queues each span a team's pools, created on the real API server with Volcano's Queue CRD and
imported live. The written policy says each as `spec.volcano.layout: team`, and its render,
server-side dry-run applied as field manager hetgitops, changes no Queue (one with deserved,
one without; a team over several pools)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from drift_fleet import reset, set_node_status
from harness.controlplane.harness import ControlPlane

from hetgitops.adopt import roundtrip, sources
from hetgitops.adopt.run import import_objects
from hetgitops.diagnostics import Span
from hetgitops.live.client import Cluster, Resource
from tests.generated.clustergen import cluster as generated

pytestmark = pytest.mark.e2e

SEED = 1029  # five teams, each with one queue across its pools; two say deserved too
SYSTEM = {"default", "kube-system", "kube-public", "kube-node-lease"}


def _namespaces(plane: ControlPlane) -> set[str]:
    return set(plane.kubectl("get", "namespaces", "-o", "name").stdout.split())


@pytest.fixture
def created(control_plane: ControlPlane) -> Iterator[list[dict[str, Any]]]:
    """The cluster of SEED on the API server; removed afterwards (namespaces finalized by
    hand: this control plane runs no namespace controller)."""
    reset(control_plane)
    before = _namespaces(control_plane)
    objects = generated(SEED).objects
    specs = [{k: v for k, v in o.items() if k != "status"} for o in objects]
    listed = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    wanted = {o["metadata"].get("namespace") for o in objects} - listed - {None}
    specs += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in wanted]
    specs.sort(key=lambda o: o["kind"] != "Namespace")  # namespaces before what is in them
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": specs})
    try:
        args = ["apply", "--server-side", "--field-manager=kubectl-admin", "-f", "-"]
        made = control_plane.kubectl(*args, input=body, check=False)
        assert made.returncode == 0, made.stderr
        for obj in objects:
            if obj["kind"] == "Node":
                set_node_status(control_plane, obj["metadata"]["name"], obj["status"])
        yield objects
    finally:
        _clear(control_plane, objects, before)


def _clear(plane: ControlPlane, objects: list[dict[str, Any]], before: set[str]) -> None:
    refs = [
        {
            "apiVersion": o["apiVersion"],
            "kind": o["kind"],
            "metadata": {k: v for k, v in o["metadata"].items() if k in ("name", "namespace")},
        }
        for o in objects
        if o["kind"] != "Namespace"
    ]
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": refs})
    plane.kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", input=body)
    for name in sorted(_namespaces(plane) - before):
        short = name.split("/")[1]
        plane.kubectl("delete", "namespace", short, "--wait=false", "--ignore-not-found")
        done = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": short}}
        done["spec"] = {"finalizers": []}
        raw = f"/api/v1/namespaces/{short}/finalize"
        plane.kubectl("replace", "--raw", raw, "-f", "-", input=json.dumps(done))
    left = _namespaces(plane) - before
    assert not left, f"namespaces still there after finalizing: {sorted(left)}"


def _volcano(obj: dict[str, Any]) -> dict[str, Any]:
    """The Queue in the round trip's view: the Volcano webhook's defaults (this control plane
    runs none) filled in on both sides, quantities in one form."""
    return roundtrip._defaulted(sources.Imported(obj, Span("live")))


def test_spanning_queues_imported_live_dry_run_with_no_change(
    control_plane: ControlPlane, created: list[dict[str, Any]], tmp_path: Any
) -> None:
    written = {
        o["metadata"]["name"]: o["spec"]
        for o in created
        if o["kind"] == "Queue" and o["metadata"]["name"] not in ("root", "default")
    }
    assert written and all("affinity" not in s for s in written.values())
    read = sources.from_cluster(control_plane.admin_kubeconfig, None)
    result = import_objects(read, tmp_path / "policy", cluster="lab")
    named = [d.message for d in result.diagnostics if d.message.startswith("Queue ")]
    assert not [m for m in named if m.split(":")[0].removeprefix("Queue ") in written], named
    docs = yaml.safe_load_all(result.files["teams.yaml"])
    teams = {t["metadata"]["name"]: t["spec"] for t in docs if t}
    assert {teams[n]["volcano"]["layout"] for n in written} == {"team"}
    assert any(len(teams[n]["quotas"]) > 1 for n in written)
    assert result.rendered is not None and not result.rendered.failed()
    live = {i.name: i.obj for i in read.objects if i.kind == "Queue"}
    client = Cluster(control_plane.admin_kubeconfig)
    compared = []
    try:
        queue = Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False)
        for manifest in result.rendered.manifests:
            name = manifest.obj["metadata"]["name"]
            if manifest.obj["kind"] != "Queue" or name not in written:
                continue
            after = client.apply_dry_run(queue, manifest.obj)
            assert _volcano(after)["spec"] == _volcano(live[name])["spec"], name
            compared.append(name)
    finally:
        client.close()
    assert sorted(compared) == sorted(written)
    assert any("deserved" in written[n] for n in compared)
    assert any("deserved" not in written[n] for n in compared)
