"""Day-2 hazards of Koordinator's quota trees: each fires on the update Koordinator v1.8.0's
quota webhook refuses in any apply order, and stays quiet on the update it accepts."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hetgitops import api
from hetgitops.diff.hazards import hazards
from hetgitops.output.manifests import Manifest

REPO = Path(__file__).resolve().parents[2]
PREFIX = "quota.scheduling.koordinator.sh"


@pytest.fixture(scope="module")
def base() -> list[Manifest]:
    result = api.render([REPO / "policies"], api.Options(targets=("koordinator",)))
    assert not result.failed()
    return [m for m in result.manifests if m.applied]


def _edit(
    manifests: list[Manifest], chosen: Callable[[Manifest], bool], edit: Callable[[Any], None]
) -> list[Manifest]:
    out = []
    for m in manifests:
        if chosen(m):
            obj = copy.deepcopy(dict(m.obj))
            edit(obj)
            m = replace(m, obj=obj)
        out.append(m)
    return out


def _found(before: list[Manifest], after: list[Manifest]) -> list[tuple[str, str]]:
    return [(h.rule, h.subject) for h in hazards(before, after, [])]


def _in_pool(pool: str) -> Callable[[Manifest], bool]:
    return lambda m: m.obj["metadata"]["labels"].get("hetgitops.io/pool") == pool


def test_unchanged_trees_have_no_hazard(base: list[Manifest]) -> None:
    assert _found(base, base) == []


def test_a_new_resource_key_deadlocks(base: list[Manifest]) -> None:
    def add_key(obj: Any) -> None:
        if obj["kind"] == "ElasticQuotaProfile":
            annotations = obj["metadata"]["annotations"]
            keys = json.loads(annotations[f"{PREFIX}/resource-keys"])
            annotations[f"{PREFIX}/resource-keys"] = json.dumps([*keys, "nvidia.com/mig-1g.10gb"])
        else:
            obj["spec"]["max"]["nvidia.com/mig-1g.10gb"] = "0"
            obj["spec"]["min"]["nvidia.com/mig-1g.10gb"] = "0"

    head = _edit(base, _in_pool("a800-train"), add_key)
    found = _found(base, head)
    assert {rule for rule, _ in found} == {"koordinator-key-set-changed"}
    assert (
        "koordinator-key-set-changed",
        "ElasticQuotaProfile a800-train",
    ) in found
    assert len(found) == 1 + sum(
        1 for m in base if _in_pool("a800-train")(m) and m.kind == "ElasticQuota"
    )
    hazard = next(h for h in hazards(base, head, []) if "Profile" in h.subject)
    assert "ElasticQuotaEnableUpdateResourceKey" in hazard.action


def test_new_values_for_the_same_keys_apply(base: list[Manifest]) -> None:
    head = _edit(
        base,
        lambda m: m.name == "pretraining-a800-train",
        lambda o: o["spec"]["max"].update({"nvidia.com/gpu": "100"}),
    )
    assert _found(base, head) == []


def test_a_removed_quota_with_pods(base: list[Manifest]) -> None:
    head = [m for m in base if m.name != "finetune-vision-l40s-infer"]
    assert _found(base, head) == [
        ("koordinator-quota-removed", "ElasticQuota finetune-vision-l40s-infer")
    ]


def test_a_removed_parent_whose_children_stay(base: list[Manifest]) -> None:
    head = [m for m in base if m.name != "cohort-training-a800-train"]
    hazard = next(h for h in hazards(base, head, []) if h.rule == "koordinator-quota-removed")
    assert "pretraining-a800-train" in hazard.message


def test_is_parent_flips(base: list[Manifest]) -> None:
    head = _edit(
        base,
        lambda m: m.name == "cohort-training-a800-train",
        lambda o: o["metadata"]["labels"].update({f"{PREFIX}/is-parent": "false"}),
    )
    assert _found(base, head) == [
        ("koordinator-is-parent-flipped", "ElasticQuota cohort-training-a800-train")
    ]


def test_tree_id_changes(base: list[Manifest]) -> None:
    head = _edit(
        base,
        lambda m: m.name == "pretraining-a800-train",
        lambda o: o["metadata"]["labels"].update({f"{PREFIX}/tree-id": "1"}),
    )
    assert _found(base, head) == [
        ("koordinator-tree-changed", "ElasticQuota pretraining-a800-train")
    ]
