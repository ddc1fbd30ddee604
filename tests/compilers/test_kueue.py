"""The `kueue` target: flavors, queues, cohorts, priority classes and the topology."""

from __future__ import annotations

from typing import Any

import pytest
from small_policy import FLEET, build, objects

from hetgitops.compilers import compile_policy
from hetgitops.output.manifests import Manifest, stream

Objects = dict[tuple[str, str], dict[str, Any]]


def _kueue(kueue: str = "0.19.2", **kwargs: str) -> list[Manifest]:
    return compile_policy(build(kueue=kueue, **kwargs), ("kueue",))


@pytest.fixture(scope="module")
def found() -> Objects:
    return objects(_kueue())


def _pool(flavor: str) -> str:
    """The pool of a flavor name: `<pool>-<8 hex digest>` when the flavor has a topology."""
    stem, _, digest = flavor.rpartition("-")
    return stem if len(digest) == 8 and all(c in "0123456789abcdef" for c in digest) else flavor


def _named(found: Objects, kind: str, stem: str) -> dict[str, Any]:
    """The one `kind` object named `stem` or `stem-<digest>`."""
    hits = [obj for (k, name), obj in found.items() if k == kind and _pool(name) == stem]
    assert len(hits) == 1, (kind, stem)
    return hits[0]


def _flavors(cq: dict[str, Any]) -> list[dict[str, Any]]:
    """The CQ's flavors, named by their pool."""
    groups = cq["spec"]["resourceGroups"]
    assert len(groups) == 1
    return [{**f, "name": _pool(f["name"])} for f in groups[0]["flavors"]]


def _resource(cq: dict[str, Any], flavor: str, name: str) -> dict[str, Any]:
    entry = next(f for f in _flavors(cq) if f["name"] == flavor)
    return next(r for r in entry["resources"] if r["name"] == name)


def test_v1beta2_field_names(found: Objects) -> None:
    cq = found["ClusterQueue", "alpha"]
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq["spec"]["cohortName"] == "child"
    assert "cohort" not in cq["spec"]
    assert cq["spec"]["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }
    assert found["Cohort", "child"]["spec"] == {"parentName": "root"}


def test_v1beta1_before_kueue_0_15() -> None:
    found = objects(_kueue("0.14.3"))
    assert {obj["apiVersion"] for obj in found.values()} == {"kueue.x-k8s.io/v1beta1"}
    spec = found["ClusterQueue", "alpha"]["spec"]
    assert spec["cohort"] == "child"
    assert "cohortName" not in spec
    # Kueue < 0.15 spells MayStopSearch as Borrow / Preempt
    assert spec["flavorFungibility"]["whenCanBorrow"] == "Borrow"
    assert found["Cohort", "child"]["spec"] == {"parentName": "root"}


def test_mig_mixed_resources_are_covered(found: Objects) -> None:
    covered = found["ClusterQueue", "alpha"]["spec"]["resourceGroups"][0]["coveredResources"]
    assert covered == [
        "cpu",
        "memory",
        "huawei.com/Ascend910",
        "nvidia.com/gpu",
        "nvidia.com/mig-1g.10gb",
    ]
    assert (
        _resource(found["ClusterQueue", "alpha"], "h100-pool", "nvidia.com/mig-1g.10gb")[
            "nominalQuota"
        ]
        == "7"
    )
    # gamma claims no MIG quota, but lists the pool's MIG resource (at 0) so it may borrow it
    gamma = found["ClusterQueue", "gamma"]
    assert _resource(gamma, "h100-pool", "nvidia.com/mig-1g.10gb")["nominalQuota"] == "0"


def test_flavor_order_is_quota_order(found: Objects) -> None:
    names = [f["name"] for f in _flavors(found["ClusterQueue", "alpha"])]
    assert names == ["l40s-pool", "h100-pool", "ascend-pool"]


def test_every_flavor_lists_the_covered_resources_in_order(found: Objects) -> None:
    for (kind, _), obj in found.items():
        if kind != "ClusterQueue":
            continue
        group = obj["spec"]["resourceGroups"][0]
        for flavor in group["flavors"]:
            assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]


