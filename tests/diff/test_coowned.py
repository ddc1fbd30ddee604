"""Issue 38 item 11: `field-co-owned`, a field the change removes that two field managers own
(the API server keeps it). Live objects are managedFields captured from a real kube-apiserver
(tests/live/managed_fields/, described in tests/live/test_managed_fields.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hetgitops.diff.hazards.coowned import field_co_owned, removed_owned
from hetgitops.diff.live_fields import updated
from hetgitops.output.manifests import Manifest

CASES = Path(__file__).resolve().parents[1] / "live" / "managed_fields"
ARGO, FLUX = "argocd-controller", "kustomize-controller"


def _case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CASES / f"{name}.json").read_text())
    return data


def _render(live: dict[str, Any]) -> dict[str, Any]:
    """The object as a render writes it: no server fields."""
    obj = copy.deepcopy(live)
    obj["metadata"] = {k: obj["metadata"][k] for k in ("name", "namespace") if k in obj["metadata"]}
    return obj


def test_removing_a_capability_key_two_managers_own_is_the_hazard() -> None:
    live = _case("volcano-queue")
    old = _render(live)
    new = copy.deepcopy(old)
    del new["spec"]["capability"]["nvidia.com/mig-1g.10gb"]
    (hazard,) = field_co_owned(old, new, live)
    assert hazard.rule == "field-co-owned"
    assert hazard.subject == "Queue mf-capture: spec.capability[nvidia.com/mig-1g.10gb]"
    assert f"{ARGO}, {FLUX} own it" in hazard.message
    assert "keeps the field" in hazard.message
    assert (
        "kubectl patch queue.scheduling.volcano.sh mf-capture --type=json -p "
        '\'[{"op": "remove", "path": "/spec/capability/nvidia.com~1mig-1g.10gb"}]\''
    ) in hazard.action


def test_a_field_the_applier_alone_owns_goes_with_the_sync() -> None:
    live = _case("volcano-queue")
    old = _render(live)
    new = copy.deepcopy(old)
    del new["spec"]["capability"]["cpu"]
    assert removed_owned(old, new, live) == {("f:spec", "f:capability", "f:cpu"): (ARGO,)}
    assert list(field_co_owned(old, new, live)) == []


def test_a_changed_value_is_not_a_removal() -> None:
    live = _case("volcano-queue")
    old = _render(live)
    new = copy.deepcopy(old)
    new["spec"]["capability"]["nvidia.com/mig-1g.10gb"] = "7"
    assert list(field_co_owned(old, new, live)) == []


def test_an_atomic_list_is_replaced_not_removed() -> None:
    live = _case("clusterqueue")
    old = _render(live)
    new = copy.deepcopy(old)
    new["spec"]["resourceGroups"][0]["flavors"] = []
    assert removed_owned(old, new, live) == {}


def test_a_list_entry_by_merge_key_reported_once_with_all_its_owners() -> None:
    live = _case("pod")
    old = _render(live)
    new = copy.deepcopy(old)
    new["spec"]["containers"] = [c for c in new["spec"]["containers"] if c["name"] != "side"]
    (hazard,) = field_co_owned(old, new, live)
    assert hazard.subject == "Pod default/mf-capture: spec.containers[name=side]"
    assert '"path": "/spec/containers/1"' in hazard.action
    assert "-n default" in hazard.action


def test_only_objects_the_change_updates_are_read() -> None:
    live = _case("volcano-queue")
    same = Manifest(target="volcano", obj=_render(live))
    changed = copy.deepcopy(_render(live))
    changed["spec"]["weight"] = 2
    assert updated([same], [same]) == []
    assert updated([same], [Manifest(target="volcano", obj=changed)])[0][1].obj == changed


def test_a_kind_that_cannot_be_listed_is_named_unread_not_skipped() -> None:
    """A Volcano Queue LIST the credentials may not make: no live copy, and the kind comes back
    unread (the CLI says so) instead of the hazard silently passing."""
    from hetgitops.diff.live_fields import read_live
    from hetgitops.live.errors import Forbidden, NotServed
    from hetgitops.live.kinds import KindKey

    class Refusing:
        def list(self, resource: object) -> list[dict[str, object]]:
            if "customresourcedefinitions" in str(resource):
                return [
                    {
                        "spec": {
                            "group": "scheduling.volcano.sh",
                            "names": {"kind": "Queue", "plural": "queues"},
                            "scope": "Cluster",
                            "versions": [{"name": "v1beta1", "served": True}],
                        }
                    }
                ]
            if "queues" in str(resource):
                raise Forbidden("list queues", "forbidden")
            raise NotServed("quotas")

    queue = KindKey("scheduling.volcano.sh", "v1beta1", "Queue")
    quota = KindKey("", "v1", "ResourceQuota")
    found, unread = read_live(Refusing(), {queue, quota})  # type: ignore[arg-type]
    assert found == {}
    assert unread == tuple(sorted({str(queue), str(quota)}))
