"""The sim harness's DRA pieces without a cluster (harness/simcluster/dra.py, fleet.py): a DRA
pool's nodes advertise no DRA device in their allocatable (a kubelet never does) and publish
ResourceSlices instead; a pool still migrating keeps what the device plugin advertises."""

from __future__ import annotations

import dataclasses

from harness.simcluster import dra, fleet, policyfleet

from hetgitops.plan import dra as dra_plan
from hetgitops.plan import dra_devices

from .conftest import NOW, REPO

VARIANT = REPO / "tests" / "cases" / "render" / "dra" / "policy"


def test_dra_nodes_advertise_no_dra_resource_and_migrating_ones_keep_the_plugins() -> None:
    policy = policyfleet.load(VARIANT, now=NOW)
    claims = policy.pools["l40s-infer"]
    migrating = policy.pools["h100-infer"]
    assert (claims.allocation, claims.migrating_from) == (dra_plan.CLAIMS, None)
    assert migrating.migrating_from == dra_plan.DEVICE_PLUGIN
    nodes, _ = fleet.fleet_objects(policy)
    allocatable = {n["metadata"]["name"]: n["status"]["allocatable"] for n in nodes}
    for node in [*claims.nodes, *migrating.nodes]:
        assert not [k for k in allocatable[node.name] if k.startswith(dra_plan.DOMAIN)], node
    assert not [k for k in allocatable[claims.nodes[0].name] if k.startswith("nvidia.com/")]
    # The device plugin still runs on the migrating pool: whole GPUs and MIG devices (mixed).
    assert {k: v for k, v in allocatable[migrating.nodes[0].name].items() if "nvidia.com" in k} == {
        "nvidia.com/gpu": "4",
        "nvidia.com/mig-1g.10gb": "14",
        "nvidia.com/mig-3g.40gb": "4",
    }
    done = dataclasses.replace(migrating, migrating_from=None)
    assert dra.plugin_view(done) is None
    assert dra.plugin_view(migrating) is not None


def test_every_dra_node_publishes_one_slice_its_classes_select() -> None:
    policy = policyfleet.load(VARIANT, now=NOW)
    published = {s["spec"]["nodeName"]: s for s in dra.slices(policy)}
    classes = dra_plan.device_classes(policy)
    for pool in policy.pools.values():
        names = {n.name for n in pool.nodes}
        if not dra_plan.on_dra(pool):
            assert not names & set(published), pool.name
            continue
        for node in pool.nodes:
            devices = published[node.name]["spec"]["devices"]
            for fact in classes:
                selected = [
                    d for d in devices if not dra_devices.unselected(fact.card, fact.profile, d)
                ]
                want = dra_devices.published(pool, node.cards).get(fact.profile, 0)
                assert len(selected) == (want if pool in fact.pools else 0), (node.name, fact.name)


def test_the_driver_class_carries_the_extended_resource_name() -> None:
    assert dra.DRIVER_CLASS["metadata"]["name"] == dra_plan.DRIVER
    assert dra.DRIVER_CLASS["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    assert dra_plan.DRIVER_EXTENDED_CLASSES["nvidia.com/gpu"] == dra_plan.DRIVER