def test_isolated_pool_neither_borrows_nor_lends(found: Objects) -> None:
    flavor = next(f for f in _flavors(found["ClusterQueue", "alpha"]) if f["name"] == "ascend-pool")
    for resource in flavor["resources"]:
        assert (resource["borrowingLimit"], resource["lendingLimit"]) == ("0", "0"), resource


def test_limits_only_with_a_cohort(found: Objects) -> None:
    for flavor in _flavors(found["ClusterQueue", "beta"]):
        for resource in flavor["resources"]:
            assert set(resource) == {"name", "nominalQuota"}
    assert "cohortName" not in found["ClusterQueue", "beta"]["spec"]


def test_team_and_pool_lending_limits(found: Objects) -> None:
    alpha = found["ClusterQueue", "alpha"]
    gpu = _resource(alpha, "l40s-pool", "nvidia.com/gpu")
    assert (gpu["nominalQuota"], gpu["borrowingLimit"], gpu["lendingLimit"]) == ("8", "4", "2")
    # cpu and memory follow the card limits: 4 x 12 cpu, 2 x 96Gi
    assert _resource(alpha, "l40s-pool", "cpu")["borrowingLimit"] == "48"
    assert _resource(alpha, "l40s-pool", "memory")["lendingLimit"] == "192Gi"
    # the h100 pool lends at most 50%: floor(4 * 0.5), floor(7 * 0.5); borrowing unbounded
    assert _resource(alpha, "h100-pool", "nvidia.com/gpu")["lendingLimit"] == "2"
    mig = _resource(alpha, "h100-pool", "nvidia.com/mig-1g.10gb")
    assert mig["lendingLimit"] == "3"
    assert "borrowingLimit" not in mig
    # cpu/memory lend card-equivalents: 2 cards + 3 x 1/7 = 17/7; x 12 = 29.14 -> 30 cpu,
    # x 96Gi = 233.14Gi -> 234Gi (rounded up); borrowing unbounded like the MIG resource
    assert _resource(alpha, "h100-pool", "cpu")["lendingLimit"] == "30"
    assert _resource(alpha, "h100-pool", "memory")["lendingLimit"] == "234Gi"
    assert "borrowingLimit" not in _resource(alpha, "h100-pool", "cpu")


def test_mig_instances_count_as_their_share_of_a_card(found: Objects) -> None:
    # alpha in h100-pool: 4 cards + 7 x 1g.10gb (1/7 of a GPU each) = 5 cards, not 11:
    # 5 x 12 cpu = 60, 5 x 96Gi = 480Gi
    alpha = found["ClusterQueue", "alpha"]
    assert _resource(alpha, "h100-pool", "cpu")["nominalQuota"] == "60"
    assert _resource(alpha, "h100-pool", "memory")["nominalQuota"] == "480Gi"


def test_canonical_quantities(found: Objects) -> None:
    # beta: 8 cards x 500m cpu and x 1024Mi memory
    beta = found["ClusterQueue", "beta"]
    assert _resource(beta, "l40s-pool", "cpu")["nominalQuota"] == "4"
    assert _resource(beta, "l40s-pool", "memory")["nominalQuota"] == "8Gi"
    alpha = found["ClusterQueue", "alpha"]
    assert _resource(alpha, "l40s-pool", "cpu")["nominalQuota"] == "96"
    assert _resource(alpha, "ascend-pool", "memory")["borrowingLimit"] == "0"


def test_every_quantity_is_a_string(found: Objects) -> None:
    # The API server serialises quantities as strings; an int would read back as drift.
    for (kind, _), obj in found.items():
        if kind != "ClusterQueue":
            continue
        for flavor in _flavors(obj):
            for resource in flavor["resources"]:
                values = [v for k, v in resource.items() if k != "name"]
                assert all(isinstance(v, str) for v in values), resource


