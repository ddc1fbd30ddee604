"""drift's fleet checks (`drift/fleet.py` and the modules it calls) on the bundled fleet,
without a cluster: the live objects are built from the policy's own render and nodes,
then one thing is changed."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hetgitops import api
from hetgitops.compilers.nodes import desired_node_labels
from hetgitops.drift import fleet, queue_usage
from hetgitops.drift.accelerators import node_resources
from hetgitops.drift.node_drift import promised_labels
from hetgitops.drift.queue_usage import live_quota
from hetgitops.model.policy import Policy
from hetgitops.model.ranges import compact

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
            allocatable = {} if card is None else node_resources(policy, pool, card, node)
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
    assert live_quota(policy, queues, policy.pools["a800-train"], "nvidia.com/gpu") == 128
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
    assert compact(["n-1", "n-2", "x", "n-4"], sort=False) == ["n-[1:2]", "x", "n-4"]


def _check(policy: Policy, nodes: list[dict[str, Any]], queues: list[dict[str, Any]]) -> list[Any]:
    return fleet.check(policy, nodes, queues, now=NOW, mig_pending_timeout=dt.timedelta(minutes=30))


def test_an_nfd_outage_is_one_finding_per_pool_and_rule_with_the_nodes_as_ranges() -> None:
    """Issue 22 item 13: live nodes without their labels and taints (NFD down) and 16 A800s at
    7 of 8 cards gave a finding per node and label (492 on the bundled fleet); now one per pool
    and rule, the nodes as ranges, a line per node in `details`."""
    policy, queues = _policy_and_queues()
    nodes = _live_nodes(policy)  # no labels, no taints
    for node in nodes:
        if node["metadata"]["name"].startswith("gpu-a800-"):
            node["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    found = _check(policy, nodes, queues)
    for rule in ("drift-node-labels", "drift-node-taints", "drift-mig-config"):
        pools = [d.message.split(" of pool ")[1].split()[0] for d in found if d.rule == rule]
        assert len(pools) == len(set(pools)), f"{rule}: more than one finding for a pool"
    assert len(found) <= 3 * len(policy.pools) + 1
    a800 = next(
        d for d in found if d.rule == "drift-node-labels" and "pool a800-train " in d.message
    )
    assert a800.message.startswith(
        "16 nodes of pool a800-train lack or contradict its labels: hetgitops.io/card-type, "
    )
    assert " more missing on gpu-a800-[001:016]" in a800.message  # no per-rack value listing
    assert "node gpu-a800-016 lacks hetgitops.io/rack='rack-a04'" in a800.details
    assert len(a800.details) == 16 * len(
        {d.split(" lacks ")[1].split("=")[0] for d in a800.details}
    )
    [taint] = [d for d in found if d.rule == "drift-node-taints" and "a800-train" in d.message]
    assert taint.message == (
        "16 nodes of pool a800-train lack or contradict its taints: the taint "
        "hetgitops.io/pool=a800-train:NoSchedule missing on gpu-a800-[001:016]"
    )
    [short] = [d for d in found if d.rule == "drift-accelerators"]
    assert short.message == (
        "16 nodes of pool a800-train advertise fewer accelerators than the policy counts: "
        "gpu-a800-[001:016]: 112 of 128 nvidia.com/gpu; the live ClusterQueues' quota on "
        "a800-train (128) now exceeds its live capacity (112)"
    )
    assert short.details[0] == "node gpu-a800-001 advertises 7 of 8 nvidia.com/gpu"
    assert len(short.details) == 16


def test_one_node_off_keeps_its_own_sentence_and_no_details() -> None:
    policy, queues = _policy_and_queues()
    nodes = _live_nodes(policy)
    by_name = {n.name: (p, n) for p in policy.pools.values() for n in p.nodes}
    for node in nodes:  # every node as its pool says ...
        pool, entry = by_name[node["metadata"]["name"]]
        node["metadata"]["labels"] = dict(desired_node_labels(policy, pool, entry))
        taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]
        node["spec"] = {"taints": taints}
    victim = next(n for n in nodes if n["metadata"]["name"] == "gpu-a800-005")
    victim["metadata"]["labels"]["hetgitops.io/rack"] = "rack-z"  # ... but one label
    [found] = _check(policy, nodes, queues)
    assert found.message == (
        "node gpu-a800-005 has hetgitops.io/rack='rack-z' instead of "
        "hetgitops.io/rack='rack-a02' of pool a800-train"
    )
    assert found.details == ()


def test_details_are_in_the_json_report_and_in_verbose_text_only() -> None:
    from hetgitops.reporting import json_format, text

    policy, queues = _policy_and_queues()
    nodes = [n for n in _live_nodes(policy) if not n["metadata"]["name"].startswith("gpu-a800-")]
    [absent] = [d for d in _check(policy, nodes, queues) if d.rule == "drift-node-absent"]
    result = api.Result([absent])
    assert json_format.diagnostic_dict(absent)["details"][:2] == [
        "node gpu-a800-001 is not in the cluster",
        "node gpu-a800-002 is not in the cluster",
    ]
    assert "gpu-a800-016 is not in the cluster" not in text.render(result)
    verbose = text.render(result, verbose=True)
    assert "    - node gpu-a800-016 is not in the cluster\n" in verbose
    # Findings without details keep the JSON report's shape.
    assert "details" not in json_format.diagnostic_dict(replace(absent, details=()))


QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
# Kueue's ClusterQueue CRD where it matters here: flavors and resources are maps keyed by name.
CQ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "resourceGroups": {
                    "type": "array",
                    "x-kubernetes-list-type": "atomic",
                    "items": {
                        "type": "object",
                        "properties": {
                            "flavors": {
                                "type": "array",
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "resources": {
                                            "type": "array",
                                            "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["name"],
                                            "items": {
                                                "type": "object",
                                                "properties": {"nominalQuota": QUANTITY},
                                            },
                                        }
                                    },
                                },
                            }
                        },
                    },
                }
            },
        }
    },
}


def test_clusterqueue_field_drift_points_at_the_quota_entry_that_made_it() -> None:
    """Issue 22 item 13: a ClusterQueue quota changed live was reported at the Team document's
    first line; it is reported at the team's quota entry for that pool, even when the live
    flavors are in another order than the render's."""
    import copy

    from hetgitops.drift.objects import compare_object

    result = api.render([BUNDLED])
    assert result.policy is not None
    team = result.policy.teams["data-preprocessing"]  # quotas: ascend-910b, rtx4090-dev
    manifest = next(m for m in result.manifests if m.kind == "ClusterQueue" and m.name == team.name)
    live = copy.deepcopy(dict(manifest.obj))
    flavors = live["spec"]["resourceGroups"][0]["flavors"]
    flavors.reverse()  # the API server keeps a map list in its own order
    rtx = next(f for f in flavors if f["name"].startswith("rtx4090-dev"))
    gpu = next(r for r in rtx["resources"] if r["name"] == "nvidia.com/gpu")
    gpu["nominalQuota"] = "7"
    live["metadata"] = {
        **live["metadata"],
        "managedFields": [
            {
                "manager": "quota-bot",
                "operation": "Update",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:resourceGroups": {}}},
            }
        ],
    }
    [found] = compare_object(manifest, live, CQ_SCHEMA, managers=("argocd-controller",))
    assert found.rule == "drift-changed" and "live '7'" in found.message
    rtx_quota = next(q for q in team.quotas if q.pool == "rtx4090-dev")
    assert found.span == rtx_quota.origin.span != team.origin.span
    assert str(found.span) == "policies/teams/others.yaml:51:7"


