"""Ray on the simulated fleet with the real components (issue 35 item 5): the KubeRay operator
v1.6.2 (tests/harness/simcluster/kuberay.py) and Kueue v0.19.2 with its Ray integrations, on the
bundled fleet. Hand-written RayCluster and RayJob objects
(tests/harness/simcluster/raymanifests.py): Kueue makes a Workload with a `head` pod set, one per
worker group (`replicas x numOfHosts`) and, for a RayJob in K8sJobMode, a `submitter`; admits each
pod set on its own flavor; the operator creates the Pods (and the submitter Job) and kube-scheduler
binds them on the kwok nodes of the pools the flavors select. What kwok cannot show (no Ray process
runs): see the harness' docstring."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.simcluster import cluster, gitops, kuberay
from harness.simcluster.raymanifests import LABEL, Group, ray_cluster, ray_job

from hetgitops.compilers.kueue_queues import local_queue_name
from hetgitops.model.policy import Policy
from hetgitops.plan.flavors import flavor_name, toleration
from hetgitops.plan.node_labels import domain
from hetgitops.plan.quota_plan import team_plan

from .conftest import unavailable

pytestmark = pytest.mark.sim

TEAM = "finetune-vision"  # quota on a800-train (tainted; its first flavor) and l40s-infer
HEAD = Group("head", {"cpu": "2", "memory": "8Gi"})  # CPU-only, no selector, no tolerations
KINDS = "rayclusters.ray.io,rayjobs.ray.io,rayservices.ray.io"
# Operator, Kueue and kube-scheduler on a loaded 2-core machine: seconds each; generous bounds.
ADMIT_TIMEOUT = 120
PODS_TIMEOUT = 180


@pytest.fixture(scope="module")
def operator(sim: cluster.SimCluster, synced: Path) -> Iterator[kuberay.Started]:
    problems = kuberay.missing_prerequisites()
    if problems:
        unavailable("; ".join(problems))
    started = kuberay.start(sim)
    yield started
    _clear(sim)


def _clear(sim: cluster.SimCluster) -> None:
    """Delete every object this module made and wait until their Pods and Workloads are gone."""
    sim.kubectl("delete", KINDS, "-A", "-l", f"{LABEL}=true", "--wait=false")

    def left() -> tuple[bool, list[str]]:
        names = kuberay.get(sim, KINDS, "-A", "-l", f"{LABEL}=true")["items"]
        pods = kuberay.get(sim, "pods", "-A", "-l", kuberay.CLUSTER_LABEL)["items"]
        found = [f"{o['kind']}/{o['metadata']['name']}" for o in names]
        found += [f"pod/{p['metadata']['name']}" for p in pods]
        return not found, found

    kuberay.wait_seen(left, timeout=PODS_TIMEOUT, what="Ray objects and their pods to go")


@pytest.fixture
def ray_objects(sim: cluster.SimCluster, operator: kuberay.Started) -> Iterator[None]:
    yield
    _clear(sim)


def _pool_group(policy: Policy, pool_name: str, name: str, requests: dict[str, str]) -> Group:
    pool = policy.pools[pool_name]
    return Group(
        name,
        requests,
        node_selector={f"{domain(policy)}/card-type": pool.card_type},
        tolerations=[toleration(t) for t in pool.taints],
    )


def _flavor(policy: Policy, pool: str) -> str:
    assert policy.fleet is not None
    return flavor_name(policy, policy.fleet, policy.pools[pool])


def _queue(policy: Policy) -> tuple[str, str]:
    team = policy.teams[TEAM]
    assert policy.fleet is not None
    return team.namespaces[0], local_queue_name(policy.fleet, team)


def _admitted(sim: cluster.SimCluster, kind: str, namespace: str, name: str) -> dict[str, Any]:
    def look() -> tuple[bool, Any]:
        workload = kuberay.workload_of(sim, kind, namespace, name)
        if workload is None:
            return False, "no Workload yet"
        flavors = kuberay.admitted_flavors(workload)
        seen = {"podSets": kuberay.pod_sets(workload), "flavors": flavors}
        seen["pending"] = kuberay.pending_message(workload)
        return flavors is not None, seen

    kuberay.wait_seen(look, timeout=ADMIT_TIMEOUT, what=f"Kueue to admit {kind} {name}")
    workload = kuberay.workload_of(sim, kind, namespace, name)
    assert workload is not None
    return workload


def _bound(
    sim: cluster.SimCluster, namespace: str, cluster_name: str, counts: dict[str, int]
) -> dict[str, list[str]]:
    """Wait until the operator's Pods of `cluster_name` are Running, `counts` per group."""

    def look() -> tuple[bool, Any]:
        seen = kuberay.placement(kuberay.ray_pods(sim, namespace, cluster_name))
        done = {g: len(n) for g, n in seen.items()} == counts and all(
            all(nodes) for nodes in seen.values()
        )
        return done, seen

    placed: dict[str, list[str]] = kuberay.wait_seen(
        look, timeout=PODS_TIMEOUT, what=f"pods of RayCluster {cluster_name} Running"
    )
    return placed


