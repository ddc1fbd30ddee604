"""drift's fleet checks (`drift/fleet.py`) on the bundled fleet, without a cluster: the live
objects are built from the policy's own render and nodes, then one thing is changed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from hetgitops import api
from hetgitops.drift import fleet
from hetgitops.model.policy import Policy

BUNDLED = Path(__file__).resolve().parents[2] / "policies"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _policy_and_queues() -> tuple[Policy, list[dict[str, Any]]]:
    result = api.render([BUNDLED])
    assert result.policy is not None and not result.failed()
    return result.policy, [m.obj for m in result.manifests if m.kind == "ClusterQueue"]


def _live_nodes(policy: Policy) -> list[dict[str, Any]]:
    nodes = []
    for pool in policy.pools.values():
        card = policy.card_type_of(pool)
        for node in pool.nodes:
            allocatable = {} if card is None else fleet.node_resources(policy, pool, card, node)
            status = {"allocatable": {k: str(v) for k, v in allocatable.items()}}
            nodes.append({"metadata": {"name": node.name}, "status": status})
    return nodes


def test_a_failed_card_on_a_topology_fleet_compares_with_the_digest_named_flavor() -> None:
    policy, queues = _policy_and_queues()
    assert policy.fleet is not None and policy.fleet.topology_name  # flavors are <pool>-<digest>
    nodes = _live_nodes(policy)
    a800 = next(n for n in nodes if n["metadata"]["name"] == "gpu-a800-001")
    a800["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    found = fleet.check(
        policy, nodes, queues, now=NOW, mig_pending_timeout=dt.timedelta(minutes=30)
    )
    [accelerators] = [d for d in found if d.rule == "drift-accelerators"]
    assert "advertises 7 of 8 nvidia.com/gpu" in accelerators.message
    assert "live quota 0" not in accelerators.message
    assert fleet.live_quota(policy, queues, policy.pools["a800-train"], "nvidia.com/gpu") == 128
    assert "quota on a800-train (128) now exceeds its live capacity (127)" in accelerators.message


def test_an_orphaned_namespace_is_not_promised_to_the_gitops_prune() -> None:
    """hetgitops marks Namespaces never to be pruned: the hint must not say a prune removes it."""
    from hetgitops.drift.objects import orphan

    result = api.render([BUNDLED])
    assert result.policy is not None and result.policy.fleet is not None
    namespace = next(m.obj for m in result.manifests if m.kind == "Namespace")
    found = orphan(namespace, result.policy.fleet)
    assert "prune it" not in found.hint and "delete it by hand" in found.hint
    queue = next(m.obj for m in result.manifests if m.kind == "ClusterQueue")
    assert orphan(queue, result.policy.fleet).hint == "delete it, or let the GitOps tool prune it"


def test_absent_nodes_are_one_finding_per_pool_with_their_ranges() -> None:
    policy, queues = _policy_and_queues()
    nodes = [n for n in _live_nodes(policy) if not n["metadata"]["name"].startswith("gpu-a800-")]
    found = fleet.check(
        policy, nodes, queues, now=NOW, mig_pending_timeout=dt.timedelta(minutes=30)
    )
    [absent] = [d for d in found if d.rule == "drift-node-absent"]
    assert absent.message == (
        "16 nodes of pool a800-train are not in the cluster: gpu-a800-[001:016]"
    )
    assert fleet.name_ranges(["n-1", "n-2", "x", "n-4"]) == ["n-[1:2]", "x", "n-4"]
