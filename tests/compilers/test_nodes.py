"""The `nodes` target: NFD NodeFeatureRules, the labels-only plan, NFD's label namespaces."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import yaml

from hetgitops.compilers.nodes import compile_nodes, label_namespaces
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import kustomization, stream, tree
from hetgitops.plan.node_labels import node_labels, pool_node_labels

Load = Callable[[str], Policy]


def _rules(policy: Policy) -> dict[str, dict[str, Any]]:
    return {m.name: dict(m.obj) for m in compile_nodes(policy) if m.kind == "NodeFeatureRule"}


def _matched(rule: dict[str, Any]) -> list[str]:
    (term,) = rule["matchFeatures"]
    assert term["feature"] == "system.name"
    expression = term["matchExpressions"]["nodename"]
    assert expression["op"] == "In"
    names: list[str] = expression["value"]
    return names


def test_no_node_object_is_ever_applied(scenario_policy: Load) -> None:
    manifests = compile_nodes(scenario_policy("bundled"))
    nodes = [m for m in manifests if m.kind == "Node"]
    assert nodes and all(not m.applied for m in nodes)
    assert all(m.relative_path().startswith("nodes/plan/nodes-") for m in nodes)
    assert "kind: Node\n" not in stream(manifests)
    assert not any("/plan/" in path for path in kustomization(manifests)["resources"])


def test_plan_is_a_partial_node_with_labels_only(scenario_policy: Load) -> None:
    policy = scenario_policy("volcano-only")
    plan = next(m for m in compile_nodes(policy) if m.kind == "Node" and m.name == "h100-01")
    assert plan.obj == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "h100-01", "labels": plan.obj["metadata"]["labels"]},
    }
    pool = policy.pools["h100-train"]
    labels = plan.obj["metadata"]["labels"]
    assert node_labels(policy, pool, pool.nodes[0]).items() <= labels.items()


def test_plan_is_one_file_per_pool_holding_its_nodes_in_order(scenario_policy: Load) -> None:
    policy = scenario_policy("bundled")
    files = tree(compile_nodes(policy))
    plans = {path: text for path, text in files.items() if path.startswith("nodes/plan/")}
    assert sorted(plans) == sorted(f"nodes/plan/nodes-{name}.yaml" for name in policy.pools)
    for name, pool in policy.pools.items():
        documents = list(yaml.safe_load_all(plans[f"nodes/plan/nodes-{name}.yaml"]))
        assert [d["metadata"]["name"] for d in documents] == sorted(n.name for n in pool.nodes)
        assert {d["metadata"]["labels"]["hetgitops.io/pool"] for d in documents} == {name}


def test_one_cluster_scoped_rule_per_pool(scenario_policy: Load) -> None:
    policy = scenario_policy("bundled")
    rules = _rules(policy)
    assert sorted(rules) == sorted(f"hetgitops-{name}" for name in policy.pools)
    for rule in rules.values():
        assert rule["apiVersion"] == "nfd.k8s-sigs.io/v1alpha1"
        assert "namespace" not in rule["metadata"]


def test_every_pool_node_matched_by_exactly_one_rule(scenario_policy: Load) -> None:
    policy = scenario_policy("bundled")
    rules = _rules(policy)
    for pool in policy.pools.values():
        matched = [n for r in rules[f"hetgitops-{pool.name}"]["spec"]["rules"] for n in _matched(r)]
        assert sorted(matched) == sorted(n.name for n in pool.nodes)


def test_rules_carry_pool_labels_and_per_group_topology(scenario_policy: Load) -> None:
    policy = scenario_policy("bundled")
    pool = policy.pools["a800-train"]
    rules = _rules(policy)["hetgitops-a800-train"]["spec"]["rules"]
    assert len(rules) == 4  # four racks
    racks = {rule["labels"]["hetgitops.io/rack"] for rule in rules}
    assert racks == {"rack-a01", "rack-a02", "rack-a03", "rack-a04"}
    for rule in rules:
        assert pool_node_labels(policy, pool).items() <= rule["labels"].items()
        assert rule["labels"]["volcano.sh/nodegroup-name"] == "a800-train"
        assert rule["labels"]["nvidia.com/mig.config"] == "all-disabled"


def test_selector_labels_follow_the_targets(scenario_policy: Load) -> None:
    kueue_only = scenario_policy("isolated-pool")  # volcano, no gpu-operator
    for rule in _rules(kueue_only)["hetgitops-h100-shared"]["spec"]["rules"]:
        assert rule["labels"]["volcano.sh/nodegroup-name"] == "h100-shared"
        assert not any(key.startswith("nvidia.com/") for key in rule["labels"])
    mig = scenario_policy("mig-mixed")  # gpu-operator, no volcano
    for rule in _rules(mig)["hetgitops-h100-infer"]["spec"]["rules"]:
        assert rule["labels"]["nvidia.com/mig.config"].startswith("h100-80gb-")
        assert "volcano.sh/nodegroup-name" not in rule["labels"]


def test_shared_pools_select_their_device_plugin_config(scenario_policy: Load) -> None:
    rules = _rules(scenario_policy("time-slicing"))
    label = "nvidia.com/device-plugin.config"
    assert rules["hetgitops-notebooks"]["spec"]["rules"][0]["labels"][label] == (
        "time-slicing-4-renamed-strict"
    )
    assert rules["hetgitops-l40s-mps"]["spec"]["rules"][0]["labels"][label] == "mps-2"


def test_extra_label_namespaces_cover_every_rule_label(scenario_policy: Load) -> None:
    policy = scenario_policy("bundled")
    allowed = set(label_namespaces(policy))
    # NFD refuses *.kubernetes.io unless listed
    assert "topology.kubernetes.io" in allowed
    for rule in _rules(policy).values():
        for entry in rule["spec"]["rules"]:
            assert {key.split("/")[0] for key in entry["labels"]} <= allowed
    values = next(m for m in compile_nodes(policy) if m.filename == "nfd-helm-values.yaml")
    assert values.applied is False
    assert values.obj["master"]["config"]["extraLabelNs"] == sorted(allowed)


def test_identical_nodes_share_a_rule_across_node_groups(scenario_policy: Load) -> None:
    policy = scenario_policy("volcano-only")
    pool = policy.pools["h100-train"]
    moved = dataclasses.replace(pool.nodes[1], rack="rack-9")
    split = dataclasses.replace(pool, nodes=(pool.nodes[0], moved))
    policy = dataclasses.replace(policy, pools={**policy.pools, "h100-train": split})
    rules = _rules(policy)["hetgitops-h100-train"]["spec"]["rules"]
    assert [(r["name"], _matched(r)) for r in rules] == [
        ("h100-train-1", ["h100-01"]),
        ("h100-train-2", ["h100-02"]),
    ]
