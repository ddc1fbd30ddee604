"""Issue 38 item 11: the one reader of `metadata.managedFields` (hetgitops.live.managed_fields),
on objects captured from a real kube-apiserver (tests/harness/controlplane, v1.35):

- volcano-queue.json: a Volcano Queue applied by argocd-controller with capability cpu,
  nvidia.com/gpu and nvidia.com/mig-1g.10gb, then by kustomize-controller with only the MIG key
  (so both own it), then labelled by `kubectl label` (an Update);
- clusterqueue.json: a Kueue ClusterQueue (resourceGroups is an atomic list);
- pod.json: a Pod applied by argocd-controller with containers main and side (ports keyed by
  containerPort and protocol) and by kustomize-controller with side alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hetgitops.drift.objects import compare_object
from hetgitops.drift.ownership import Ownership
from hetgitops.live.managed_fields import (
    json_pointer,
    locate,
    managed_fields,
    owners,
    present,
    shown,
)
from hetgitops.output.manifests import Manifest

CASES = Path(__file__).parent / "managed_fields"
ARGO, FLUX = "argocd-controller", "kustomize-controller"
MIG = ("f:spec", "f:capability", "f:nvidia.com/mig-1g.10gb")
SIDE = ("f:spec", "f:containers", 'k:{"name":"side"}')


def _case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CASES / f"{name}.json").read_text())
    return data


def test_entries_keep_manager_operation_and_every_owned_field() -> None:
    entries = managed_fields(_case("volcano-queue"))
    assert [(e.manager, e.operation) for e in entries] == [
        (FLUX, "Apply"),
        (ARGO, "Apply"),
        ("kubectl-label", "Update"),
    ]
    assert entries[0].fields == {MIG, ("f:spec", "f:weight")}
    assert ("f:metadata", "f:labels", "f:owner") in entries[2].fields


def test_owners_per_path_name_every_manager() -> None:
    found = owners(_case("volcano-queue"))
    assert found[MIG] == (ARGO, FLUX)
    assert found[("f:spec", "f:capability", "f:cpu")] == (ARGO,)
    assert found[("f:metadata", "f:labels", "f:owner")] == ("kubectl-label",)
    # A list owned whole (atomic) is one field, nothing inside it.
    assert owners(_case("clusterqueue"))[("f:spec", "f:resourceGroups")] == (ARGO,)


def test_list_entries_by_merge_key_and_their_dot_member() -> None:
    pod = _case("pod")
    found = owners(pod)
    assert found[SIDE] == (ARGO, FLUX)  # the "." key: the entry itself is owned
    assert found[(*SIDE, "f:image")] == (ARGO, FLUX)
    port = (
        "f:spec",
        "f:containers",
        'k:{"name":"main"}',
        "f:ports",
        'k:{"containerPort":81,"protocol":"TCP"}',
    )
    assert found[port] == (ARGO,)
    assert locate(SIDE, pod) == ("spec", "containers", 1)
    assert locate(port, pod) == ("spec", "containers", 0, "ports", 1)


def test_present_looks_a_path_up_in_another_object_of_the_kind() -> None:
    queue = _case("volcano-queue")
    assert present(MIG, queue)
    without = json.loads(json.dumps(queue))
    del without["spec"]["capability"]["nvidia.com/mig-1g.10gb"]
    assert not present(MIG, without)
    assert locate(MIG, without) == ("spec", "capability", "nvidia.com/mig-1g.10gb")  # loose
    pod = _case("pod")
    pod["spec"]["containers"] = pod["spec"]["containers"][:1]
    assert not present(SIDE, pod)


def test_paths_as_people_and_json_patch_name_them() -> None:
    assert shown(MIG) == "spec.capability[nvidia.com/mig-1g.10gb]"
    assert shown(SIDE) == "spec.containers[name=side]"
    assert json_pointer(("spec", "capability", "nvidia.com/mig-1g.10gb")) == (
        "/spec/capability/nvidia.com~1mig-1g.10gb"
    )


def test_drift_reads_ownership_through_the_one_reader() -> None:
    pod = _case("pod")
    writers = Ownership(pod).at(("spec", "containers", 1, "image"))
    assert sorted(w.manager for w in writers) == [ARGO, FLUX]


def _rendered(live: dict[str, Any], drop: str) -> Manifest:
    obj = {k: v for k, v in live.items() if k in ("apiVersion", "kind")}
    obj["metadata"] = {"name": live["metadata"]["name"], "labels": {"team": "a"}}
    spec = json.loads(json.dumps(live["spec"]))
    del spec["capability"][drop]
    obj["spec"] = spec
    return Manifest(target="volcano", obj=obj)


def test_drift_says_a_co_owned_field_the_policy_dropped_never_goes() -> None:
    queue = _case("volcano-queue")
    managers = (ARGO, FLUX, "hetgitops")
    # kubectl label's owner label is another manager's field: drift-added, as before.
    found = compare_object(
        _rendered(queue, "nvidia.com/mig-1g.10gb"), queue, None, managers=managers
    )
    rules = {d.rule: d.message for d in found}
    assert set(rules) == {"drift-co-owned", "drift-added"}, rules
    assert "spec.capability" in rules["drift-co-owned"] and FLUX in rules["drift-co-owned"]
    # Owned by the applier alone: the next sync removes it (drift-removed, unchanged).
    found = compare_object(_rendered(queue, "cpu"), queue, None, managers=managers)
    assert {d.rule for d in found} == {"drift-removed", "drift-added"}
