"""The `gpu-operator` target: content-named MIG configs, device-plugin configs, Helm values."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import yaml

from hetgitops.compilers import nvidia
from hetgitops.compilers.gpu_operator import compile_gpu_operator, mig_configs
from hetgitops.compilers.nodes import compile_nodes
from hetgitops.model.policy import MigDevice, Policy

Load = Callable[[str], Policy]


def _by_name(policy: Policy) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for m in compile_gpu_operator(policy):
        found[m.filename or m.name] = m
    return found


def _mig_document(policy: Policy) -> dict[str, Any]:
    assert policy.fleet is not None
    config_map = _by_name(policy)[policy.fleet.mig_config_name]
    assert config_map.namespace == policy.fleet.gpu_operator_namespace
    parsed: dict[str, Any] = yaml.safe_load(config_map.obj["data"]["config.yaml"])
    return parsed


def _sharing(policy: Policy) -> dict[str, Any]:
    assert policy.fleet is not None
    data = _by_name(policy)[policy.fleet.device_plugin_config_name].obj["data"]
    return {key: yaml.safe_load(text) for key, text in data.items()}


def _relayout(policy: Policy, pool: str, profiles: dict[str, int]) -> Policy:
    old = policy.pools[pool]
    device = dataclasses.replace(old.mig[0], profiles=profiles)
    new = dataclasses.replace(old, mig=(device, *old.mig[1:]))
    return dataclasses.replace(policy, pools={**policy.pools, pool: new})


def test_mig_config_file_shape(scenario_policy: Load) -> None:
    document = _mig_document(scenario_policy("mig-mixed"))
    assert list(document) == ["version", "mig-configs"]
    assert document["version"] == "v1"
    configs = document["mig-configs"]
    assert next(iter(configs)) == "all-disabled"
    assert configs["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    for entries in configs.values():
        for entry in entries:
            assert set(entry) <= {"device-filter", "devices", "mig-enabled", "mig-devices"}
            assert ("mig-devices" in entry) == entry["mig-enabled"]


def test_every_gpu_index_is_listed_once(scenario_policy: Load) -> None:
    policy = scenario_policy("mig-mixed")
    configs = mig_configs(policy)
    layout = configs[next(name for name in configs if name != "all-disabled")]
    indexes = [i for entry in layout for i in entry["devices"]]
    assert sorted(indexes) == list(range(8))
    assert len(indexes) == len(set(indexes))
    whole = [e for e in layout if not e["mig-enabled"]]
    assert whole == [{"device-filter": "0x233010DE", "devices": [6, 7], "mig-enabled": False}]


def test_layout_change_is_a_new_name(scenario_policy: Load) -> None:
    policy = scenario_policy("mig-mixed")
    before = set(mig_configs(policy))
    after = set(mig_configs(_relayout(policy, "h100-infer", {"2g.20gb": 3})))
    assert before - {"all-disabled"} and after - {"all-disabled"}
    assert before & after == {"all-disabled"}


def test_name_depends_on_content_only(scenario_policy: Load) -> None:
    policy = scenario_policy("mig-mixed")
    same = _relayout(policy, "h100-infer", {"1g.10gb": 7})
    assert list(mig_configs(same)) == list(mig_configs(policy))
    name = next(n for n in mig_configs(policy) if n != "all-disabled")
    assert name.startswith("h100-80gb-") and len(name) <= 63


def test_pools_with_one_layout_share_one_config(scenario_policy: Load) -> None:
    policy = scenario_policy("mig-mixed")
    twin = dataclasses.replace(policy.pools["h100-infer"], name="h100-twin")
    both = dataclasses.replace(policy, pools={**policy.pools, "h100-twin": twin})
    assert len(mig_configs(both)) == len(mig_configs(policy)) == 2


def test_node_gpu_count_changes_the_config(scenario_policy: Load) -> None:
    policy = scenario_policy("mig-single")
    pool = policy.pools["a100-slices"]
    small = dataclasses.replace(pool.nodes[1], cards=4)
    smaller = dataclasses.replace(pool, nodes=(pool.nodes[0], small))
    configs = mig_configs(dataclasses.replace(policy, pools={"a100-slices": smaller}))
    counts = sorted(
        len(entries[0]["devices"]) for n, entries in configs.items() if n != "all-disabled"
    )
    assert counts == [4, 8]


def test_device_filter_only_when_the_card_has_pci_ids(scenario_policy: Load) -> None:
    policy = scenario_policy("mig-single")
    card = dataclasses.replace(policy.card_types["a100-40gb"], pci_device_ids=())
    bare = dataclasses.replace(policy, card_types={"a100-40gb": card})
    for name, entries in mig_configs(bare).items():
        assert all("device-filter" not in e for e in entries), name


def test_mig_device_covering_all_gpus(scenario_policy: Load) -> None:
    policy = scenario_policy("mig-single")
    pool = policy.pools["a100-slices"]
    assert pool.mig == (MigDevice(None, {"1g.5gb": 7}, pool.mig[0].origin),)
    layout = next(e for n, e in mig_configs(policy).items() if n != "all-disabled")
    assert layout == [
        {
            "device-filter": "0x20B010DE",
            "devices": list(range(8)),
            "mig-enabled": True,
            "mig-devices": {"1g.5gb": 7},
        }
    ]


def test_time_slicing_and_mps_configs(scenario_policy: Load) -> None:
    configs = _sharing(scenario_policy("time-slicing"))
    assert sorted(configs) == [
        "default",
        "mps-2",
        "time-slicing-2",
        "time-slicing-4-renamed-strict",
    ]
    assert configs["default"] == {"version": "v1", "flags": {"migStrategy": "none"}}
    sliced = configs["time-slicing-4-renamed-strict"]["sharing"]["timeSlicing"]
    assert sliced == {
        "renameByDefault": True,
        "failRequestsGreaterThanOne": True,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
    }
    mps = configs["mps-2"]["sharing"]["mps"]
    assert mps["resources"] == [{"name": "nvidia.com/gpu", "replicas": 2}]


def test_helm_values_wire_both_config_maps(scenario_policy: Load) -> None:
    policy = scenario_policy("mig-single")
    assert policy.fleet is not None
    values = _by_name(policy)["helm-values.yaml"]
    assert values.applied is False and values.relative_path() == "gpu-operator/helm-values.yaml"
    obj = values.obj
    assert obj["mig"] == {"strategy": "single"}
    assert obj["migManager"]["config"] == {
        "create": False,
        "name": "custom-mig-parted",
        "default": "all-disabled",
    }
    assert obj["devicePlugin"]["config"] == {
        "create": False,
        "name": "custom-device-plugin",
        "default": "default",
    }
    assert "nvidia.com" in obj["node-feature-discovery"]["master"]["config"]["extraLabelNs"]


def test_every_node_label_names_a_shipped_config(scenario_policy: Load) -> None:
    """The `nodes` target's labels and this target's ConfigMap keys never disagree."""
    for scenario in ("bundled", "mig-mixed", "mig-single", "time-slicing", "no-mig"):
        policy = scenario_policy(scenario)
        mig_names = set(_mig_document(policy)["mig-configs"])
        sharing_names = set(_sharing(policy))
        for m in compile_nodes(policy):
            labels = m.obj.get("metadata", {}).get("labels", {}) if m.kind == "Node" else {}
            assert labels.get(nvidia.MIG_CONFIG_LABEL, "all-disabled") in mig_names
            assert labels.get(nvidia.DEVICE_PLUGIN_LABEL, "default") in sharing_names


def test_nothing_without_nvidia_pools(scenario_policy: Load) -> None:
    policy = scenario_policy("isolated-pool")
    ascend_only = dataclasses.replace(policy, pools={"ascend": policy.pools["ascend"]})
    assert compile_gpu_operator(ascend_only) == []
