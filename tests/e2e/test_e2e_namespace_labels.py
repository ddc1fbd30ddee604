"""E2E: what the policy language learnt to say of hand-written clusters (issue 32 item 5),
checked by the real API server on a generated cluster (tests/generated/clustergen.py, seed 12:
namespaces selected by a label of their own, ResourceQuotas capping GPUs, a
WorkloadPriorityClass with its own description). The dump's Namespaces, ClusterQueues,
LocalQueues, ResourceQuotas and priority classes are created; the import of the dump is
rendered; a server-side dry run of each rendered object of those kinds changes nothing (of a
ClusterQueue, its namespaceSelector: seed 12's quotas say what item 5's other parts cover); and a
team Namespace created from the render alone is one the live ClusterQueue's namespaceSelector
selects, by the API server's own label selection."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.controlplane.harness import ControlPlane

from hetgitops.live.client import Cluster, Resource
from hetgitops.model import quantities
from tests.adopt.importing import import_text
from tests.generated.clustergen import cluster

pytestmark = pytest.mark.e2e

SEED = 12
KINDS = {
    "Namespace": ("", "v1", "namespaces", False),
    "ClusterQueue": ("kueue.x-k8s.io", "v1beta2", "clusterqueues", False),
    "LocalQueue": ("kueue.x-k8s.io", "v1beta2", "localqueues", True),
    "ResourceQuota": ("", "v1", "resourcequotas", True),
    "PriorityClass": ("scheduling.k8s.io", "v1", "priorityclasses", False),
    "WorkloadPriorityClass": ("kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", False),
}
FIELDS = {  # what the round trip compares, per kind (and a Namespace's labels); of a
    # ClusterQueue only the selector (its quotas are other constructs of item 5, named today)
    "ClusterQueue": ("namespaceSelector",),
    "LocalQueue": ("spec",),
    "ResourceQuota": ("spec",),
    "PriorityClass": ("value", "description"),
    "WorkloadPriorityClass": ("value", "description"),
}


def _resource(kind: str) -> Resource:
    group, version, plural, namespaced = KINDS[kind]
    return Resource(group, version, plural, kind, namespaced)


@pytest.fixture(scope="module")
def created(control_plane: ControlPlane) -> Iterator[list[dict[str, Any]]]:
    objects = [o for o in cluster(SEED).objects if o["kind"] in KINDS]
    body = {"apiVersion": "v1", "kind": "List", "items": objects}
    control_plane.kubectl(
        "apply", "--server-side", "--field-manager=kubectl-admin", "-f", "-",
        input=json.dumps(body),
    )  # fmt: skip
    yield objects
    for obj in reversed(objects):
        meta = obj["metadata"]
        if obj["kind"] == "Namespace":  # never finishes terminating here: made bare instead
            bare = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": meta["name"]}}
            control_plane.kubectl("replace", "-f", "-", input=json.dumps(bare))
            continue
        where = ["-n", meta["namespace"]] if meta.get("namespace") else []
        control_plane.kubectl(
            "delete", obj["kind"].lower(), meta["name"], *where, "--wait=false",
            "--ignore-not-found",
        )  # fmt: skip


def _same(kind: str, after: dict[str, Any], live: dict[str, Any]) -> bool:
    def canon(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: canon(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [canon(v) for v in value]
        if isinstance(value, int | str) and key and key not in ("name", "clusterQueue"):
            try:
                return quantities.normalize(value)
            except ValueError:
                return value
        return value

    if kind == "ClusterQueue":
        after, live = after["spec"], live["spec"]
    return all(canon(after.get(f)) == canon(live.get(f)) for f in FIELDS[kind])


def test_the_import_of_a_generated_cluster_dry_runs_with_no_change(
    control_plane: ControlPlane, created: list[dict[str, Any]], tmp_path: Path
) -> None:
    got = import_text(cluster(SEED).text(), tmp_path / "p")
    assert not got.rendered.failed(), [str(d) for d in got.rendered.diagnostics]
    live = Cluster(control_plane.admin_kubeconfig)
    held = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in created}
    compared: dict[str, int] = {}
    try:
        for manifest in got.rendered.manifests:
            if not manifest.applied:
                continue  # the GPU Operator's Helm values: a file, not an object
            obj, meta = manifest.obj, manifest.obj["metadata"]
            key = (obj["kind"], meta.get("namespace", ""), meta["name"])
            if key not in held:
                continue
            where = ["-n", meta["namespace"]] if meta.get("namespace") else []
            plural = f"{KINDS[obj['kind']][2]}.{KINDS[obj['kind']][0]}".rstrip(".")
            here = json.loads(
                control_plane.kubectl("get", plural, meta["name"], *where, "-o", "json").stdout
            )
            after = live.apply_dry_run(_resource(obj["kind"]), obj)
            if obj["kind"] == "Namespace":  # the cluster's labels stay, none changes value
                was = here["metadata"].get("labels") or {}
                now = after["metadata"].get("labels") or {}
                assert {k: now.get(k) for k in was} == was, meta["name"]
            else:
                assert _same(obj["kind"], after, here), (key, after, here)
            compared[obj["kind"]] = compared.get(obj["kind"], 0) + 1
    finally:
        live.close()
    # Every team namespace, queue and quota, and both priority classes of each tier.
    assert compared == {
        "Namespace": 5,
        "ClusterQueue": 5,
        "LocalQueue": 5,
        "ResourceQuota": 4,
        "PriorityClass": 2,
        "WorkloadPriorityClass": 2,
    }, compared


def test_a_namespace_created_from_the_render_is_selected_by_the_live_queue(
    control_plane: ControlPlane, created: list[dict[str, Any]], tmp_path: Path
) -> None:
    got = import_text(cluster(SEED).text(), tmp_path / "p")
    labelled = {o["metadata"]["name"] for o in created if o["kind"] == "Namespace"
                and o["metadata"].get("labels")}  # fmt: skip
    queues = {o["metadata"]["namespace"]: o["spec"]["clusterQueue"] for o in created
              if o["kind"] == "LocalQueue"}  # fmt: skip
    assert labelled, "seed 12 labels namespaces its queues select"
    for name in sorted(labelled):
        rendered = next(
            m.obj for m in got.rendered.manifests
            if m.obj["kind"] == "Namespace" and m.obj["metadata"]["name"] == name
        )  # fmt: skip
        fresh = json.loads(json.dumps(rendered))
        fresh["metadata"]["name"] = f"fresh-{name}"
        control_plane.kubectl(
            "apply", "--server-side", "--field-manager=hetgitops", "-f", "-",
            input=json.dumps(fresh),
        )  # fmt: skip
        queue = json.loads(
            control_plane.kubectl("get", "clusterqueue", queues[name], "-o", "json").stdout
        )
        match = queue["spec"]["namespaceSelector"]["matchLabels"]
        selector = ",".join(f"{k}={v}" for k, v in sorted(match.items()))
        selected = control_plane.kubectl(
            "get", "namespaces", "-l", selector, "-o", "name"
        ).stdout.split()
        assert f"namespace/fresh-{name}" in selected, (selector, selected)
