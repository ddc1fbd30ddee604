"""The node labels shared by the nodes target and Kueue ResourceFlavors."""

from __future__ import annotations

from small_policy import build

from hetgitops.plan.node_labels import (
    flavor_node_labels,
    label_value,
    node_labels,
    pool_node_labels,
    topology_label,
)

TAXONOMY = """\
apiVersion: hetgitops.io/v1alpha1
kind: LabelTaxonomy
metadata: {name: labels}
spec:
  labels:
    - {key: example.io/model, from: model}
    - {key: example.io/where, from: rack}
"""


def test_default_pool_labels_without_taxonomy() -> None:
    policy = build()
    # the card type declares no generation: an empty value is left out, not written as ""
    assert pool_node_labels(policy, policy.pools["l40s-pool"]) == {
        "example.io/card-type": "l40s",
        "example.io/gpu-memory-gib": "48",
        "example.io/pool": "l40s-pool",
        "example.io/purpose": "training",
        "example.io/vendor": "nvidia",
    }


def test_taxonomy_labels_plus_identity_labels() -> None:
    policy = build(extra=TAXONOMY)
    pool = policy.pools["h100-pool"]
    assert pool_node_labels(policy, pool) == {
        "example.io/card-type": "h100",
        "example.io/model": "H100-SXM5-80GB",
        "example.io/pool": "h100-pool",
    }
    assert node_labels(policy, pool, pool.nodes[0])["example.io/where"] == "r1"
    assert topology_label(policy, "rack") == "example.io/where"


def test_flavor_labels_are_a_small_stable_subset() -> None:
    policy = build()
    for pool in policy.pools.values():
        labels = flavor_node_labels(policy, pool)
        assert labels["example.io/pool"] == pool.name
        assert len(labels) <= 8
        assert labels.items() <= pool_node_labels(policy, pool).items()


def test_label_values_are_coerced() -> None:
    assert label_value("GeForce RTX 4090 (24GB)") == "GeForce-RTX-4090-24GB"
    assert len(label_value("x" * 100)) == 63
