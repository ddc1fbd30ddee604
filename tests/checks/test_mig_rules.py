"""Rules of the MIG family: profiles, placement, GPU indexes, strategies."""

from __future__ import annotations

import pytest

from hetgitops import api
from hetgitops.model import mig
from tests.checks.conftest import BASE, NOW, PolicyText

H100_POOL = "  cardType: h100-80gb\n"


def layout(policy, devices: str, pool: str = H100_POOL) -> None:
    """Give a pool `mig.devices` (YAML flow list items, one per line)."""
    body = "".join(f"      - {d}\n" for d in devices.split("\n"))
    policy.replace("pools.yaml", pool, pool + "  mig:\n    devices:\n" + body)


def strategy(policy, name: str) -> None:
    policy.replace(
        "fleet.yaml", "  cohorts:", f"  gpuOperator: {{migStrategy: {name}}}\n  cohorts:"
    )


def test_mig_not_supported(policy):
    layout(policy, "{gpus: all, profiles: {1g.10gb: 7}}", pool="  cardType: l40s-48gb\n")
    assert policy.spans("mig-not-supported") == [
        policy.pos("pools.yaml", "cardType: l40s-48gb\n  ^mig:")
    ]


def test_mig_supported(policy):
    layout(policy, "{gpus: [0], profiles: {1g.10gb: 7}}")
    assert policy.spans("mig-not-supported") == []


def test_mig_profile_unknown_in_layout_and_quota(policy):
    layout(policy, "{gpus: [0], profiles: {1g.5gb: 7}}\n{gpus: [1], profiles: {1g.10gb: 7}}")
    policy.replace(
        "teams.yaml",
        "- {pool: h100-train, cards: 8}\n    - {pool: l40s-infer",
        "- {pool: h100-train, cards: 8, mig: {2g.10gb: 1}}\n    - {pool: l40s-infer",
    )
    assert policy.spans("mig-profile-unknown") == sorted(
        [
            policy.pos("pools.yaml", "profiles: {^1g.5gb: 7}"),
            policy.pos("teams.yaml", "mig: {^2g.10gb: 1}"),
        ]
    )
    assert policy.spans("quota-resource-unavailable") == []  # one finding per mistake
    assert policy.spans("mig-layout-invalid") == []


def test_mig_profiles_known(policy):
    layout(policy, "{gpus: [0], profiles: {1g.10gb+me: 1, 1g.10gb: 6}}")
    assert policy.spans("mig-profile-unknown") == []


INVALID_A100_80GB = [
    "{3g.40gb: 2, 1g.10gb: 1}",  # 7 compute slices, but 9 of 8 memory slices
    "{1g.20gb: 4, 1g.10gb: 1}",  # 9 memory slices
    "{1g.10gb: 8}",  # at most 7 per GPU
    "{4g.40gb: 1, 2g.20gb: 2}",  # 8 compute slices
    "{2g.20gb: 3, 1g.20gb: 2}",  # 10 memory slices
]
VALID_A100_80GB = [
    "{1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}",
    "{4g.40gb: 1, 3g.40gb: 1}",
    "{1g.10gb: 7}",
    "{7g.80gb: 1}",
    "{3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}",
    "{2g.20gb: 3, 1g.20gb: 1}",  # 2g cannot start at slot 6, but 1g.20gb can
]


@pytest.mark.parametrize("profiles", INVALID_A100_80GB)
def test_mig_layout_invalid(policy, profiles):
    policy.replace("cards.yaml", "profileTable: H100-80GB", "profileTable: A100-80GB")
    layout(policy, f"{{gpus: [2, 3], profiles: {profiles}}}")
    assert policy.spans("mig-layout-invalid") == [
        policy.pos("pools.yaml", "gpus: [2, 3], profiles: ^{")
    ]
    assert policy.findings("mig-layout-invalid")[0].message.startswith("GPU 2, 3: ")


@pytest.mark.parametrize("profiles", VALID_A100_80GB)
def test_mig_layout_valid(policy, profiles):
    policy.replace("cards.yaml", "profileTable: H100-80GB", "profileTable: A100-80GB")
    layout(policy, f"{{gpus: all, profiles: {profiles}}}")
    assert policy.spans("mig-layout-invalid") == []