def _node_cards(sim: cluster.SimCluster, policy: Policy) -> dict[str, str]:
    """Node -> the card-type label nfd-master gave it."""
    key = f"{domain(policy)}/card-type"
    nodes = kuberay.get(sim, "nodes")["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"].get(key, "") for n in nodes}


def _pool_of(policy: Policy) -> dict[str, str]:
    return {node.name: pool.name for pool in policy.pools.values() for node in pool.nodes}


def test_operator_runs_and_kueue_runs_its_ray_controllers(
    sim: cluster.SimCluster, operator: kuberay.Started
) -> None:
    assert kuberay.running(sim)
    assert kuberay.deferred_frameworks(sim) == []
    cost = kuberay.usage(sim)
    print(f"ray-operator start {operator.seconds}; {cost}")
    # The operator idles: a controller-runtime manager with three informers' caches.
    assert cost.rss_mib < 512, cost


def test_raycluster_admitted_and_its_pods_bound_on_the_flavors_pool(
    sim: cluster.SimCluster, fleet_policy: Policy, ray_objects: None
) -> None:
    namespace, queue = _queue(fleet_policy)
    workers = _pool_group(
        fleet_policy, "a800-train", "a800", {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "8"}
    )
    workers = Group(**{**workers.__dict__, "replicas": 2})
    obj = ray_cluster("sim-ray-a800", namespace, queue, HEAD, [workers])
    gitops.apply_objects(sim, [obj], manager="hetgitops-sim-user")
    workload = _admitted(sim, "RayCluster", namespace, "sim-ray-a800")
    assert kuberay.pod_sets(workload) == [("head", 1), ("a800", 2)]
    first = team_plan(fleet_policy, fleet_policy.teams[TEAM])[0].pool.name
    # The CPU-only head takes the first flavor of the team's order that has room: a800-train,
    # a tainted GPU pool; Kueue adds that flavor's tolerations to the head's pod template.
    assert kuberay.admitted_flavors(workload) == {
        "head": _flavor(fleet_policy, first),
        "a800": _flavor(fleet_policy, "a800-train"),
    }
    placed = _bound(sim, namespace, "sim-ray-a800", {"headgroup": 1, "a800": 2})
    pools = _pool_of(fleet_policy)
    assert {g: sorted({pools.get(n, n) for n in nodes}) for g, nodes in placed.items()} == {
        "a800": ["a800-train"],
        "headgroup": [first],
    }, placed


