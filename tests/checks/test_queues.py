"""Rules of the queues family: Kueue limits, namespaces, Volcano plugins."""

from __future__ import annotations

import pytest

ML_QUOTAS = "    - {pool: l40s-infer, cards: 8}\n  tiers: [training]"


def many_pools(policy, count: int) -> None:
    """Give team ml a one-card quota in `count` more one-node pools."""
    quotas = ML_QUOTAS.split("\n")[0]
    for index in range(count):
        name = f"extra-{index:02d}"
        policy.add(
            "pools.yaml",
            f"kind: Pool\nmetadata:\n  name: {name}\nspec:\n"
            f"  cardType: l40s-48gb\n  purpose: batch\n  cardsPerNode: 8\n"
            f"  nodes: [{{names: node-{name}, zone: zone-c, rack: rack-c1}}]\n",
        )
        quotas += f"\n    - {{pool: {name}, cards: 1}}"
    policy.replace("teams.yaml", ML_QUOTAS, quotas + "\n  tiers: [training]")


def test_kueue_limits_before_0_14(policy):
    policy.replace("fleet.yaml", 'kueue: "0.19.2"', 'kueue: "0.13.0"')
    many_pools(policy, 15)  # 17 flavors
    assert policy.spans("kueue-limits") == [
        policy.pos(
            "teams.yaml",
            "cohort: ml\n  ^quotas:\n    - {pool: h100-train, cards: 8}\n    - {pool: l40s",
        )
    ]


def test_kueue_limits_since_0_14(policy):
    many_pools(policy, 15)
    assert policy.spans("kueue-limits") == []


def test_namespace_collision(policy):
    policy.replace("teams.yaml", "namespaces: [serving]", "namespaces: [serving, ml]")
    found = policy.findings("namespace-collision")
    assert [str(d.span) for d in found] == [policy.pos("teams.yaml", "[serving, ^ml]")]
    assert [str(s) for s in found[0].related] == [policy.pos("teams.yaml", "namespaces: [^ml]")]


def test_own_namespaces_pass(policy):
    assert policy.spans("namespace-collision") == []


@pytest.mark.parametrize(
    "volcano, marked",
    [
        ("{queuePlugin: proportion}", "queuePlugin: ^proportion"),
        ("{extraPlugins: [binpack, proportion]}", "[binpack, ^proportion]"),
        # Explicit tiers (kept by import) say the plugins themselves: nothing beside them.
        (
            "{hierarchy: false, tiers: [{plugins: [{name: capacity}]}]}",
            "{hierarchy: ^false",
        ),
        (
            "{tiers: [{plugins: [{name: capacity}, {name: proportion}]}]}",
            "{tiers: ^[{plugins",
        ),
    ],
)
def test_volcano_plugin_conflict(policy, volcano, marked):
    policy.replace("fleet.yaml", "  cohorts:", f"  volcano: {volcano}\n  cohorts:")
    assert policy.spans("volcano-plugin-conflict") == [policy.pos("fleet.yaml", marked)]


@pytest.mark.parametrize(
    "fleet",
    [
        "  volcano: {queuePlugin: proportion, hierarchy: false}\n",
        "  volcano: {extraPlugins: [binpack]}\n",
        "  volcano: {tiers: [{plugins: [{name: proportion}, {name: binpack}]}]}\n",
        "  volcano: {tiers: [{plugins: [{name: capacity, enableHierarchy: true}]}]}\n",
    ],
)
def test_volcano_plugins_pass(policy, fleet):
    policy.replace("fleet.yaml", "  cohorts:", fleet + "  cohorts:")
    assert policy.spans("volcano-plugin-conflict") == []


def test_volcano_conflict_reported_even_when_not_targeted(policy):
    # `render --target volcano` can still emit the scheduler config from these settings.
    policy.replace(
        "fleet.yaml",
        "targets: [core, kueue, volcano, nodes, gpu-operator]",
        "targets: [core, kueue]",
    )
    policy.replace("fleet.yaml", "  cohorts:", "  volcano: {queuePlugin: proportion}\n  cohorts:")
    assert policy.spans("volcano-plugin-conflict") == [
        policy.pos("fleet.yaml", "volcano: {queuePlugin: ^proportion}")
    ]


VOLCANO_TARGETS = "targets: [core, kueue, volcano, nodes, gpu-operator]"


