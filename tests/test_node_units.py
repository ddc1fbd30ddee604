"""`plan.capacity.node_units`: one count of a node's accelerator units, with the replicas it
counts named, read alike by drift (what the node should advertise) and explain (what the node
holds), and by the capacity checks (what quotas are checked against)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from hetgitops import api
from hetgitops.compilers.nvidia import sharing_config
from hetgitops.drift.accelerators import node_resources
from hetgitops.explain.nodes import pool_nodes
from hetgitops.model.policy import Policy
from hetgitops.plan import capacity

REPO = Path(__file__).resolve().parents[1]
NOW = dt.date(2026, 12, 1)


def _staged_reduction(tmp_path: Path) -> Policy:
    """rtx4090-dev in step 1 of a staged sharing reduction: 4 -> 2 replicas per GPU, the
    device plugin kept at 4 (`retiringReplicas`), the teams' quotas fitting the new count."""
    root = tmp_path / "policy"
    shutil.copytree(REPO / "policies", root)
    dev = root / "pools" / "dev.yaml"
    dev.write_text(
        dev.read_text().replace("    replicas: 4\n", "    replicas: 2\n    retiringReplicas: 4\n")
    )
    others = root / "teams" / "others.yaml"
    text = others.read_text().replace(
        "{pool: rtx4090-dev, cards: 16}", "{pool: rtx4090-dev, cards: 8}"
    )
    others.write_text(
        text.replace("{pool: rtx4090-dev, cards: 32}", "{pool: rtx4090-dev, cards: 16}")
    )
    result = api.render([root], api.Options(now=NOW))
    assert result.policy is not None and not result.failed(), result.diagnostics
    return result.policy


def test_explain_and_drift_agree_on_a_node_during_a_staged_sharing_reduction(
    tmp_path: Path,
) -> None:
    policy = _staged_reduction(tmp_path)
    pool = policy.pools["rtx4090-dev"]
    card = policy.card_type_of(pool)
    assert card is not None and pool.retiring_replicas == 4 and pool.shared_replicas == 2
    resource = capacity.main_resource(pool, card)
    for view, node in zip(pool_nodes(policy, pool), pool.nodes, strict=True):
        drift_says = node_resources(policy, pool, card, node)
        assert dict(view.units) == drift_says, node.name
        assert drift_says[resource] == node.cards * 4  # the plugin still advertises 4 per GPU
    # Quotas and the capacity checks count the new replicas.
    cards = sum(n.cards for n in pool.nodes)
    assert capacity.pool_resources(pool, card, policy.fleet)[resource] == cards * 2
    assert capacity.pool_resources(pool, card, policy.fleet, replicas="advertised")[resource] == (
        cards * 4
    )


def test_node_units_names_its_replicas(tmp_path: Path) -> None:
    policy = _staged_reduction(tmp_path)
    pool = policy.pools["rtx4090-dev"]
    card = policy.card_type_of(pool)
    assert card is not None
    resource = capacity.main_resource(pool, card)
    shared = capacity.node_units(pool, card, policy.fleet, 8, replicas="shared")
    advertised = capacity.node_units(pool, card, policy.fleet, 8, replicas="advertised")
    assert (shared[resource], advertised[resource]) == (16, 32)
    # Outside a reduction the two are one count.
    a800 = policy.pools["a800-train"]
    a800_card = policy.card_type_of(a800)
    assert a800_card is not None
    assert capacity.node_units(a800, a800_card, policy.fleet, 8, replicas="shared") == (
        capacity.node_units(a800, a800_card, policy.fleet, 8, replicas="advertised")
    )


def test_explain_labels_nodes_with_the_replicas_their_device_plugin_runs(tmp_path: Path) -> None:
    """GPU feature discovery labels `nvidia.com/gpu.replicas` (and the `-SHARED` product) from
    the device plugin's config (NVIDIA/k8s-device-plugin internal/lm/resource.go,
    `replicasLabel`/`productLabel`), which a staged reduction keeps at the retiring count: a
    job selecting on the label matches the node as it is, not as it will be."""
    policy = _staged_reduction(tmp_path)
    pool = policy.pools["rtx4090-dev"]
    card = policy.card_type_of(pool)
    assert card is not None
    config = sharing_config(policy, pool, card)
    assert config is not None
    configured = config["sharing"]["timeSlicing"]["resources"][0]["replicas"]
    assert configured == 4
    for view in pool_nodes(policy, pool):
        assert view.labels["nvidia.com/gpu.replicas"] == str(configured), view.name
        assert view.labels["nvidia.com/gpu.product"].endswith("-SHARED")