def test_mig_gpu_index(policy):
    layout(policy, "{gpus: [0, 8], profiles: {1g.10gb: 7}}")
    assert policy.spans("mig-gpu-index") == [policy.pos("pools.yaml", "gpus: [0, ^8]")]


def test_mig_gpu_index_checks_the_smallest_node(policy):
    policy.replace(
        "pools.yaml",
        '{names: "gpu-h100-[01:02]", zone: zone-a',
        '{names: "gpu-h100-[01:02]", cardsPerNode: 4, zone: zone-a',
    )
    layout(policy, "{gpus: [3, 7], profiles: {1g.10gb: 7}}")
    assert policy.spans("mig-gpu-index") == [policy.pos("pools.yaml", "gpus: [3, ^7]")]


def test_mig_gpu_index_in_range(policy):
    layout(policy, "{gpus: [0, 7], profiles: {1g.10gb: 7}}")
    assert policy.spans("mig-gpu-index") == []


@pytest.mark.parametrize(
    "devices",
    [
        "{gpus: [0], profiles: {1g.10gb: 7}}",  # other GPUs stay whole
        "{gpus: all, profiles: {1g.10gb: 3, 2g.20gb: 2}}",  # two profile types
        "{gpus: all, profiles: {1g.10gb: 7}}\n{gpus: [1], profiles: {3g.40gb: 2}}",
    ],
)
def test_mig_strategy_single_mixed(policy, devices):
    strategy(policy, "single")
    layout(policy, devices)
    assert policy.spans("mig-strategy-single-mixed") == [
        policy.pos("pools.yaml", "cardType: h100-80gb\n  ^mig:")
    ]


def test_mig_strategy_single_one_profile_everywhere(policy):
    strategy(policy, "single")
    layout(policy, "{gpus: all, profiles: {1g.10gb: 7}}")
    policy.replace(
        "teams.yaml",
        "- {pool: l40s-infer, cards: 8}\n    - {pool: h100-train, cards: 8}",
        "- {pool: l40s-infer, cards: 8}\n    - {pool: h100-train, cards: 0}",
    )
    assert policy.spans("mig-strategy-single-mixed") == []


def test_mig_compute_instance_under_mixed(policy):
    layout(policy, "{gpus: [0], profiles: {1c.3g.40gb: 2}}")
    assert policy.spans("mig-compute-instance") == [
        policy.pos("pools.yaml", "profiles: {^1c.3g.40gb")
    ]


def test_mig_compute_instance_under_single_passes(policy):
    strategy(policy, "single")
    layout(policy, "{gpus: all, profiles: {1c.3g.40gb: 2}}")
    assert policy.spans("mig-compute-instance") == []


def test_mig_strategy_none_warns(policy):
    strategy(policy, "none")
    layout(policy, "{gpus: [0], profiles: {1g.10gb: 7}}")
    found = policy.findings("mig-strategy-none")
    assert [str(d.span) for d in found] == [
        policy.pos("pools.yaml", "cardType: h100-80gb\n  ^mig:")
    ]
    assert found[0].severity.label == "warning"


def test_mig_strategy_mixed_does_not_warn(policy):
    layout(policy, "{gpus: [0], profiles: {1g.10gb: 7}}")
    assert policy.spans("mig-strategy-none") == []


@pytest.mark.parametrize(
    "devices, marked",
    [
        (
            "{gpus: [0, 1], profiles: {1g.10gb: 7}}\n{gpus: [2, 1], profiles: {3g.40gb: 2}}",
            "gpus: [2, ^1], profiles: {3g",
        ),
        (
            "{gpus: [0], profiles: {1g.10gb: 7}}\n{gpus: all, profiles: {3g.40gb: 2}}",
            "gpus: ^all",
        ),
        (
            "{gpus: all, profiles: {1g.10gb: 7}}\n{gpus: [3], profiles: {3g.40gb: 2}}",
            "gpus: [^3]",
        ),
    ],
)
def test_mig_gpu_overlap(policy, devices, marked):
    layout(policy, devices)
    found = policy.findings("mig-gpu-overlap")
    assert [str(d.span) for d in found] == [policy.pos("pools.yaml", marked)]
    first = devices.split("\n")[0].replace("{gpus: ", "{gpus: ^", 1)
    assert [str(s) for s in found[0].related] == [policy.pos("pools.yaml", first)]


