"""Rules of the fleet family: missing Fleet, cohort tree."""

from __future__ import annotations

import pytest

from hetgitops.diagnostics import Severity


def test_base_policy_is_clean(policy):
    assert policy.diagnostics() == []


def test_missing_fleet(policy):
    policy.drop("fleet.yaml")
    assert policy.spans("missing-fleet") == ["cards.yaml"]


def test_missing_fleet_is_a_consequence_when_the_fleet_failed_the_schema(policy):
    policy.replace("fleet.yaml", "  cluster: test-cluster\n", "")
    assert policy.spans("schema")
    assert policy.causes("missing-fleet") == ["schema"]


def test_missing_fleet_is_a_consequence_when_the_fleet_file_did_not_load(policy):
    policy.replace("fleet.yaml", "  cluster: test-cluster\n", "  cluster: [test-cluster\n")
    assert policy.spans("syntax")
    assert policy.causes("missing-fleet") == ["syntax"]


def test_missing_fleet_not_reported_when_every_document_is_invalid(policy):
    policy.files = {
        "pool.yaml": "apiVersion: hetgitops.io/v1alpha1\nkind: Pool\nmetadata:\n"
        "  name: p\nspec: {cardType: x}\n"
    }
    assert policy.spans("schema")
    assert policy.spans("missing-fleet") == []


def test_cohort_duplicate(policy):
    policy.replace("fleet.yaml", "    - name: ml\n", "    - name: org\n    - name: ml\n")
    assert policy.spans("cohort-duplicate") == [
        policy.pos("fleet.yaml", "    - name: org\n    - name: ^org")
    ]


def test_cohort_cycle(policy):
    policy.replace("fleet.yaml", "    - name: org\n", "    - name: org\n      parent: ml\n")
    found = policy.findings("cohort-cycle")
    assert [str(d.span) for d in found] == [policy.pos("fleet.yaml", "parent: ^ml")]
    assert [str(s) for s in found[0].related] == [policy.pos("fleet.yaml", "parent: ^org")]


def test_cohort_self_parent_is_a_cycle(policy):
    policy.replace("fleet.yaml", "    - name: org\n", "    - name: org\n      parent: org\n")
    assert policy.spans("cohort-cycle") == [
        policy.pos("fleet.yaml", "name: org\n      parent: ^org")
    ]


def test_cohort_tree_passes(policy):
    assert policy.spans("cohort-cycle") == []
    assert policy.spans("cohort-duplicate") == []


def test_targets_complete_pass(policy):
    assert policy.spans("targets-incomplete") == []


@pytest.mark.parametrize(
    ("targets", "missing"),
    [
        ("[kueue]", [("kueue", "core"), ("kueue", "nodes")]),
        ("[core, kueue, volcano]", [("kueue", "nodes"), ("volcano", "nodes")]),
        ("[nodes, kueue]", [("kueue", "core")]),
        ("[core, gpu-operator]", [("gpu-operator", "nodes")]),
        ("[core, nodes, volcano, gpu-operator]", []),
    ],
)
def test_targets_incomplete(policy, targets, missing):
    policy.replace(
        "fleet.yaml", "targets: [core, kueue, volcano, nodes, gpu-operator]", f"targets: {targets}"
    )
    found = policy.findings("targets-incomplete")
    where = policy.pos("fleet.yaml", "targets: ^[")
    assert [(d.rule, str(d.span)) for d in found] == [("targets-incomplete", where)] * len(missing)
    assert all(d.severity is Severity.WARNING for d in found)
    ordered = sorted(found, key=lambda d: d.message)
    for (target, needed), diagnostic in zip(missing, ordered, strict=True):
        assert f"'{target}' without '{needed}'" in diagnostic.message


def test_volcano_without_nodes_passes_when_every_pool_names_the_nodegroup_its_nodes_carry(policy):
    """An adopted Volcano cluster: the nodes already carry volcano.sh/nodegroup-name, which
    each pool declares (spec.volcano.nodeGroup, as import writes); one pool without it warns."""
    policy.replace("fleet.yaml", "targets: [core, kueue, volcano, nodes, gpu-operator]",
                   "targets: [core, volcano]")  # fmt: skip
    policy.replace("pools.yaml", "  name: h100-train\nspec:\n",
                   "  name: h100-train\nspec:\n  volcano: {nodeGroup: h100-train}\n")  # fmt: skip
    assert ["'volcano' without 'nodes'" in d.message
            for d in policy.findings("targets-incomplete")] == [True]  # fmt: skip
    policy.replace("pools.yaml", "  name: l40s-infer\nspec:\n",
                   "  name: l40s-infer\nspec:\n  volcano: {nodeGroup: rack-b1-l40s}\n")  # fmt: skip
    assert policy.findings("targets-incomplete") == []
