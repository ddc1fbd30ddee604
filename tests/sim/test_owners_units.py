"""owners.py without a cluster (issue 38, item 11): which managedFields entries a reset folds
into the case's tool, what it keeps, and what it reports as another writer."""

from __future__ import annotations

from typing import Any

from harness.simcluster import owners

Obj = dict[str, Any]


def _entry(manager: str, operation: str, fields: Obj, subresource: str = "") -> Obj:
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "time": f"2026-12-06T00:00:0{len(manager) % 10}Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


GPU = {"f:spec": {"f:capability": {"f:nvidia.com/gpu": {}}}}
CPU = {"f:spec": {"f:capability": {"f:cpu": {}}, "f:weight": {}}}
LABELS = {"f:metadata": {"f:labels": {"f:kustomize.toolkit.fluxcd.io/name": {}}}}
STATUS = {"f:status": {"f:state": {}}}


def _queue(*entries: Obj) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "online-inference-l40s-infer", "managedFields": list(entries)},
        "spec": {"capability": {"nvidia.com/gpu": "24", "cpu": "96"}, "weight": 1},
    }


def test_union_merges_nested_field_sets() -> None:
    merged = owners.union({}, GPU)
    owners.union(merged, CPU)
    owners.union(merged, LABELS)
    assert merged == {
        "f:spec": {"f:capability": {"f:nvidia.com/gpu": {}, "f:cpu": {}}, "f:weight": {}},
        "f:metadata": {"f:labels": {"f:kustomize.toolkit.fluxcd.io/name": {}}},
    }
    assert GPU == {"f:spec": {"f:capability": {"f:nvidia.com/gpu": {}}}}  # inputs untouched


def test_the_other_tools_and_kubectls_entries_fold_into_the_tools_apply_entry() -> None:
    queue = _queue(
        _entry("argocd-controller", "Apply", GPU),
        _entry("kustomize-controller", "Apply", {**CPU, **LABELS}),
        _entry("before-first-apply", "Update", GPU),
        _entry("vc-controller-manager", "Update", STATUS, subresource="status"),
        _entry("hetgitops-simcluster", "Apply", CPU),
    )
    out = owners.folded(queue, "argocd")
    assert out is not None
    entries = out["metadata"]["managedFields"]
    # The controller's status entry and the installer's own entry stay as they were.
    assert [e["manager"] for e in entries] == [
        "vc-controller-manager",
        "hetgitops-simcluster",
        "argocd-controller",
    ]
    mine = entries[-1]
    assert mine["operation"] == "Apply" and mine["fieldsV1"] == owners.union(
        owners.union(owners.union({}, GPU), CPU), LABELS
    )
    assert mine["time"] == max(e["time"] for e in queue["metadata"]["managedFields"][:3])
    assert owners.foreign([out], "argocd") == []
    assert owners.foreign([queue], "argocd") == [
        "Queue/online-inference-l40s-infer: "
        "['before-first-apply/Update', 'kustomize-controller/Apply']"
    ]
    assert queue["metadata"]["managedFields"][0]["manager"] == "argocd-controller"  # a copy


def test_each_tool_keeps_what_its_own_sync_writes() -> None:
    replaced = _queue(
        _entry("argocd-controller", "Apply", GPU), _entry("kubectl-replace", "Update", CPU)
    )
    # The Argo CD model writes Replace=true objects with kubectl replace: its own.
    assert owners.folded(replaced, "argocd") is None
    # Under Flux both are another tool's writes, folded into kustomize-controller's entry.
    flux = owners.folded(replaced, "flux")
    assert flux is not None
    assert [(e["manager"], e["operation"]) for e in flux["metadata"]["managedFields"]] == [
        ("kustomize-controller", "Apply")
    ]
    assert owners.folded(_queue(_entry("kustomize-controller", "Apply", GPU)), "flux") is None
