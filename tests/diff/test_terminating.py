"""`object-terminating` (`diff --kubeconfig`): an object the change adds or updates whose live
copy is being deleted. Found by the busy day-2 harness (issue 38): the rename-team revert put
ClusterQueue finetune-vision back while its old copy waited on Kueue's resource-in-use finalizer,
and the queue stayed Terminating, admitting nothing, for every later case."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from hetgitops.diff import live_fields
from hetgitops.diff.hazards.terminating import object_terminating
from hetgitops.output.manifests import Manifest

QUEUE = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "finetune-vision"},
    "spec": {"cohort": "gpu"},
}
DELETING = {
    "metadata": {
        "deletionTimestamp": "2026-12-06T01:27:43Z",
        "finalizers": ["kueue.x-k8s.io/resource-in-use"],
    }
}


def _live(obj: dict[str, Any], deleting: bool) -> dict[str, Any]:
    meta = {**obj["metadata"], **(DELETING["metadata"] if deleting else {})}
    return {**obj, "metadata": meta}


def test_a_queue_being_deleted_is_named_with_what_holds_it() -> None:
    (hazard,) = object_terminating(QUEUE, _live(QUEUE, deleting=True))
    assert hazard.subject == "ClusterQueue finetune-vision"
    assert "since 2026-12-06T01:27:43Z" in hazard.message
    assert "kueue.x-k8s.io/resource-in-use" in hazard.message
    assert "admits nothing to it until every workload it admitted has finished" in hazard.message
    assert "kubectl get clusterqueue finetune-vision" in hazard.action
    assert list(object_terminating(QUEUE, _live(QUEUE, deleting=False))) == []


def test_added_and_updated_objects_are_read_and_kept_ones_are_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The revert's shape: the base lacks the queue (renamed away), the head adds it back; a
    namespaced object the head keeps unchanged is not read at all."""
    kept = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ft-vision"}}
    listed: list[str] = []

    class Cluster:
        requests = 0

        def list(self, resource: object) -> list[dict[str, Any]]:
            listed.append(str(resource))
            if "customresourcedefinitions" in str(resource):
                return [
                    {
                        "spec": {
                            "group": "kueue.x-k8s.io",
                            "names": {"kind": "ClusterQueue", "plural": "clusterqueues"},
                            "scope": "Cluster",
                            "versions": [{"name": "v1beta2", "served": True}],
                        }
                    }
                ]
            return [_live(QUEUE, deleting=True)]

    @contextlib.contextmanager
    def reading(kubeconfig: object, context: object) -> Iterator[Cluster]:
        yield Cluster()

    monkeypatch.setattr(live_fields, "reading", reading)
    before = [Manifest(target="core", obj=kept)]
    after = [*before, Manifest(target="kueue", obj=QUEUE)]
    found, _, unread = live_fields.co_owned(before, after)
    assert [(h.rule, h.subject) for h in found] == [
        ("object-terminating", "ClusterQueue finetune-vision")
    ]
    assert unread == ()
    assert not any("namespaces" in r for r in listed), listed
