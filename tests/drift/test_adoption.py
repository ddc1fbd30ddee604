"""drift: an unlabelled object of a rendered name is adopted, not missing; unmanaged queues on
managed flavors and pools are reported as competing, with their quota."""

from __future__ import annotations

import copy
from pathlib import Path

from hetgitops import api
from hetgitops.drift.adoption import adopts, competing, managed

REPO = Path(__file__).resolve().parents[2]


def _render() -> api.Result:
    return api.render([REPO / "policies"])


def _unlabelled(obj: dict) -> dict:  # type: ignore[type-arg]
    copied = copy.deepcopy(obj)
    copied["metadata"].pop("labels", None)
    return copied


def test_a_hand_written_copy_of_a_rendered_queue_is_adopted_with_the_fields_that_change() -> None:
    result = _render()
    assert result.policy is not None and result.policy.fleet is not None
    queue = next(m for m in result.manifests if m.kind == "ClusterQueue")
    live = _unlabelled(queue.obj)
    assert not managed(live, result.policy.fleet) and managed(queue.obj, result.policy.fleet)
    same = adopts(queue, live, None)
    assert same.rule == "drift-unmanaged"
    assert same.message.endswith("the first sync adopts it; no field of its spec changes")
    live["spec"]["stopPolicy"] = "Hold"
    changed = adopts(queue, live, None)
    assert "spec.stopPolicy to 'None' (live 'Hold')" in changed.message


def test_an_unmanaged_queue_on_a_managed_flavor_competes_with_its_quota() -> None:
    result = _render()
    assert result.policy is not None and result.policy.fleet is not None
    flavor = next(m for m in result.manifests if m.kind == "ResourceFlavor")
    rogue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "hand-made"},
        "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": flavor.name, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}]},
        ]}]},
    }  # fmt: skip
    found = list(competing(result.manifests, {"ClusterQueue": [rogue]}, result.policy.fleet))
    assert [d.rule for d in found] == ["drift-competing-queue"]
    assert f"ResourceFlavor {flavor.name} (nvidia.com/gpu 64)" in found[0].message
    other = copy.deepcopy(rogue)
    other["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "someone-elses"
    assert list(competing(result.manifests, {"ClusterQueue": [other]}, result.policy.fleet)) == []


def test_a_team_namespace_made_by_hand_is_adopted_not_missing() -> None:
    """Namespaces were listed by label selector only, so an unlabelled team namespace (every
    brownfield cluster's) was 'not in the cluster' right after import (the busy simulated
    fleet, tests/sim/test_sim_import.py). They are listed whole now, as the queueing kinds."""
    from hetgitops.drift.adoption import ADOPTABLE

    assert "Namespace" in ADOPTABLE
    result = _render()
    namespace = next(m for m in result.manifests if m.kind == "Namespace")
    live = _unlabelled(namespace.obj)
    live["spec"] = {"finalizers": ["kubernetes"]}  # the API server's default
    live["status"] = {"phase": "Active"}
    adopted = adopts(namespace, live, None)
    assert adopted.rule == "drift-unmanaged"
    assert adopted.message.endswith("no field of its spec changes"), adopted.message