def test_heterogeneous_raycluster_lands_its_worker_groups_on_two_card_types(
    sim: cluster.SimCluster, fleet_policy: Policy, ray_objects: None
) -> None:
    namespace, queue = _queue(fleet_policy)
    train = _pool_group(
        fleet_policy, "a800-train", "train", {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "8"}
    )
    rollout = _pool_group(
        fleet_policy, "l40s-infer", "rollout", {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"}
    )
    rollout = Group(**{**rollout.__dict__, "replicas": 2})
    obj = ray_cluster("sim-ray-hetero", namespace, queue, HEAD, [train, rollout])
    gitops.apply_objects(sim, [obj], manager="hetgitops-sim-user")
    workload = _admitted(sim, "RayCluster", namespace, "sim-ray-hetero")
    assert kuberay.pod_sets(workload) == [("head", 1), ("train", 1), ("rollout", 2)]
    flavors = kuberay.admitted_flavors(workload)
    assert flavors is not None
    assert (flavors["train"], flavors["rollout"]) == (
        _flavor(fleet_policy, "a800-train"),
        _flavor(fleet_policy, "l40s-infer"),
    )
    placed = _bound(sim, namespace, "sim-ray-hetero", {"headgroup": 1, "train": 1, "rollout": 2})
    cards = _node_cards(sim, fleet_policy)
    assert {g: sorted({cards[n] for n in placed[g]}) for g in ("train", "rollout")} == {
        "train": ["a800-80gb"],
        "rollout": ["l40s-48gb"],
    }, placed


def test_rayjob_has_a_submitter_pod_set_and_its_submitter_pod_runs(
    sim: cluster.SimCluster, fleet_policy: Policy, ray_objects: None
) -> None:
    namespace, queue = _queue(fleet_policy)
    worker = _pool_group(
        fleet_policy, "l40s-infer", "rollout", {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"}
    )
    obj = ray_job("sim-rayjob", namespace, queue, HEAD, [worker])
    gitops.apply_objects(sim, [obj], manager="hetgitops-sim-user")
    workload = _admitted(sim, "RayJob", namespace, "sim-rayjob")
    # KubeRay's default submitter (no submitterPodTemplate) is counted: 500m cpu, 200Mi.
    assert kuberay.pod_sets(workload) == [("head", 1), ("rollout", 1), ("submitter", 1)]
    requests = workload["spec"]["podSets"][2]["template"]["spec"]["containers"][0]["resources"]
    assert requests["requests"] == {"cpu": "500m", "memory": "200Mi"}
    first = team_plan(fleet_policy, fleet_policy.teams[TEAM])[0].pool.name
    assert kuberay.admitted_flavors(workload) == {
        "head": _flavor(fleet_policy, first),
        "rollout": _flavor(fleet_policy, "l40s-infer"),
        "submitter": _flavor(fleet_policy, first),
    }

    def cluster_name() -> tuple[bool, Any]:
        status = kuberay.get(sim, "rayjob", "-n", namespace, "sim-rayjob").get("status", {})
        return bool(status.get("rayClusterName")), status

    status = kuberay.wait_seen(cluster_name, timeout=ADMIT_TIMEOUT, what="the RayJob's cluster")
    placed = _bound(sim, namespace, status["rayClusterName"], {"headgroup": 1, "rollout": 1})
    pools = _pool_of(fleet_policy)
    assert [pools[n] for n in placed["rollout"]] == ["l40s-infer"], placed
    # Once its RayCluster is ready the operator creates the submitter Job (K8sJobMode); the
    # Job controller makes its Pod, which carries the submitter flavor's selector.

    def submitter() -> tuple[bool, Any]:
        pods = kuberay.get(sim, "pods", "-n", namespace, "-l", "job-name=sim-rayjob")["items"]
        seen = kuberay.placement(pods)
        nodes = [n for found in seen.values() for n in found]
        job = kuberay.get(sim, "rayjob", "-n", namespace, "sim-rayjob").get("status", {})
        return len(nodes) == 1 and all(nodes), {"pods": seen, "rayjob": job}

    seen = kuberay.wait_seen(submitter, timeout=PODS_TIMEOUT, what="the submitter pod Running")
    (node,) = [n for found in seen["pods"].values() for n in found]
    assert pools[node] == first, seen
