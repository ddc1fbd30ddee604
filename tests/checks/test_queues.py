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
