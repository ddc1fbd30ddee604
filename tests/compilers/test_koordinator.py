"""The `koordinator` target: the rendered trees keep the rules Koordinator v1.8.0's quota webhook
enforces (pkg/webhook/elasticquota/quota_topology_check.go), the tree ids are the profile
controller's, the tiers land inside Koordinator's bands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hetgitops import api
from hetgitops.compilers import koordinator
from hetgitops.model import quantities
from hetgitops.plan.koordinator_priority import BANDS, band_of
from hetgitops.plan.koordinator_quota import tree_id

REPO = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def rendered() -> list[Obj]:
    result = api.render([REPO / "policies"], api.Options(targets=("koordinator",)))
    assert not result.failed()
    return [dict(m.obj) for m in result.manifests if m.applied]


def _of(objs: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objs if o["kind"] == kind]


def _labels(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("labels", {}))


def test_tree_id_is_the_profile_controllers_hash() -> None:
    # Printed by Go's hash/fnv New64a + strconv.FormatUint(..., 10), the controller's `hash`
    # (pkg/quota-controller/profile/profile_controller.go:267-271).
    assert tree_id("koordinator-system", "a800-train") == "4071988523190984852"
    assert tree_id("koordinator-system", "h100-infer") == "868065519468249084"
    assert tree_id("default", "gpu") == "1418059971228455795"


def test_every_pool_has_a_profile_with_its_accelerators_as_resource_keys(
    rendered: list[Obj],
) -> None:
    profiles = {p["metadata"]["name"]: p for p in _of(rendered, "ElasticQuotaProfile")}
    assert len(profiles) == 7
    h100 = profiles["h100-infer"]
    keys = json.loads(h100["metadata"]["annotations"][koordinator.RESOURCE_KEYS])
    assert keys[:2] == ["cpu", "memory"]
    assert {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"} <= set(keys)
    assert _labels(h100)[koordinator.TREE_ID] == tree_id("koordinator-system", "h100-infer")
    assert h100["spec"]["nodeSelector"] == {"matchLabels": {"hetgitops.io/pool": "h100-infer"}}
    ascend = profiles["ascend-910b"]
    assert "huawei.com/Ascend910" in ascend["metadata"]["annotations"][koordinator.RESOURCE_KEYS]


def _trees(rendered: list[Obj]) -> dict[str, tuple[list[str], str, dict[str, Obj]]]:
    """Profile -> (resource keys, root quota name, the tree's quotas by name)."""
    quotas = _of(rendered, "ElasticQuota")
    found = {}
    for profile in _of(rendered, "ElasticQuotaProfile"):
        tid = _labels(profile)[koordinator.TREE_ID]
        keys = json.loads(profile["metadata"]["annotations"][koordinator.RESOURCE_KEYS])
        mine = {q["metadata"]["name"]: q for q in quotas if _labels(q)[koordinator.TREE_ID] == tid}
        found[profile["metadata"]["name"]] = (keys, profile["spec"]["quotaName"], mine)
    assert sum(len(t[2]) for t in found.values()) == len(quotas)  # every quota in one tree
    return found


def _value(quantity: str) -> Any:
    return quantities.value_of(quantity)


def test_every_quota_of_a_tree_carries_every_key_of_the_tree(rendered: list[Obj]) -> None:
    """Max keys of a child must equal its parent's (quota_topology_check.go:209-260; koordinator
    issue #1747), and the root's are the profile's resource keys."""
    for keys, _root, quotas in _trees(rendered).values():
        for quota in quotas.values():
            assert list(quota["spec"]["max"]) == keys
            assert list(quota["spec"]["min"]) == keys


def test_trees_pass_the_webhooks_topology_rules(rendered: list[Obj]) -> None:
    """Parent exists and is a parent (:187-201), min <= max per key (:61-71), the children's
    min fit in the parent's (:265-303)."""
    for _keys, root, quotas in _trees(rendered).values():
        children: dict[str, list[Obj]] = {}
        for quota in quotas.values():
            spec = quota["spec"]
            assert all(_value(spec["min"][k]) <= _value(v) for k, v in spec["max"].items())
            parent = _labels(quota)[koordinator.PARENT]
            if parent != root:
                assert _labels(quotas[parent])[koordinator.IS_PARENT] == "true"
            children.setdefault(parent, []).append(quota)
        for parent, kids in children.items():
            if parent == root:
                continue
            for key, limit in quotas[parent]["spec"]["min"].items():
                assert sum(_value(k["spec"]["min"][key]) for k in kids) <= _value(limit)


def test_a_namespace_is_bound_to_one_quota_only(rendered: list[Obj]) -> None:
    """AddQuota refuses a namespace another quota holds (quota_topology.go:74-79)."""
    bound: list[str] = []
    for quota in _of(rendered, "ElasticQuota"):
        text = quota["metadata"].get("annotations", {}).get(koordinator.NAMESPACES)
        if text:
            assert _labels(quota)[koordinator.IS_PARENT] == "false"  # never on a parent
            bound += json.loads(text)
    assert sorted(bound) == sorted(set(bound))
    assert "pretrain" in bound


def test_isolated_pools_do_not_lend(rendered: list[Obj]) -> None:
    quotas = {q["metadata"]["name"]: q for q in _of(rendered, "ElasticQuota")}
    assert _labels(quotas["pretraining-ascend-910b"])[koordinator.ALLOW_LENT] == "false"
    assert _labels(quotas["pretraining-a800-train"])[koordinator.ALLOW_LENT] == "true"


def test_tiers_land_inside_koordinators_bands_in_order(rendered: list[Obj]) -> None:
    classes = {c["metadata"]["name"]: c["value"] for c in _of(rendered, "PriorityClass")}
    assert set(classes) == {"online-inference-koord", "training-koord", "dev-koord"}
    assert all(band_of(v) is not None for v in classes.values())
    assert classes["online-inference-koord"] > classes["training-koord"] > classes["dev-koord"]
    assert BANDS["koord-batch"][0] <= classes["dev-koord"] <= BANDS["koord-batch"][1]


def test_helm_values_turn_multi_quota_tree_on_in_both_binaries() -> None:
    fleet = api.validate([REPO / "policies"]).policy.fleet  # type: ignore[union-attr]
    assert fleet is not None
    values = koordinator.helm_values(fleet)
    assert "MultiQuotaTree=true" in values["featureGates"]
    assert "MultiQuotaTree=true" in values["scheduler"]["featureGates"]
    assert koordinator.elastic_quota_args(fleet)["args"]["enableMinQuotaScale"] is False


def test_every_quota_may_be_applied_in_any_order(rendered: list[Obj]) -> None:
    """allow-force-update skips the webhook's min-sum check (quota_topology_check.go:266), the
    one rule that needs parents first when growing and children first when shrinking."""
    quotas = _of(rendered, "ElasticQuota")
    assert quotas and all(_labels(q)[koordinator.FORCE_UPDATE] == "true" for q in quotas)


def test_the_bundled_target_schemas_check_the_objects() -> None:
    """schemas/targets/ holds both kinds, so a render without --crd-dir checks them too."""
    from dataclasses import replace

    from hetgitops.conformance import output_checks

    result = api.render([REPO / "policies"], api.Options(targets=("koordinator",)))
    assert result.policy is not None
    assert not [d for d in result.diagnostics if d.rule in ("crd-schema", "k8s-schema")]
    quota = next(m for m in result.manifests if m.kind == "ElasticQuota")
    profile = next(m for m in result.manifests if m.kind == "ElasticQuotaProfile")
    bad = [
        replace(quota, obj={**quota.obj, "spec": {**quota.obj["spec"], "guarantee": {}}}),
        replace(profile, obj={**profile.obj, "spec": {**profile.obj["spec"], "resourceRatio": 1}}),
    ]
    found = output_checks.check(bad, result.policy, unchecked=True)
    assert sorted(d.path for d in found if d.rule != "koordinator-webhook") == [
        "spec",
        "spec.resourceRatio",
    ], [str(d) for d in found]
