"""Rules of the DRA family: pools on NVIDIA's DRA driver, their DeviceClasses, Kueue's mappings
and claim templates (hetgitops/checks/dra.py, facts in hetgitops/plan/dra.py)."""

from __future__ import annotations

import pytest

from hetgitops.plan import dra

H100_POOL = "cardType: h100-80gb\n  purpose: training\n"
L40S_POOL = "cardType: l40s-48gb\n  purpose: inference\n"
H100_CARD = "  memoryGiB: 80\n  interconnect: nvlink\n"
L40S_CARD = "  memoryGiB: 48\n  interconnect: pcie\n"


def on_dra(policy, allocation="draClaims", *, pool=H100_POOL, extra=""):
    """Kubernetes 1.35, the cards complete for the driver, and `pool` on `allocation`."""
    policy.replace("fleet.yaml", 'kubernetes: "1.33"', 'kubernetes: "1.35"')
    policy.replace(
        "cards.yaml",
        H100_CARD,
        H100_CARD + "  productNames: [NVIDIA-H100-80GB-HBM3]\n  architecture: hopper\n",
    )
    policy.replace(
        "cards.yaml", L40S_CARD, L40S_CARD + "  productNames: [NVIDIA-L40S]\n  architecture: ada\n"
    )
    policy.replace("pools.yaml", pool, pool + f"  devices: {{allocation: {allocation}{extra}}}\n")
    return policy


def test_a_claims_pool_passes(policy):
    found = [d for d in on_dra(policy).diagnostics() if d.rule.startswith("dra-")]
    assert found == []


def test_kubernetes_before_v1_api(policy):
    on_dra(policy).replace("fleet.yaml", 'kubernetes: "1.35"', 'kubernetes: "1.33"')
    assert policy.spans("dra-kubernetes-version") == [
        policy.pos("pools.yaml", "devices: {allocation: ^draClaims}")
    ]


def test_card_the_driver_does_not_publish(policy):
    on_dra(policy).replace("cards.yaml", "architecture: hopper", "architecture: hopper-next")
    assert policy.spans("dra-card-unknown-to-driver") == [
        policy.pos("pools.yaml", "devices: {allocation: ^draClaims}")
    ]


TOPOLOGY = "  topology:\n    name: dc\n    levels: [zone, rack]\n  cohorts:\n"
RACK = "  image: pytorch\n  topology: {preferred: rack}\n"


def test_claims_pool_under_topology(policy):
    on_dra(policy).replace("fleet.yaml", "  cohorts:\n", TOPOLOGY)
    policy.replace("profiles.yaml", "  image: pytorch\n", RACK)
    assert policy.spans("dra-claims-topology") == [
        policy.pos("profiles.yaml", "topology: {preferred: ^rack}")
    ]


def test_claims_pool_without_topology_request_passes(policy):
    on_dra(policy).replace("fleet.yaml", "  cohorts:\n", TOPOLOGY)
    assert policy.spans("dra-claims-topology") == []


def test_extended_resource_pool_under_topology(policy):
    on_dra(policy, "draExtendedResource").replace("fleet.yaml", "  cohorts:\n", TOPOLOGY)
    policy.replace("profiles.yaml", "  image: pytorch\n", RACK)
    assert policy.spans("dra-claims-topology") == [
        policy.pos("profiles.yaml", "topology: {preferred: ^rack}")
    ]


def test_device_plugin_sharing_on_a_dra_pool(policy):
    on_dra(policy, pool=L40S_POOL).replace(
        "pools.yaml",
        "devices: {allocation: draClaims}\n",
        "devices: {allocation: draClaims}\n  timeSlicing: {replicas: 4}\n",
    )
    assert policy.spans("dra-device-plugin-on") == [
        policy.pos("pools.yaml", "  timeSlicing: ^{replicas: 4}")
    ]


def test_device_plugin_switch_on(policy):
    on_dra(policy).replace(
        "pools.yaml",
        "devices: {allocation: draClaims}\n",
        "devices: {allocation: draClaims}\n"
        '  labels: {nvidia.com/gpu.deploy.device-plugin: "true"}\n',
    )
    assert policy.spans("dra-device-plugin-on") == [
        policy.pos("pools.yaml", "  labels: ^{nvidia.com/gpu.deploy.device-plugin")
    ]


def test_device_plugin_while_migrating_passes(policy):
    on_dra(policy, pool=L40S_POOL, extra=", migratingFrom: devicePlugin").replace(
        "pools.yaml",
        "migratingFrom: devicePlugin}\n",
        "migratingFrom: devicePlugin}\n  timeSlicing: {replicas: 4}\n",
    )
    assert policy.spans("dra-device-plugin-on") == []


def test_two_classes_on_one_extended_resource_name(policy):
    on_dra(policy, "draExtendedResource")
    policy.replace(
        "pools.yaml", L40S_POOL, L40S_POOL + "  devices: {allocation: draExtendedResource}\n"
    )
    policy.files["cards.yaml"] = policy.files["cards.yaml"].replace(
        "resourceName: nvidia.com/gpu", "resourceName: example.com/gpu"
    )
    assert policy.spans("dra-extended-resource-shared") == [
        policy.pos("pools.yaml", "l40s-48gb\n  purpose: inference\n  devices: {allocation: ^dra")
    ]


