"""DRA objects of the `kueue` target (hetgitops/compilers/dra.py): the bundled fleet against its
variant with l40s-infer on draClaims and h100-infer (MIG) migrating from the device plugin
(tests/cases/render/dra/policy). Quotas keep their arithmetic under the mapped names; job
templates claim what the ResourceClaimTemplates ask for; the objects pass the pinned
resource.k8s.io/v1 schemas."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from hetgitops import api
from hetgitops.conformance import output_checks
from hetgitops.diagnostics import Severity
from hetgitops.output.manifests import Manifest
from hetgitops.plan import dra

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "policies"
VARIANT = ROOT / "tests" / "cases" / "render" / "dra" / "policy"
# Device-plugin resource -> the DRA quota resource it becomes in the variant, per pool.
RENAMED = {
    ("h100-infer", "nvidia.com/gpu"): "dra.hetgitops.io/h100-80gb",
    ("h100-infer", "nvidia.com/mig-1g.10gb"): "dra.hetgitops.io/h100-80gb-mig-1g-10gb",
    ("h100-infer", "nvidia.com/mig-3g.40gb"): "dra.hetgitops.io/h100-80gb-mig-3g-40gb",
    ("l40s-infer", "nvidia.com/gpu"): "dra.hetgitops.io/l40s-48gb",
}


@pytest.fixture(scope="module")
def variant() -> api.Result:
    result = api.validate([VARIANT], api.Options(check_output=True))
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    assert errors == [] and result.manifests
    return result


def _objects(result: api.Result, kind: str) -> dict[str, Mapping[str, Any]]:
    return {m.name: m.obj for m in result.manifests if m.kind == kind}


def _pool_of(flavor: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]) -> str:
    return str(flavors[flavor["name"]]["spec"]["nodeLabels"]["hetgitops.io/pool"])


def _quotas(result: api.Result) -> dict[tuple[str, str, str], tuple[Any, ...]]:
    """(queue, pool, resource) -> (nominal, borrowingLimit, lendingLimit), non-zero entries."""
    flavors = _objects(result, "ResourceFlavor")
    found: dict[tuple[str, str, str], tuple[Any, ...]] = {}
    for name, queue in _objects(result, "ClusterQueue").items():
        for group in queue["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                pool = _pool_of(flavor, flavors)
                for r in flavor["resources"]:
                    if r["nominalQuota"] != "0" or "borrowingLimit" in r:
                        limits = (r["nominalQuota"], r.get("borrowingLimit"), r.get("lendingLimit"))
                        found[name, pool, r["name"]] = limits
    return found


def test_quota_arithmetic_is_the_device_plugins(variant):
    base = api.validate([BUNDLED], api.Options(check_output=False))
    expected = {
        (queue, pool, RENAMED.get((pool, resource), resource)): limits
        for (queue, pool, resource), limits in _quotas(base).items()
    }
    assert _quotas(variant) == expected


def test_one_device_class_per_card_type_and_profile(variant):
    classes = _objects(variant, "DeviceClass")
    assert sorted(classes) == [
        "h100-80gb-1g-10gb.mig.dra.hetgitops.io",
        "h100-80gb-3g-40gb.mig.dra.hetgitops.io",
        "h100-80gb.gpu.dra.hetgitops.io",
        "l40s-48gb.gpu.dra.hetgitops.io",
    ]
    l40s = classes["l40s-48gb.gpu.dra.hetgitops.io"]["spec"]["selectors"][0]["cel"]["expression"]
    assert "productName.replace(' ', '-') in ['NVIDIA-L40S']" in l40s
    assert "architecture == 'Ada Lovelace'" in l40s
    assert "memory.compareTo(quantity('43Gi')) >= 0" in l40s


def test_every_mapped_class_is_rendered_and_mapped_once(variant):
    config = next(m.obj for m in variant.manifests if m.kind == "Configuration")
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    mapped = [c for m in config["resources"]["deviceClassMappings"] for c in m["deviceClassNames"]]
    assert sorted(mapped) == sorted(_objects(variant, "DeviceClass"))
    assert len(mapped) == len(set(mapped))
    covered = {r for (_, _, r) in _quotas(variant)}
    names = {m["name"] for m in config["resources"]["deviceClassMappings"]}
    assert {r for r in covered if r.startswith(dra.DOMAIN)} <= names


def test_configuration_is_no_applied_object(variant):
    config = next(m for m in variant.manifests if m.kind == "Configuration")
    assert not config.applied


def test_claim_templates_are_content_named_per_namespace(variant):
    templates = [m for m in variant.manifests if m.kind == "ResourceClaimTemplate"]
    assert templates
    for m in templates:
        assert m.obj["metadata"]["name"] == dra.claim_template_name(m.obj["spec"])
        request = m.obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        assert request["deviceClassName"] in _objects(variant, "DeviceClass")
    spec = copy.deepcopy(dict(templates[0].obj["spec"]))
    spec["spec"]["devices"]["requests"][0]["exactly"]["count"] += 1
    assert dra.claim_template_name(spec) != templates[0].name


def test_job_templates_claim_instead_of_requesting(variant):
    jobs = api.jobs(
        [VARIANT], api.Options(check_output=False), profiles=["llm-serving", "small-model-serving"]
    )
    templates = {
        (m.obj["metadata"]["namespace"], m.name)
        for m in variant.manifests
        if m.kind == "ResourceClaimTemplate"
    }
    claimed = 0
    for manifest in jobs.manifests:
        for doc in _pod_specs(manifest):
            for claim in doc.get("resourceClaims", []):
                claimed += 1
                namespace = manifest.obj["metadata"]["namespace"]
                assert (namespace, claim["resourceClaimTemplateName"]) in templates
                container = doc["containers"][0]
                assert container["resources"]["claims"] == [{"name": claim["name"]}]
                assert not any(r.startswith(dra.DOMAIN) for r in container["resources"]["requests"])
    assert claimed


def _pod_specs(manifest: Manifest) -> list[Mapping[str, Any]]:
    """Every pod spec in a rendered job template, wherever its framework nests it."""
    found: list[Mapping[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            if "containers" in node:
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(manifest.obj)
    return found


def test_device_plugin_pools_keep_their_objects(variant):
    """The bundled golden tree is unchanged by this feature (tests/test_render_golden.py); here:
    the variant's device-plugin pools' flavors are the bundled ones byte for byte."""
    base = api.validate([BUNDLED], api.Options(check_output=False))
    before = {
        m.name: yaml.safe_dump(dict(m.obj)) for m in base.manifests if m.kind == "ResourceFlavor"
    }
    after = {
        m.name: yaml.safe_dump(dict(m.obj)) for m in variant.manifests if m.kind == "ResourceFlavor"
    }
    kept = {n: t for n, t in after.items() if not n.startswith(("l40s-infer", "h100-infer"))}
    assert kept == {n: t for n, t in before.items() if n in kept}
    assert "topologyName" not in after["l40s-infer"]


@pytest.mark.parametrize(
    ("kind", "edit", "path"),
    [
        (
            "DeviceClass",
            lambda o: o["spec"]["selectors"][0]["cel"].update(expression=5),
            "spec.selectors[0].cel.expression",
        ),
        (
            "ResourceClaimTemplate",
            lambda o: o["spec"]["spec"]["devices"]["requests"][0].update(count=1),
            "spec.spec.devices.requests[0]",
        ),
    ],
)
def test_dra_objects_are_checked_against_resource_v1(variant, kind, edit, path):
    policy = variant.policy
    assert policy is not None
    manifests = list(variant.manifests)
    index = next(i for i, m in enumerate(manifests) if m.kind == kind)
    obj = copy.deepcopy(dict(manifests[index].obj))
    edit(obj)
    manifests[index] = Manifest(manifests[index].target, obj, manifests[index].origin)
    clean = [
        d for d in output_checks.check(list(variant.manifests), policy) if d.rule == "k8s-schema"
    ]
    assert clean == []
    found = [d for d in output_checks.check(manifests, policy) if d.rule == "k8s-schema"]
    assert found and all(path in d.message for d in found), [d.message for d in found]


def test_device_plugin_off_where_the_driver_runs(variant):
    from hetgitops.plan.node_labels import pool_node_labels

    policy = variant.policy
    assert policy is not None
    l40s = pool_node_labels(policy, policy.pools["l40s-infer"])
    assert l40s[dra.DEVICE_PLUGIN_SWITCH] == "false"
    # migrating: the device plugin still serves the pods it gave devices to
    assert dra.DEVICE_PLUGIN_SWITCH not in pool_node_labels(policy, policy.pools["h100-infer"])
    assert dra.DEVICE_PLUGIN_SWITCH not in pool_node_labels(policy, policy.pools["a800-train"])


def test_namespace_quota_counts_the_devices_of_each_class(variant):
    quota = next(
        m.obj
        for m in variant.manifests
        if m.kind == "ResourceQuota" and m.obj["metadata"]["namespace"] == "ft-vision"
    )
    hard = quota["spec"]["hard"]
    assert hard["l40s-48gb.gpu.dra.hetgitops.io.deviceclass.resource.k8s.io/devices"] == "20"
    assert not any(k.startswith("requests." + dra.DOMAIN) for k in hard)
