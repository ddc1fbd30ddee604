"""Rules of the labels family: node labels against the LabelTaxonomy."""

from __future__ import annotations

import pytest

TAXONOMY = """\
kind: LabelTaxonomy
metadata:
  name: node-labels
spec:
  labels:
    - {key: hetgitops.io/card-type, from: card-type}
    - {key: hetgitops.io/purpose, from: purpose, allowedValues: [training, inference]}
    - {key: hetgitops.io/gpu-memory-gib, from: memory, pattern: "[0-9]+"}
    - {key: topology.kubernetes.io/zone, from: zone}
    - {key: hetgitops.io/rack, from: rack}
    - {key: hetgitops.io/nvlink-domain, from: nvlink-domain, required: false}
    - {key: hetgitops.io/cost-center, from: static, allowedValues: [cc-a, cc-b]}
"""
LABEL = "    - {key: hetgitops.io/rack, from: rack}\n"


@pytest.fixture
def labelled(policy):
    """The base policy plus a taxonomy that every pool satisfies."""
    policy.add("taxonomy.yaml", TAXONOMY)
    for pool in ("h100-train", "l40s-infer"):
        policy.replace(
            "pools.yaml",
            f"  name: {pool}\nspec:\n",
            f"  name: {pool}\nspec:\n  labels: {{hetgitops.io/cost-center: cc-a}}\n",
        )
    return policy


def declare(policy, line: str) -> None:
    policy.replace("taxonomy.yaml", LABEL, LABEL + f"    - {line}\n")


def test_taxonomy_satisfied(labelled):
    assert labelled.diagnostics() == []


def test_label_missing_on_a_node_entry(labelled):
    labelled.replace("pools.yaml", "zone: zone-b, rack: rack-b1", "zone: zone-b")
    assert labelled.spans("label-missing") == [labelled.pos("pools.yaml", '- ^{names: "gpu-l40s')]


def test_label_missing_static_key(labelled):
    labelled.replace(
        "pools.yaml",
        "l40s-infer\nspec:\n  labels: {hetgitops.io/cost-center: cc-a}\n",
        "l40s-infer\nspec:\n  labels: {}\n",
    )
    assert labelled.spans("label-missing") == [labelled.pos("pools.yaml", "  labels: ^{}")]


def test_optional_label_may_be_absent(labelled):
    assert labelled.spans("label-missing") == []  # no node has an nvlinkDomain


@pytest.mark.parametrize(
    "edit, marked",
    [
        (("pools.yaml", "purpose: inference", "purpose: dev"), ("pools.yaml", "purpose: ^dev")),
        (("cards.yaml", "memoryGiB: 48", "memoryGiB: 47.5"), ("cards.yaml", "memoryGiB: ^47.5")),
        (
            (
                "pools.yaml",
                "l40s-infer\nspec:\n  labels: {hetgitops.io/cost-center: cc-a}",
                "l40s-infer\nspec:\n  labels: {hetgitops.io/cost-center: cc-z}",
            ),
            ("pools.yaml", "{hetgitops.io/cost-center: ^cc-z}"),
        ),
    ],
)
def test_label_value_invalid(labelled, edit, marked):
    labelled.replace(*edit)
    assert labelled.spans("label-value-invalid") == [labelled.pos(*marked)]


def test_derived_value_that_is_no_label_value(labelled):
    declare(labelled, "{key: hetgitops.io/model, from: model}")
    labelled.replace("cards.yaml", "model: L40S", "model: L40S PCIe")
    assert labelled.spans("label-value-invalid") == [
        labelled.pos("cards.yaml", "model: ^L40S PCIe")
    ]


def test_label_values_valid(labelled):
    declare(labelled, "{key: hetgitops.io/model, from: model}")
    assert labelled.spans("label-value-invalid") == []


def test_label_reserved(labelled):
    declare(labelled, "{key: nvidia.com/gpu.product, from: model}")
    labelled.replace(
        "pools.yaml",
        "  labels: {hetgitops.io/cost-center: cc-a}\n  cardType: l40s",
        "  labels: {hetgitops.io/cost-center: cc-a, nvidia.com/mig.config: all-disabled}\n"
        "  cardType: l40s",
    )
    assert labelled.spans("label-reserved") == sorted(
        [
            labelled.pos("taxonomy.yaml", "{key: ^nvidia.com/gpu.product"),
            labelled.pos("pools.yaml", "cc-a, ^nvidia.com/mig.config"),
        ]
    )
    assert labelled.spans("label-unknown") == []  # one finding per key


def test_label_reserved_without_taxonomy(policy):
    policy.replace(
        "pools.yaml",
        "  name: l40s-infer\nspec:\n",
        "  name: l40s-infer\nspec:\n  labels: {feature.node.kubernetes.io/x: y}\n",
    )
    assert policy.spans("label-reserved") == [policy.pos("pools.yaml", "labels: {^feature")]


def test_own_domain_is_not_reserved(labelled):
    assert labelled.spans("label-reserved") == []


def test_label_unknown(labelled):
    labelled.replace(
        "pools.yaml",
        "  labels: {hetgitops.io/cost-center: cc-a}\n  cardType: l40s",
        "  labels: {hetgitops.io/cost-center: cc-a, hetgitops.io/owner: ml,"
        " hetgitops.io/rack: r9}\n  cardType: l40s",
    )
    assert labelled.spans("label-unknown") == sorted(
        [
            labelled.pos("pools.yaml", "cc-a, ^hetgitops.io/owner"),
            labelled.pos("pools.yaml", "ml, ^hetgitops.io/rack: r9"),
        ]
    )


def test_declared_static_label_is_known(labelled):
    assert labelled.spans("label-unknown") == []


def test_label_duplicate(labelled):
    declare(labelled, "{key: hetgitops.io/rack, from: rack}")
    found = labelled.findings("label-duplicate")
    assert [str(d.span) for d in found] == [
        labelled.pos("taxonomy.yaml", "rack}\n    - {key: ^hetgitops.io/rack")
    ]


def test_label_outside_domain(labelled):
    declare(labelled, "{key: example.com/owner, from: static, required: false}")
    found = labelled.findings("label-outside-domain")
    assert [str(d.span) for d in found] == [
        labelled.pos("taxonomy.yaml", "{key: ^example.com/owner")
    ]
    assert found[0].severity.label == "warning"


def test_label_domain_subdomain_and_topology_keys_pass(labelled):
    declare(labelled, "{key: team.hetgitops.io/owner, from: static, required: false}")
    assert labelled.spans("label-outside-domain") == []