def test_mig_gpu_overlap_reported_once_per_gpu_and_entry(policy):
    layout(
        policy,
        "{gpus: [0, 1], profiles: {1g.10gb: 7}}\n"
        "{gpus: [1], profiles: {3g.40gb: 2}}\n"
        "{gpus: [1, 2], profiles: {7g.80gb: 1}}",
    )
    assert policy.spans("mig-gpu-overlap") == sorted(
        [
            policy.pos("pools.yaml", "gpus: [^1], profiles: {3g"),
            policy.pos("pools.yaml", "gpus: [^1, 2]"),
        ]
    )


def test_mig_gpus_disjoint_pass(policy):
    layout(policy, "{gpus: [0, 1], profiles: {1g.10gb: 7}}\n{gpus: [2, 3], profiles: {3g.40gb: 2}}")
    assert policy.spans("mig-gpu-overlap") == []
    assert policy.spans("mig-layout-invalid") == []


# Blackwell tables (shared/reference/accelerators-mig-profiles.yaml: GPU Operator default
# mig-parted config): table -> (1g, 1g-2x/2g, 3g memory) GB of its profile names.
BLACKWELL = {
    "B200-180GB": (23, 45, 90),
    "GB200-186GB": (23, 47, 93),
    "B300-269GB": (34, 67, 135),
    "GB300-278GB": (35, 70, 139),
}


def _blackwell(policy, table: str, profiles: str, quota: str) -> None:
    policy.replace("cards.yaml", "profileTable: H100-80GB", f"profileTable: {table}")
    layout(policy, f"{{gpus: [0, 1], profiles: {profiles}}}")
    policy.replace(
        "teams.yaml",
        "- {pool: h100-train, cards: 8}\n    - {pool: l40s-infer",
        f"- {{pool: h100-train, mig: {quota}}}\n    - {{pool: l40s-infer",
    )
    # Two GPUs of each node are partitioned: a job of whole cards fits on the other six.
    policy.replace("profiles.yaml", "cardsPerNode: 8", "cardsPerNode: 4")


@pytest.mark.parametrize("table", sorted(BLACKWELL))
def test_blackwell_mig_pool_validates_and_renders_its_slices(policy, table):
    one, two, three = BLACKWELL[table]
    profiles = f"{{3g.{three}gb: 1, 2g.{two}gb: 1, 1g.{one}gb: 2}}"
    _blackwell(policy, table, profiles, f"{{3g.{three}gb: 4}}")
    sources = [(name, text.encode()) for name, text in sorted(policy.files.items())]
    result = api.validate_sources(sources, api.Options(now=NOW))
    assert [d for d in result.diagnostics if d.severity.label == "error"] == []
    queue = next(m.obj for m in result.manifests if m.kind == "ClusterQueue" and m.name == "ml")
    quotas = {
        (flavor["name"], r["name"]): r["nominalQuota"]
        for group in queue["spec"]["resourceGroups"]
        for flavor in group["flavors"]
        for r in flavor["resources"]
        if r["name"].startswith("nvidia.com/mig-") and r["nominalQuota"] != "0"
    }
    assert list(quotas.values()) == ["4"]
    assert [r for _, r in quotas] == [f"nvidia.com/mig-3g.{three}gb"]
    config = next(m.obj for m in result.manifests if m.kind == "ConfigMap" and "mig" in m.name)
    assert f"3g.{three}gb: 1" in config["data"]["config.yaml"]
    assert f"1g.{one}gb: 2" in config["data"]["config.yaml"]


