"""What the live import tests compare: an imported object against its render, server-side
dry-run applied by the real API server, in the round trip's view (ConfigMaps by what their
documents say, Volcano queues with the webhook's defaults, quota quantities in one form).
Shared by the hand-written fixtures (test_e2e_import.py) and the generated clusters
(test_e2e_import_generated.py, test_e2e_import_volcano_team.py), which `seeded` creates on
the API server and removes afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from drift_fleet import reset, set_node_status
from harness.controlplane.harness import ControlPlane

from hetgitops.adopt import roundtrip, sources
from hetgitops.diagnostics import Span
from hetgitops.live.client import Cluster, Resource
from hetgitops.model import quantities
from tests.generated.clustergen import cluster as generated

QUANTITY_KEYS = {"nominalQuota", "borrowingLimit", "lendingLimit"}


def dry_run(cluster: Cluster, rendered: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server would store `rendered`, applied as field manager
    hetgitops (nothing is written)."""
    meta = rendered["metadata"]
    group, _, version = rendered["apiVersion"].rpartition("/")
    resource = Resource(
        group, version, plural(rendered["kind"]), rendered["kind"], bool(meta.get("namespace"))
    )
    return cluster.apply_dry_run(resource, rendered)


def compared(kind: str, after: dict[str, Any], live: dict[str, Any]) -> tuple[Any, Any]:
    """(after the dry run, as the cluster has it) in the round trip's view of `kind`."""
    if kind == "ConfigMap":
        # Each key holds a YAML document: the render writes it in its own layout, the
        # mig-manager, device plugin and Volcano scheduler read what it says.
        return _parsed(after), _parsed(live)
    if kind == "Queue":
        # This control plane runs no Volcano webhook: the defaults it would add (weight,
        # reclaimable) and parent root as the scheduler reads an empty one are filled in on
        # both sides, quantities in one form.
        return _volcano(after), _volcano(live)
    # An absent spec and an empty one say the same (a Cohort without a parent or quota).
    # Quotas are int-or-string quantities: a hand-written `8` is stored as the number, the
    # render writes "8"; the same quantity (Argo CD's diff rules compare them so).
    fields = roundtrip.COMPARED[kind]
    return (
        {f: _quantities(after.get(f)) or None for f in fields},
        {f: _quantities(live.get(f)) or None for f in fields},
    )


def _volcano(obj: dict[str, Any]) -> dict[str, Any]:
    return roundtrip._defaulted(sources.Imported(obj, Span("live")))


def _parsed(obj: dict[str, Any]) -> dict[str, Any]:
    """The data's documents as the round trip reads them (Volcano's actions trimmed, as the
    scheduler splits them)."""
    return roundtrip._parsed(obj)["data"]


def _quantities(value: Any, key: str = "") -> Any:
    """`value` with every quota quantity in one canonical form (hetgitops' own)."""
    if isinstance(value, dict):
        return {k: _quantities(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_quantities(v) for v in value]
    if key in QUANTITY_KEYS and isinstance(value, int | float | str):
        return quantities.normalize(value)
    return value


def plural(kind: str) -> str:
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"  # Topology -> topologies
    return lower + "es" if lower.endswith("s") else lower + "s"


def namespaces(plane: ControlPlane) -> set[str]:
    """The cluster's namespaces, as `namespace/NAME`."""
    return set(plane.kubectl("get", "namespaces", "-o", "name").stdout.split())


@contextmanager
def seeded(plane: ControlPlane, seed: int) -> Iterator[tuple[list[dict[str, Any]], set[str]]]:
    """(the objects, the namespaces before): the generated cluster of `seed`
    (tests/generated/clustergen.py) created on the API server after a reset, Nodes with their
    status; removed afterwards."""
    reset(plane)
    before = namespaces(plane)
    objects = generated(seed).objects
    specs = [{k: v for k, v in o.items() if k != "status"} for o in objects]
    # The GPU Operator's namespace is not in the dump (its ConfigMaps are): a cluster has it.
    listed = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    wanted = {o["metadata"].get("namespace") for o in objects} - listed - {None}
    specs += [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        for name in sorted(wanted)
    ]
    # Namespaces first: an object cannot be created in a namespace that does not exist yet.
    specs.sort(key=lambda o: o["kind"] != "Namespace")
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": specs})
    try:
        made = plane.kubectl(
            "apply", "--server-side", "--field-manager=kubectl-admin", "-f", "-",
            input=body, check=False,
        )  # fmt: skip
        assert made.returncode == 0, f"seed {seed}: the API server refused the dump: {made.stderr}"
        for obj in objects:
            if obj["kind"] == "Node":
                set_node_status(plane, obj["metadata"]["name"], obj["status"])
        yield objects, before
    finally:
        _clear(plane, objects, before)


def _clear(plane: ControlPlane, objects: list[dict[str, Any]], before: set[str]) -> None:
    """Delete the seed's objects; its namespaces are finalized by hand (this control plane
    runs no namespace controller), so the next seed starts from the cluster before it."""
    refs = [
        {"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": {
            k: v for k, v in o["metadata"].items() if k in ("name", "namespace")}}
        for o in objects if o["kind"] != "Namespace"
    ]  # fmt: skip
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": refs})
    plane.kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", input=body)
    for name in sorted(namespaces(plane) - before):
        short = name.split("/")[1]
        plane.kubectl("delete", "namespace", short, "--wait=false", "--ignore-not-found")
        done = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": short},
                "spec": {"finalizers": []}}  # fmt: skip
        plane.kubectl(
            "replace", "--raw", f"/api/v1/namespaces/{short}/finalize", "-f", "-",
            input=json.dumps(done),
        )  # fmt: skip
    left = namespaces(plane) - before
    assert not left, f"namespaces still there after finalizing: {sorted(left)}"