def test_usage_above_a_cut_quota_points_at_the_quota_entry() -> None:
    import copy

    result = api.render([BUNDLED])
    assert result.policy is not None
    team = result.policy.teams["data-preprocessing"]
    manifest = next(m for m in result.manifests if m.kind == "ClusterQueue" and m.name == team.name)
    live = copy.deepcopy(dict(manifest.obj))
    rtx = next(
        f for f in live["spec"]["resourceGroups"][0]["flavors"] if f["name"].startswith("rtx4090")
    )
    gpu = next(r for r in rtx["resources"] if r["name"] == "nvidia.com/gpu")
    gpu["nominalQuota"] = "24"  # the live quota before the policy cut it to 16
    usage = [{"name": "nvidia.com/gpu", "total": "20"}]
    live["status"] = {"flavorsUsage": [{"name": rtx["name"], "resources": usage}]}
    [found] = queue_usage.usage(result.manifests, [live])
    assert found.rule == "drift-usage-above-quota"
    rtx_quota = next(q for q in team.quotas if q.pool == "rtx4090-dev")
    assert found.span == rtx_quota.origin.span


def test_without_the_nodes_target_only_the_labels_rendered_objects_select_on_are_promised() -> None:
    """An imported cluster renders no nodes target: nothing hetgitops applies writes the
    taxonomy labels, so nodes whose taxonomy values differ (or lack them) are not drift; the
    labels its flavors select on still are. It reported every pool's taxonomy as drift that no
    sync would ever correct (the busy simulated fleet, right after import)."""
    policy, queues = _policy_and_queues()
    assert policy.fleet is not None
    without = replace(
        policy,
        fleet=replace(policy.fleet, targets=tuple(t for t in policy.fleet.targets if t != "nodes")),
    )
    pool = policy.pools["l40s-infer"]
    node = pool.nodes[0]
    promised = promised_labels(without, pool, node)
    flavor = next(
        m.obj
        for m in api.render([BUNDLED]).manifests
        if m.kind == "ResourceFlavor"
        and m.obj["spec"]["nodeLabels"].get("hetgitops.io/pool") == "l40s-infer"
    )
    assert set(flavor["spec"]["nodeLabels"].items()) <= set(promised.items())
    everything = desired_node_labels(policy, pool, node)
    assert set(promised) < set(everything)  # taxonomy labels such as purpose are not promised
    assert promised_labels(policy, pool, node) == everything
    live = _live_nodes(policy)
    for obj in live:  # nodes that carry only what the flavors select on
        name = obj["metadata"]["name"]
        owner = next(p for p in policy.pools.values() if any(n.name == name for n in p.nodes))
        node_of = next(n for n in owner.nodes if n.name == name)
        obj["metadata"]["labels"] = promised_labels(without, owner, node_of)
    found = fleet.check(without, live, queues, now=NOW, mig_pending_timeout=dt.timedelta(hours=1))
    assert not [d for d in found if d.rule == "drift-node-labels"]
    found = fleet.check(policy, live, queues, now=NOW, mig_pending_timeout=dt.timedelta(hours=1))
    assert [d for d in found if d.rule == "drift-node-labels"]  # with the nodes target they are


@pytest.mark.parametrize(
    "resource",
    ["habana.ai/gaudi", "cambricon.com/mlu", "gpu.intel.com/i915", "gpu.intel.com/xe"],
)
def test_a_node_in_no_pool_with_any_known_accelerator_is_reported(resource: str) -> None:
    """One list of accelerator resources (`model.accelerators`): drift's own missed Gaudi,
    Cambricon (outside a policy with a Cambricon card) and Intel GPUs (issue 30)."""
    policy, queues = _policy_and_queues()
    # Cambricon counts whatever its prefix when a card type names it: drop that card here.
    policy = replace(
        policy,
        card_types={
            k: v for k, v in policy.card_types.items() if v.resource_name != "cambricon.com/mlu"
        },
    )
    stray = {"metadata": {"name": "stray-1"}, "status": {"allocatable": {resource: "8"}}}
    found = _check(policy, [*_live_nodes(policy), stray], queues)
    assert [d.path for d in found if d.rule == "drift-node-unpooled"] == ["Node stray-1"]