def test_extended_resource_names_of_their_own_pass(policy):
    on_dra(policy, "draExtendedResource")
    policy.replace(
        "pools.yaml", L40S_POOL, L40S_POOL + "  devices: {allocation: draExtendedResource}\n"
    )
    policy.replace(
        "cards.yaml",
        "H100-SXM5-80GB\n  resourceName: nvidia.com/gpu",
        "H100-SXM5-80GB\n  resourceName: example.com/h100",
    )
    policy.replace(
        "cards.yaml",
        "L40S\n  resourceName: nvidia.com/gpu",
        "L40S\n  resourceName: example.com/l40s",
    )
    assert policy.spans("dra-extended-resource-shared") == []


def test_mig_on_the_extended_resource_path(policy):
    on_dra(policy, "draExtendedResource").replace(
        "pools.yaml",
        "devices: {allocation: draExtendedResource}\n",
        "devices: {allocation: draExtendedResource}\n"
        "  mig:\n    devices:\n      - {gpus: [0], profiles: {1g.10gb: 7}}\n",
    )
    assert policy.spans("dra-extended-resource-unbacked") == [
        policy.pos("pools.yaml", "devices: {allocation: ^draExtendedResource}")
    ]


def test_cohort_charging_one_card_in_two_units(policy):
    on_dra(policy)
    policy.add(
        "pools.yaml",
        "kind: Pool\nmetadata:\n  name: h100-more\nspec:\n  cardType: h100-80gb\n"
        "  purpose: training\n  cardsPerNode: 8\n"
        '  nodes:\n    - {names: "gpu-h100-[03:04]", zone: zone-a, rack: rack-a1}\n',
    )
    policy.replace(
        "teams.yaml",
        "    - {pool: h100-train, cards: 8}\n  tiers: [serving]",
        "    - {pool: h100-more, cards: 8}\n  tiers: [serving]",
    )
    assert policy.spans("dra-cohort-units") == [
        policy.pos("pools.yaml", "devices: ^{allocation: draClaims}")
    ]


def test_cohort_units_while_migrating_pass(policy):
    on_dra(policy, extra=", migratingFrom: devicePlugin")
    policy.add(
        "pools.yaml",
        "kind: Pool\nmetadata:\n  name: h100-more\nspec:\n  cardType: h100-80gb\n"
        "  purpose: training\n  cardsPerNode: 8\n"
        '  nodes:\n    - {names: "gpu-h100-[03:04]", zone: zone-a, rack: rack-a1}\n',
    )
    policy.replace(
        "teams.yaml",
        "    - {pool: h100-train, cards: 8}\n  tiers: [serving]",
        "    - {pool: h100-more, cards: 8}\n  tiers: [serving]",
    )
    assert policy.spans("dra-cohort-units") == []


def test_more_mappings_than_kueue_accepts(policy):
    on_dra(policy)
    # 1 whole-card class + 16 MIG profiles' classes: 17 mappings.
    profiles = ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    layout = "".join(
        f"      - {{gpus: [{i}], profiles: {{{p}: 1}}}}\n" for i, p in enumerate(profiles)
    )
    policy.replace(
        "pools.yaml",
        "devices: {allocation: draClaims}\n",
        f"devices: {{allocation: draClaims}}\n  mig:\n    devices:\n{layout}",
    )
    few = policy.spans("dra-mapping-limits")
    assert few == []  # 7 mappings
    monkey = pytest.MonkeyPatch()
    monkey.setattr("hetgitops.checks.dra.MAX_MAPPINGS", 6)
    try:
        assert policy.spans("dra-mapping-limits") == [
            policy.pos("pools.yaml", "devices: {allocation: ^draClaims}")
        ]
    finally:
        monkey.undo()


@pytest.mark.parametrize(
    ("expression", "mig_device", "problem"),
    [
        ("device.attributes['gpu.nvidia.com'].index == 0", False, "'index' is removed in v25.8.0"),
        ("device.attributes['gpu.nvidia.com'].minor == 0", False, "'minor' is removed in v25.8.0"),
        ("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", False, "'profile' is not"),
        ("device.capacity['gpu.nvidia.com'].multiprocessors > 1", False, "'multiprocessors'"),
        ("device.attributes['gpu.nvidia.com'].productName == 'x", False, "unterminated string"),
        ("(device.driver == 'gpu.nvidia.com'", False, "unclosed '('"),
        ("device.driver == 'gpu.nvidia.com')", False, "unmatched ')'"),
    ],
)
def test_selector_problems(expression, mig_device, problem):
    found = dra.cel_problems(expression, mig_device=mig_device)
    assert len(found) == 1 and problem in found[0], found


def test_rendered_selectors_use_the_pinned_vocabulary(policy):
    from hetgitops import api

    sources = [(n, t.encode()) for n, t in sorted(on_dra(policy).files.items())]
    loaded = api.validate_sources(sources, api.Options(check_output=False))
    facts = dra.device_classes(loaded.policy)
    assert [f.name for f in facts] == ["h100-80gb.gpu.dra.hetgitops.io"]
    assert dra.cel_problems(facts[0].cel, mig_device=False) == []
    assert "productName.replace(' ', '-') in ['NVIDIA-H100-80GB-HBM3']" in facts[0].cel
    assert "architecture == 'Hopper'" in facts[0].cel


def test_volcano_job_on_a_claims_pool(policy):
    on_dra(policy).replace("profiles.yaml", "  framework: job\n", "  framework: volcano-job\n")
    assert policy.spans("dra-volcano-claims") == [
        policy.pos("profiles.yaml", "  framework: ^volcano-job")
    ]


def test_volcano_job_on_an_extended_resource_pool_passes(policy):
    on_dra(policy, "draExtendedResource")
    policy.replace("profiles.yaml", "  framework: job\n", "  framework: volcano-job\n")
    assert policy.spans("dra-volcano-claims") == []
