"""The `volcano` target: Queue hierarchy invariants and the scheduler ConfigMap."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
import yaml

from hetgitops.compilers.volcano import compile_volcano
from hetgitops.compilers.volcano_scheduler import (
    CONFIG_KEY,
    VolcanoConfigError,
    invariant_violations,
    scheduler_conflicts,
)
from hetgitops.model import quantities
from hetgitops.model.policy import Policy
from hetgitops.plan import capacity

Load = Callable[[str], Policy]


def _queues(policy: Policy) -> dict[str, dict[str, Any]]:
    return {m.name: dict(m.obj) for m in compile_volcano(policy) if m.kind == "Queue"}


def _conf(policy: Policy) -> dict[str, Any]:
    config_map = next(m for m in compile_volcano(policy) if m.kind == "ConfigMap")
    assert (config_map.namespace, config_map.name) == (
        "volcano-system",
        "volcano-scheduler-configmap",
    )
    parsed: dict[str, Any] = yaml.safe_load(config_map.obj["data"][CONFIG_KEY])
    return parsed


def _with_fleet(policy: Policy, **changes: Any) -> Policy:
    assert policy.fleet is not None
    return dataclasses.replace(policy, fleet=dataclasses.replace(policy.fleet, **changes))


def _amount(resources: dict[str, Any], name: str) -> Decimal:
    return quantities.value_of(resources.get(name, 0))


def test_one_leaf_per_team_and_pool_under_root(scenario_policy: Load) -> None:
    # No team parent: a parent's deserved/guarantee must cover its children's at every step,
    # which no static apply order can keep for both growing and shrinking (see test_day2).
    manifests = compile_volcano(scenario_policy("volcano-only"))
    queues = [(m.name, m.obj["spec"]["parent"], m.depth) for m in manifests if m.kind == "Queue"]
    assert queues == [
        ("alpha-h100-train", "root", 0),
        ("alpha-l40s-infer", "root", 0),
        ("beta-h100-train", "root", 0),
        ("beta-l40s-infer", "root", 0),
    ]


def test_every_queue_is_in_sync_wave_zero(scenario_policy: Load) -> None:
    waves = {
        name: q["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]
        for name, q in _queues(scenario_policy("volcano-only")).items()
    }
    assert set(waves.values()) == {"0"}


def test_leaf_is_bound_to_its_pool_nodes(scenario_policy: Load) -> None:
    leaf = _queues(scenario_policy("volcano-only"))["alpha-h100-train"]["spec"]
    required = leaf["affinity"]["nodeGroupAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert required == ["h100-train"]


def test_a_pool_keeps_the_nodegroup_its_nodes_already_carry(scenario_policy: Load) -> None:
    """`spec.volcano.nodeGroup` (an adopted cluster's): the leaves bind to it and the nodes
    target labels the nodes with it, not with the pool's name."""
    from hetgitops.compilers.nodes import compile_nodes

    policy = scenario_policy("volcano-only")
    pool = dataclasses.replace(policy.pools["h100-train"], volcano_node_group="ng-h100")
    policy = dataclasses.replace(policy, pools={**policy.pools, "h100-train": pool})
    leaf = _queues(policy)["alpha-h100-train"]["spec"]
    affinity = leaf["affinity"]["nodeGroupAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"] == ["ng-h100"]
    other = _queues(policy)["alpha-l40s-infer"]["spec"]["affinity"]["nodeGroupAffinity"]
    assert other["requiredDuringSchedulingIgnoredDuringExecution"] == ["l40s-infer"]
    fleet = policy.fleet
    assert fleet is not None
    policy = _with_fleet(policy, targets=(*fleet.targets, "nodes"))
    groups = {
        m.obj["metadata"]["labels"].get("volcano.sh/nodegroup-name")
        for m in compile_nodes(policy)
        if m.kind == "Node" and m.name in {n.name for n in pool.nodes}
    }
    assert groups == {"ng-h100"}


def test_server_filled_fields_are_written(scenario_policy: Load) -> None:
    for queue in _queues(scenario_policy("volcano-only")).values():
        spec = queue["spec"]
        assert {"parent", "weight", "reclaimable", "dequeueStrategy"} <= set(spec)


@pytest.mark.parametrize("scenario", ["bundled", "volcano-only", "isolated-pool", "no-mig"])
def test_volcano_admission_invariants_hold(scenario_policy: Load, scenario: str) -> None:
    queues = _queues(scenario_policy(scenario))
    assert queues
    assert invariant_violations(queues.values()) == []


def test_deserved_is_the_nominal_quota_in_whole_cards(scenario_policy: Load) -> None:
    spec = _queues(scenario_policy("volcano-only"))["alpha-h100-train"]["spec"]
    # 10 cards at the default 8 CPU / 64Gi per card
    assert spec["deserved"] == {"cpu": "80", "memory": "640Gi", "nvidia.com/gpu": "10"}
    # borrowingLimit 4 on top of nominal
    assert spec["capability"]["nvidia.com/gpu"] == "14"


def test_unbounded_borrowing_stops_at_pool_capacity(scenario_policy: Load) -> None:
    policy = scenario_policy("volcano-only")
    spec = _queues(policy)["beta-h100-train"]["spec"]
    pool = policy.pools["h100-train"]
    card = policy.card_type_of(pool)
    assert card is not None
    offered = capacity.pool_resources(pool, card, policy.fleet)["nvidia.com/gpu"]
    assert spec["capability"]["nvidia.com/gpu"] == str(offered) == "16"


def test_guarantee_is_what_kueue_never_lends(scenario_policy: Load) -> None:
    queues = _queues(scenario_policy("isolated-pool"))
    # An isolated pool lends nothing: all 12 Ascend cards are kept (guaranteePercent 25 -> 3
    # is only a floor).
    assert queues["domestic-ascend"]["spec"]["guarantee"]["resource"]["huawei.com/Ascend910"] == (
        "12"
    )
    # h100-shared lends at most 50%: 8 cards keep 4.
    leaf = queues["global-h100-shared"]["spec"]
    assert leaf["guarantee"]["resource"]["nvidia.com/gpu"] == "4"
    # volcano-only: alpha lends everything (no limit), beta lends 4 of its 8 L40S.
    queues = _queues(scenario_policy("volcano-only"))
    assert "guarantee" not in queues["alpha-h100-train"]["spec"]
    assert queues["beta-l40s-infer"]["spec"]["guarantee"]["resource"]["nvidia.com/gpu"] == "4"
    # guaranteePercent 50 of beta's 6 H100 is a floor above the 0 Kueue keeps.
    assert queues["beta-h100-train"]["spec"]["guarantee"]["resource"]["nvidia.com/gpu"] == "3"


def test_isolated_pool_neither_borrows_nor_is_reclaimed(scenario_policy: Load) -> None:
    queues = _queues(scenario_policy("isolated-pool"))
    for name in ("domestic-ascend", "global-ascend"):
        spec = queues[name]["spec"]
        assert spec["reclaimable"] is False
        assert spec["capability"] == spec["deserved"]
    assert queues["global-h100-shared"]["spec"]["reclaimable"] is True


def test_weight_comes_from_the_team(scenario_policy: Load) -> None:
    queues = _queues(scenario_policy("isolated-pool"))
    assert queues["domestic-ascend"]["spec"]["weight"] == 2
    assert queues["global-ascend"]["spec"]["weight"] == 1


def test_hierarchy_off_only_drops_enable_hierarchy(scenario_policy: Load) -> None:
    policy = _with_fleet(scenario_policy("volcano-only"), volcano_hierarchy=False)
    queues = _queues(policy)
    assert sorted(queues) == [
        "alpha-h100-train",
        "alpha-l40s-infer",
        "beta-h100-train",
        "beta-l40s-infer",
    ]
    assert {q["spec"]["parent"] for q in queues.values()} == {"root"}
    plugins = {p["name"]: p for tier in _conf(policy)["tiers"] for p in tier["plugins"]}
    assert "enableHierarchy" not in plugins["capacity"]


def test_scheduler_conf_spelling(scenario_policy: Load) -> None:
    conf = _conf(scenario_policy("volcano-only"))
    assert conf["actions"] == "enqueue, allocate, preempt, reclaim, backfill"
    tiers = [[p["name"] for p in tier["plugins"]] for tier in conf["tiers"]]
    assert tiers == [
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "capacity", "nodegroup", "nodeorder", "binpack"],
    ]
    plugins = {p["name"]: p for tier in conf["tiers"] for p in tier["plugins"]}
    assert plugins["capacity"]["enableHierarchy"] is True
    assert plugins["nodegroup"] == {
        "name": "nodegroup",
        "enableHierarchy": True,
        "arguments": {"strict": False},
    }
    # a comma-separated string, not a YAML list
    assert plugins["binpack"]["arguments"]["binpack.resources"] == "nvidia.com/gpu"


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"volcano_queue_plugin": "proportion"}, "hierarchical queues need the capacity"),
        ({"volcano_extra_plugins": ("proportion",)}, "capacity and proportion"),
    ],
)
def test_plugin_conflicts_are_refused(
    scenario_policy: Load, changes: dict[str, Any], problem: str
) -> None:
    policy = _with_fleet(scenario_policy("volcano-only"), **changes)
    assert any(problem in c for c in scheduler_conflicts(policy))
    with pytest.raises(VolcanoConfigError, match=problem):
        compile_volcano(policy)