def test_namespace_selector_and_defaults_written(found: Objects) -> None:
    spec = found["ClusterQueue", "beta"]["spec"]
    assert spec["namespaceSelector"] == {"matchLabels": {"example.io/team": "beta"}}
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["stopPolicy"] == "None"
    assert spec["preemption"] == {
        "borrowWithinCohort": {"policy": "Never"},
        "reclaimWithinCohort": "Never",
        "withinClusterQueue": "Never",
    }
    assert set(spec["flavorFungibility"]) == {"whenCanBorrow", "whenCanPreempt"}


def test_preemption_team_first_then_reclaim_for_lending_pools(found: Objects) -> None:
    preemption = found["ClusterQueue", "alpha"]["spec"]["preemption"]
    assert preemption["withinClusterQueue"] == "LowerPriority"
    # alpha holds quota in a pool that lends with reclaim: it may take it back
    assert preemption["reclaimWithinCohort"] == "Any"


def test_resource_flavor_per_pool(found: Objects) -> None:
    spec = _named(found, "ResourceFlavor", "l40s-pool")["spec"]
    assert spec["nodeLabels"]["example.io/pool"] == "l40s-pool"
    assert len(spec["nodeLabels"]) <= 8
    assert spec["tolerations"] == [
        {
            "key": "example.io/pool",
            "operator": "Equal",
            "value": "l40s-pool",
            "effect": "NoSchedule",
        }
    ]
    assert spec["topologyName"] == _named(found, "Topology", "topo")["metadata"]["name"]
    ascend = _named(found, "ResourceFlavor", "ascend-pool")["spec"]
    assert ascend["tolerations"] == [
        {"key": "example.io/dedicated", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert "tolerations" not in _named(found, "ResourceFlavor", "h100-pool")["spec"]


def test_no_topology_without_fleet_topology() -> None:
    fleet = FLEET.replace("  topology: {name: topo, levels: [hostname, zone, rack]}\n", "")
    found = objects(_kueue(fleet=fleet))
    assert not [key for key in found if key[0] == "Topology"]
    assert "topologyName" not in _named(found, "ResourceFlavor", "l40s-pool")["spec"]


def test_topology_levels_broadest_first_hostname_last(found: Objects) -> None:
    levels = [level["nodeLabel"] for level in _named(found, "Topology", "topo")["spec"]["levels"]]
    assert levels == ["topology.kubernetes.io/zone", "example.io/rack", "kubernetes.io/hostname"]


def test_cohort_tree_parents_first() -> None:
    manifests = [m for m in _kueue() if m.kind == "Cohort"]
    depth = {m.name: m.depth for m in manifests}
    assert depth == {"root": 0, "child": 1}
    assert stream(manifests).index("name: root") < stream(manifests).index("name: child")


def test_cohort_sync_wave_is_its_depth(found: Objects) -> None:
    wave = "argocd.argoproj.io/sync-wave"
    assert found["Cohort", "root"]["metadata"]["annotations"] == {wave: "0"}
    assert found["Cohort", "child"]["metadata"]["annotations"] == {wave: "1"}
    assert "annotations" not in found["ClusterQueue", "alpha"]["metadata"]


def test_local_queue_per_team_namespace(found: Objects) -> None:
    lq = found["LocalQueue", "alpha-dev/alpha"]
    assert lq["spec"] == {"clusterQueue": "alpha", "stopPolicy": "None"}
    named = FLEET.replace("  defaults:", "  kueue: {localQueueName: default}\n  defaults:")
    assert ("LocalQueue", "alpha-dev/default") in objects(_kueue(fleet=named))


def test_workload_priority_class_has_no_spec(found: Objects) -> None:
    wpc = found["WorkloadPriorityClass", "dev"]
    assert list(wpc) == ["apiVersion", "kind", "metadata", "value", "description"]
    assert (wpc["value"], wpc["description"]) == (100, "Experiments.")


def test_every_object_is_labelled_and_keys_are_ordered(found: Objects) -> None:
    for obj in found.values():
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "hetgitops"
        assert labels["example.io/fleet"] == "test-cluster"
        assert list(obj)[:3] == ["apiVersion", "kind", "metadata"]


def test_origins_point_at_the_policy() -> None:
    manifests = _kueue()
    policy = build()
    cq = next(m for m in manifests if m.kind == "ClusterQueue" and m.name == "alpha")
    assert cq.origin == policy.teams["alpha"].origin.span
    rf = next(m for m in manifests if m.kind == "ResourceFlavor" and _pool(m.name) == "l40s-pool")
    assert rf.origin == policy.pools["l40s-pool"].origin.span


def test_deterministic() -> None:
    assert stream(_kueue()) == stream(_kueue())


def test_flavor_identity_follows_its_immutable_fields() -> None:
    """Kueue 0.19 refuses to change a topology-bound flavor's nodeLabels / tolerations (and a
    Topology's levels): such a change must yield a new object that the ClusterQueues follow."""
    from hetgitops.plan.flavors import immutable_flavor_fields

    before = objects(_kueue())
    relevelled = FLEET.replace("levels: [hostname, zone, rack]", "levels: [zone, hostname]")
    after = objects(_kueue(fleet=relevelled))
    old_rf = {name for kind, name in before if kind == "ResourceFlavor"}
    new_rf = {name for kind, name in after if kind == "ResourceFlavor"}
    assert not old_rf & new_rf  # the topology name is part of every flavor's identity
    for cq in (o for (kind, _), o in after.items() if kind == "ClusterQueue"):
        names = {f["name"] for g in cq["spec"].get("resourceGroups", []) for f in g["flavors"]}
        assert names <= new_rf
    assert immutable_flavor_fields({"topologyName": "t"}) == (
        "nodeLabels",
        "tolerations",
        "topologyName",
    )
    assert immutable_flavor_fields({"nodeLabels": {"a": "b"}}) == ()
    # Without a topology nothing is immutable and the flavor keeps the pool's name.
    flat = FLEET.replace("  topology: {name: topo, levels: [hostname, zone, rack]}\n", "")
    assert ("ResourceFlavor", "l40s-pool") in objects(_kueue(fleet=flat))


def test_the_queue_reader_reads_what_the_compiler_writes(found: Objects) -> None:
    """`queue_quotas` / `queue_flavors` give back every resources[] entry the writer wrote,
    with its flavor and the place `cluster_queue_parts` points at."""
    from hetgitops.compilers.kueue_queues import covered_resources, queue_flavors, queue_quotas

    queues = [obj for (kind, _), obj in found.items() if kind == "ClusterQueue"]
    assert queues
    for cq in queues:
        written = [
            (flavor["name"], r["name"], r["nominalQuota"], r.get("borrowingLimit"),
             r.get("lendingLimit"))
            for group in cq["spec"].get("resourceGroups", [])
            for flavor in group["flavors"]
            for r in flavor["resources"]
        ]  # fmt: skip
        read = [
            (q.flavor, q.resource, q.nominal, q.borrowing_limit, q.lending_limit)
            for q in queue_quotas(cq["spec"])
        ]
        assert read == written
        for flavor in queue_flavors(cq["spec"]):
            assert flavor.path == ("spec", "resourceGroups", 0, "flavors", flavor.index)
        assert covered_resources(cq["spec"]) == set(
            cq["spec"].get("resourceGroups", [{}])[0].get("coveredResources", [])
        )


def test_the_queue_reader_skips_what_is_not_quota() -> None:
    from hetgitops.compilers.kueue_queues import queue_flavors, queue_quotas

    spec: dict[str, Any] = {"resourceGroups": ["x", {"flavors": [None, {"name": "a"}]}]}
    assert [(f.name, f.group, f.index) for f in queue_flavors(spec)] == [("a", 1, 1)]
    assert list(queue_quotas(None)) == []
    assert list(queue_quotas({"resourceGroups": None})) == []