@pytest.mark.parametrize("table", sorted(BLACKWELL))
def test_blackwell_mig_refuses_another_parts_profile_and_an_impossible_layout(policy, table):
    one, _, three = BLACKWELL[table]
    wrong = "3g.40gb"  # an H100 profile: no Blackwell part has it
    _blackwell(policy, table, f"{{{wrong}: 2}}", f"{{3g.{three}gb: 1}}")
    assert policy.spans("mig-profile-unknown") == [
        policy.pos("pools.yaml", f"profiles: {{^{wrong}: 2}}")
    ]
    crowded = PolicyText(BASE)
    # Seven compute slices, but 2 x 3g fill all 8 memory slots: the 1g has no place.
    _blackwell(crowded, table, f"{{3g.{three}gb: 2, 1g.{one}gb: 1}}", f"{{3g.{three}gb: 1}}")
    assert crowded.spans("mig-layout-invalid") == [
        crowded.pos("pools.yaml", "gpus: [0, 1], profiles: ^{")
    ]


def test_blackwell_tables_follow_the_reference_file() -> None:
    """The built-in tables are the reference catalogue's Blackwell rows, name for name."""
    for table, (one, two, three) in BLACKWELL.items():
        seven = table.split("-")[1].removesuffix("GB")
        assert set(mig.TABLES[table].profiles) == {
            f"1g.{one}gb",
            f"1g.{one}gb+me",
            f"1g.{two}gb",
            f"2g.{two}gb",
            f"3g.{three}gb",
            f"4g.{three}gb",
            f"7g.{seven}gb",
        }


def _single_h100_slices(policy) -> None:
    """Issue 7 item 5: an H100 pool laid out as `3g.40gb: 2` per GPU under migStrategy single."""
    strategy(policy, "single")
    layout(policy, "{gpus: all, profiles: {3g.40gb: 2}}")


def test_mig_single_refuses_whole_card_and_normalized_quotas(policy):
    _single_h100_slices(policy)
    policy.replace(
        "teams.yaml",
        "- {pool: h100-train, cards: 8}\n    - {pool: l40s-infer",
        "- {pool: h100-train, normalized: 23.2}\n    - {pool: l40s-infer",
    )
    assert policy.spans("mig-single-card-quota") == sorted(
        [
            policy.pos("teams.yaml", "- {pool: h100-train, ^normalized: 23.2}"),
            policy.pos(
                "teams.yaml", "- {pool: l40s-infer, cards: 8}\n    - {pool: h100-train, ^cards"
            ),
        ]
    )


def test_mig_single_accepts_a_quota_in_slices(policy):
    _single_h100_slices(policy)
    for quota in (
        "{pool: h100-train, cards: 8}\n    - {pool: l40s-infer",
        "h100-train, cards: 8}\n  tiers: [serving]",
    ):
        policy.replace("teams.yaml", quota, quota.replace("cards: 8", "mig: {3g.40gb: 8}"))
    policy.drop("profiles.yaml")  # its whole-card job has no place on a sliced pool
    assert policy.spans("mig-single-card-quota") == []
    sources = [(name, text.encode()) for name, text in sorted(policy.files.items())]
    result = api.validate_sources(sources, api.Options(now=NOW, check_output=False))
    queue = next(m.obj for m in result.manifests if m.kind == "ClusterQueue" and m.name == "ml")
    flavor = next(
        f for g in queue["spec"]["resourceGroups"] for f in g["flavors"] if "h100" in f["name"]
    )
    # Eight 3g slices, stated as such in the policy, are eight nvidia.com/gpu units.
    assert {r["name"]: r["nominalQuota"] for r in flavor["resources"]}["nvidia.com/gpu"] == "8"


def test_mig_single_card_quota_needs_single_and_a_layout(policy):
    layout(policy, "{gpus: all, profiles: {3g.40gb: 2}}")  # mixed: nvidia.com/mig-3g.40gb
    assert policy.spans("mig-single-card-quota") == []
    plain = PolicyText(BASE)
    strategy(plain, "single")  # no MIG layout: nvidia.com/gpu is a whole card
    assert plain.spans("mig-single-card-quota") == []
