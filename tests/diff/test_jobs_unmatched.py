"""jobs-unmatched: job templates rendered from the base policy that no flavor of the head
render admits (Kueue v0.19.2's flavor selector: flavorassigner.go checkFlavorForPodSets)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetgitops.diff.blast import LiveWork, radius
from hetgitops.diff.hazards.jobs import Flavor, selects
from tests.diff.test_golden import run_edits

RENAME = [
    ("pools/inference.yaml", "  name: l40s-infer", "  name: l40s-serving"),
    ("teams/others.yaml", "{pool: l40s-infer,", "{pool: l40s-serving,"),
    ("teams/training.yaml", "{pool: l40s-infer,", "{pool: l40s-serving,"),
]


def test_a_renamed_pool_strands_the_templates_pinned_to_its_old_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_edits(tmp_path, monkeypatch, RENAME)
    (found,) = [h for h in result.hazards if h.rule == "jobs-unmatched"]
    assert found.subject == "Job templates for pool l40s-infer"
    # ray-rlhf: only its rollout group (one of four Kueue pod sets) selected l40s-infer.
    templates = (
        "data-filter/finetune-vision/l40s-48gb.yaml, llm-serving/online-inference/l40s-48gb.yaml, "
        "ray-rlhf/finetune-vision/a800-80gb+l40s-48gb.yaml, "
        "ray-serve/online-inference/l40s-48gb.yaml"
    )
    assert f"4 job template(s) that `hetgitops jobs` rendered before this change ({templates})" in (
        found.message
    )
    assert "re-render the job templates" in found.action
    queues = json.loads(dict(found.scope)["unmatched"])["queues"]
    assert sorted(queues) == ["ft-vision/finetune-vision", "serving/online-inference"]


def test_a_change_that_keeps_node_selection_renders_no_templates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Quota edits leave every flavor's labels alone: nothing can go unmatched."""
    edit = ("teams/others.yaml", "{pool: l40s-infer, cards: 24,", "{pool: l40s-infer, cards: 16,")
    result = run_edits(tmp_path, monkeypatch, [edit])
    assert [h for h in result.hazards if h.rule == "jobs-unmatched"] == []


def test_the_selector_keeps_only_the_flavors_own_keys() -> None:
    """flavorassigner.go:1224-1227: a pod's selector key the flavor has no label for is ignored;
    a key it has must match."""
    flavor = {"example.io/pool": "new", "example.io/card-type": "l40s"}
    pinned = {"nodeSelector": {"example.io/pool": "old", "example.io/card-type": "l40s"}}
    loose = {"nodeSelector": {"example.io/card-type": "l40s", "zone": "a"}}
    assert not selects(pinned, flavor, set(flavor))
    assert selects(loose, flavor, set(flavor))
    term = {"matchExpressions": [{"key": "example.io/pool", "operator": "In", "values": ["old"]}]}
    affinity = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    }
    assert not selects(affinity, flavor, set(flavor))
    assert selects(affinity, {"other": "x"}, {"other"})  # an emptied term matches any flavor


def test_an_untolerated_flavor_taint_rules_the_flavor_out() -> None:
    taint = {"key": "example.io/retiring-flavor", "effect": "NoSchedule"}
    flavor = Flavor("f", {"example.io/pool": "p"}, (taint,), ())
    spec = {"nodeSelector": {"example.io/pool": "p"}, "containers": []}
    assert not flavor.admits(spec)
    tolerated = dict(
        spec, tolerations=[{"key": "example.io/retiring-flavor", "operator": "Exists"}]
    )
    assert flavor.admits(tolerated)


def test_live_counts_the_workloads_whose_pods_no_flavor_admits_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_edits(tmp_path, monkeypatch, RENAME)
    (found,) = [h for h in result.hazards if h.rule == "jobs-unmatched"]
    old = {"hetgitops.io/card-type": "l40s-48gb", "hetgitops.io/pool": "l40s-infer"}

    def workload(name: str, selector: dict[str, str], admitted: bool) -> dict[str, object]:
        status = {"conditions": [{"type": "QuotaReserved", "status": "True"}]} if admitted else {}
        return {
            "metadata": {"name": name, "namespace": "serving"},
            "spec": {
                "queueName": "online-inference",
                "podSets": [{"template": {"spec": {"nodeSelector": selector, "containers": []}}}],
            },
            "status": status,
        }

    work = LiveWork(
        workloads=[
            workload("pinned-pending", old, False),
            workload("pinned-running", old, True),
            workload("card-only", {"hetgitops.io/card-type": "l40s-48gb"}, False),
        ],
        team_of_namespace={"serving": "online-inference"},
    )
    counted = radius(found, work)
    assert (dict(counted.pending), dict(counted.running)) == (
        {"online-inference": 1},
        {"online-inference": 1},
    )


def test_live_counts_a_heterogeneous_ray_workload_one_of_whose_pod_sets_lost_its_flavor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kueue gives each pod set its own flavor: a RayJob whose head sits on the A800s and whose
    rollout group sat on l40s-infer is stranded by the rename, though the head still fits."""
    result = run_edits(tmp_path, monkeypatch, RENAME)
    (found,) = [h for h in result.hazards if h.rule == "jobs-unmatched"]
    a800 = {"hetgitops.io/card-type": "a800-80gb", "hetgitops.io/pool": "a800-train"}
    l40s = {"hetgitops.io/card-type": "l40s-48gb", "hetgitops.io/pool": "l40s-infer"}
    toleration = {"key": "hetgitops.io/pool", "operator": "Equal", "value": "a800-train"}

    def pod_set(selector: dict[str, str], tolerations: list[object]) -> dict[str, object]:
        spec = {"nodeSelector": selector, "tolerations": tolerations, "containers": []}
        return {"template": {"spec": spec}}

    def ray_workload(name: str, groups: list[dict[str, object]]) -> dict[str, object]:
        head = pod_set(a800, [dict(toleration, effect="NoSchedule")])
        return {
            "metadata": {"name": name, "namespace": "ft-vision"},
            "spec": {"queueName": "finetune-vision", "podSets": [head, *groups]},
            "status": {},
        }

    work = LiveWork(
        workloads=[
            ray_workload("rayjob-ray-rlhf-x", [pod_set(l40s, [])]),
            ray_workload(
                "rayjob-a800-only", [pod_set(a800, [dict(toleration, effect="NoSchedule")])]
            ),
        ],
        team_of_namespace={"ft-vision": "finetune-vision"},
    )
    assert dict(radius(found, work).pending) == {"finetune-vision": 1}