def rename_team(policy, old: str, new: str) -> None:
    policy.replace("teams.yaml", f"metadata:\n  name: {old}\n", f"metadata:\n  name: {new}\n")


def test_a_team_named_like_a_leaf_is_no_collision(policy):
    # Team ml's leaf queue in pool l40s-infer is `ml-l40s-infer`; no team queue is rendered
    # (the tree is flat, see compilers/volcano.py), so a team of that name is fine.
    rename_team(policy, "serving", "ml-l40s-infer")
    assert policy.findings("queue-name-collision") == []


def test_queue_name_collision_between_leaves(policy):
    # `ml` in pool `x-pool` and `ml-x` in pool `pool` are both `ml-x-pool`.
    rename_team(policy, "serving", "ml-x")
    policy.add(
        "pools.yaml",
        "kind: Pool\nmetadata:\n  name: x-pool\nspec:\n  cardType: l40s-48gb\n"
        "  purpose: batch\n  cardsPerNode: 8\n  nodes: [{names: node-x, zone: zone-c}]\n"
        "---\n" + "apiVersion: hetgitops.io/v1alpha1\n"
        "kind: Pool\nmetadata:\n  name: pool\nspec:\n  cardType: l40s-48gb\n"
        "  purpose: batch\n  cardsPerNode: 8\n  nodes: [{names: node-y, zone: zone-c}]\n",
    )
    policy.replace(
        "teams.yaml", ML_QUOTAS, ML_QUOTAS.replace("\n", "\n    - {pool: x-pool, cards: 1}\n", 1)
    )
    policy.replace(
        "teams.yaml",
        "- {pool: h100-train, cards: 8}\n  tiers: [serving]",
        "- {pool: h100-train, cards: 8}\n    - {pool: pool, cards: 1}\n  tiers: [serving]",
    )
    assert policy.spans("queue-name-collision") == [
        policy.pos("teams.yaml", "- {pool: ^pool, cards: 1}")
    ]


def test_queue_name_too_long(policy):
    rename_team(policy, "serving", "team-" + "x" * 47)  # 52 + "-l40s-infer" = 63: still fine
    assert policy.spans("queue-name-collision") == []
    rename_team(policy, "team-" + "x" * 47, "team-" + "x" * 48)  # 64 for both pools
    assert policy.spans("queue-name-collision") == [
        policy.pos(
            "teams.yaml",
            "- {pool: ^l40s-infer, cards: 8}\n    - {pool: h100-train, cards: 8}\n  tiers: [s",
        ),
        policy.pos("teams.yaml", "- {pool: ^h100-train, cards: 8}\n  tiers: [s"),
    ]


def test_queue_names_distinct_pass(policy):
    rename_team(policy, "serving", "ml-eval")
    assert policy.spans("queue-name-collision") == []


def test_queue_name_collision_needs_volcano(policy):
    rename_team(policy, "serving", "ml-l40s-infer")
    policy.replace("fleet.yaml", VOLCANO_TARGETS, "targets: [core, kueue]")
    assert policy.spans("queue-name-collision") == []


@pytest.mark.parametrize(
    "namespace",
    [
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "kube-flannel",
        "default",
        "gpu-operator",
        "volcano-system",
        "kueue-system",
        "node-feature-discovery",
    ],
)
def test_namespace_reserved(policy, namespace):
    policy.replace("teams.yaml", "namespaces: [serving]", f"namespaces: [serving, {namespace}]")
    assert policy.spans("namespace-reserved") == [
        policy.pos("teams.yaml", f"[serving, ^{namespace}]")
    ]


def test_namespace_reserved_follows_the_gpu_operator_namespace(policy):
    policy.replace(
        "fleet.yaml", "  cohorts:", "  gpuOperator: {namespace: nvidia-gpu-operator}\n  cohorts:"
    )
    policy.replace("teams.yaml", "namespaces: [serving]", "namespaces: [nvidia-gpu-operator]")
    assert policy.spans("namespace-reserved") == [
        policy.pos("teams.yaml", "namespaces: [^nvidia-gpu-operator]")
    ]


@pytest.mark.parametrize(
    "namespace", ["kubeflow", "gpu-operator-jobs", "defaults", "ml-kube-system"]
)
def test_namespace_not_reserved(policy, namespace):
    policy.replace("teams.yaml", "namespaces: [serving]", f"namespaces: [{namespace}]")
    assert policy.spans("namespace-reserved") == []