def test_proportion_without_hierarchy_is_fine(scenario_policy: Load) -> None:
    policy = _with_fleet(
        scenario_policy("volcano-only"), volcano_queue_plugin="proportion", volcano_hierarchy=False
    )
    assert scheduler_conflicts(policy) == []
    plugins = [p["name"] for tier in _conf(policy)["tiers"] for p in tier["plugins"]]
    assert "proportion" in plugins and "capacity" not in plugins


def _queue(name: str, parent: str = "root", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"parent": parent, "weight": 1, **spec}}


@pytest.mark.parametrize(
    ("queues", "problem"),
    [
        ([_queue("a", weight=0)], "weight 0"),
        ([_queue("a", deserved={"nvidia.com/gpu": "1.5"})], "whole number"),
        (
            [_queue("a", deserved={"cpu": 1}, guarantee={"resource": {"cpu": 2}})],
            "guarantee cpu exceeds deserved",
        ),
        (
            [_queue("a", guarantee={"resource": {"nvidia.com/gpu": 1}})],
            "guarantee nvidia.com/gpu exceeds deserved (or is not in it)",
        ),
        ([_queue("a", deserved={"cpu": 4}, capability={"cpu": 2})], "deserved cpu exceeds"),
        (
            [_queue("p", deserved={"cpu": 1}), _queue("c", "p", deserved={"cpu": 2})],
            "children's deserved cpu exceeds",
        ),
        (
            [_queue("p"), _queue("c", "p", deserved={"nvidia.com/gpu": 1})],
            "children's deserved nvidia.com/gpu",
        ),
        (
            [_queue("p", capability={"cpu": 1}), _queue("c", "p", capability={"cpu": 2})],
            "capability cpu exceeds ancestor p",
        ),
        ([_queue("a", "ghost")], "parent chain"),
        ([_queue(f"q{i}", f"q{i - 1}" if i else "root") for i in range(6)], "deeper than 5"),
    ],
)
def test_invariant_violations_are_found(queues: list[dict[str, Any]], problem: str) -> None:
    assert any(problem in v for v in invariant_violations(queues)), invariant_violations(queues)


def test_depth_five_is_allowed() -> None:
    chain = [_queue(f"q{i}", f"q{i - 1}" if i else "root") for i in range(5)]
    assert invariant_violations(chain) == []
