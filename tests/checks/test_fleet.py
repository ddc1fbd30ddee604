"""Rules of the fleet family: missing Fleet, cohort tree."""

from __future__ import annotations


def test_base_policy_is_clean(policy):
    assert policy.diagnostics() == []


def test_missing_fleet(policy):
    policy.drop("fleet.yaml")
    assert policy.spans("missing-fleet") == ["cards.yaml"]


def test_missing_fleet_not_reported_when_the_fleet_failed_the_schema(policy):
    policy.replace("fleet.yaml", "  cluster: test-cluster\n", "")
    assert policy.spans("schema")
    assert policy.spans("missing-fleet") == []


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
