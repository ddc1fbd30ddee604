"""The real Koordinator v1.8.0 (tests/harness/simcluster/koordinator.py) on the simulated cluster: a
hand-written ElasticQuotaProfile and quota tree, the rules its webhook enforces, and
koord-scheduler's verdicts on kwok nodes.

These are the ground truth for hetgitops' Koordinator target and its validation. Each refusal
is matched on koord-manager's own message; the upstream line that writes it is named beside
it (github.com/koordinator-sh/koordinator@v1.8.0, pkg/webhook/elasticquota/...).

The tree: a profile over two kwok nodes of 8 GPUs (16 cards, resourceRatio 0.9), whose root
quota the quota-profile controller creates; a parent quota `org` under it and two leaves,
`team-a` (min 8, max 12 GPUs) and `team-b` (min 6, max 14). One more GPU node outside the
profile's selector shows the pool pinning.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from harness.simcluster import cluster, koordinator

pytestmark = pytest.mark.sim

Obj = dict[str, Any]
NS = koordinator.NAMESPACE
GPU = "nvidia.com/gpu"
POOL_LABEL = "hetgitops.test/koord-pool"
POOL = "koord-sim-a100"
PROFILE = POOL
ROOT = f"{POOL}-root"
ORG = "koord-sim-org"
TEAM_A = "koord-sim-team-a"
TEAM_B = "koord-sim-team-b"
TEAM_NS = "koord-sim-a"
MANAGER = "hetgitops-sim-koordinator"
KEYS = ("cpu", "memory", GPU)
LABEL = "quota.scheduling.koordinator.sh"
# Quota-manager events reach the webhook's and the scheduler's informers after the write.
SETTLE = 30.0


def tree_id(namespace: str, name: str) -> str:
    """FNV-1a 64 of `namespace/name`, in decimal: the tree id the quota-profile controller
    gives a profile without one (pkg/quota-controller/profile/profile_controller.go:97-100,
    hash at :267-271)."""
    value = 0xCBF29CE484222325
    for byte in f"{namespace}/{name}".encode():
        value ^= byte
        value = (value * 0x100000001B3) % 2**64
    return str(value)


TREE = tree_id(NS, PROFILE)


def _node(name: str, pool: str) -> Obj:
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "110", GPU: "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                POOL_LABEL: pool,
            },
        },
        "status": {"capacity": capacity, "allocatable": capacity},
    }


NODES = [_node("koord-sim-a100-0", POOL), _node("koord-sim-a100-1", POOL)]
OUTSIDE = _node("koord-sim-other-0", "koord-sim-other")


def _profile(*, root_is_parent: bool = True) -> Obj:
    # The controller copies quotaLabels onto the root quota (profile_controller.go:184-188);
    # without is-parent there, no quota can hang under the root (quota_topology_check.go:197).
    labels = {f"{LABEL}/is-parent": "true"} if root_is_parent else {}
    return {
        "apiVersion": "quota.koordinator.sh/v1alpha1",
        "kind": "ElasticQuotaProfile",
        "metadata": {
            "name": PROFILE,
            "namespace": NS,
            "annotations": {f"{LABEL}/resource-keys": json.dumps(list(KEYS))},
        },
        "spec": {
            "quotaName": ROOT,
            "resourceRatio": "0.9",
            "nodeSelector": {"matchLabels": {POOL_LABEL: POOL}},
            "quotaLabels": labels,
        },
    }


def _quota(
    name: str,
    parent: str,
    *,
    gpu_min: int,
    gpu_max: int,
    is_parent: bool = False,
    keys: tuple[str, ...] = KEYS,
    namespaces: tuple[str, ...] = (),
) -> Obj:
    big = {"cpu": "1000", "memory": "4000Gi", GPU: str(gpu_max)}
    low = {"cpu": "0", "memory": "0", GPU: str(gpu_min)}
    annotations = {f"{LABEL}/namespaces": json.dumps(list(namespaces))} if namespaces else {}
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {
                f"{LABEL}/parent": parent,
                f"{LABEL}/is-parent": "true" if is_parent else "false",
                f"{LABEL}/tree-id": TREE,
            },
            "annotations": annotations,
        },
        "spec": {
            "max": {k: big[k] for k in keys},
            "min": {k: low[k] for k in keys if k in low},
        },
    }


ORG_QUOTA = _quota(ORG, ROOT, gpu_min=14, gpu_max=16, is_parent=True)
TEAM_A_QUOTA = _quota(TEAM_A, ORG, gpu_min=8, gpu_max=12, namespaces=(TEAM_NS,))
TEAM_B_QUOTA = _quota(TEAM_B, ORG, gpu_min=6, gpu_max=14)


def _send(sim: cluster.SimCluster, verb: str, obj: Obj) -> Any:
    """kubectl `verb` (create, replace, apply --server-side) of `obj`, whatever the outcome."""
    extra = ["--server-side", f"--field-manager={MANAGER}"] if verb == "apply" else []
    return sim.kubectl(verb, *extra, "-f", "-", input=json.dumps(obj), check=False)


def _get(sim: cluster.SimCluster, *args: str) -> Obj | None:
    result = sim.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def _wait(condition: Any, *, what: str, seen: Any, timeout: float = 60) -> None:
    """Poll `condition` until true; on timeout fail with what `seen()` shows."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; seen: {seen()}")


def _refused(sim: cluster.SimCluster, verb: str, obj: Obj, message: str) -> None:
    result = _send(sim, verb, obj)
    assert result.returncode != 0, f"{verb} of {obj['metadata']['name']} was accepted"
    assert "velasticquota.koordinator.sh" in result.stderr, result.stderr
    assert message in result.stderr, result.stderr


def _pod(name: str, quota: str, gpus: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": TEAM_NS, "labels": {f"{LABEL}/name": quota}},
        "spec": {
            "schedulerName": koordinator.SCHEDULER_NAME,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"limits": {GPU: str(gpus)}, "requests": {"cpu": "1"}},
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def koord(sim: cluster.SimCluster) -> Iterator[cluster.SimCluster]:
    """Koordinator started for this module and stopped after it: its pod webhooks fail
    closed, so no other module runs beside it."""
    problems = koordinator.missing_prerequisites()
    if problems:
        pytest.skip("; ".join(problems))
    koordinator.start(sim)
    yield sim
    koordinator.stop(sim)
    _clean(sim)


def _clean(sim: cluster.SimCluster) -> None:
    sim.kubectl("delete", "namespace", TEAM_NS, "--ignore-not-found", "--wait=true")
    for name in (TEAM_A, TEAM_B, ORG, ROOT):
        sim.kubectl("delete", "elasticquota", "-n", NS, name, "--ignore-not-found")
    sim.kubectl("delete", "elasticquotaprofile", "-n", NS, PROFILE, "--ignore-not-found")
    names = [n["metadata"]["name"] for n in (*NODES, OUTSIDE)]
    sim.kubectl("delete", "node", *names, "--ignore-not-found")


@dataclass(frozen=True)
class Tree:
    sim: cluster.SimCluster
    # What the webhook said to the parent quota while the profile had no quotaLabels.
    under_plain_root: str


@pytest.fixture(scope="module")
def tree(koord: cluster.SimCluster) -> Tree:
    """The nodes, the profile (its root quota written by the controller) and the tree. The
    profile is first applied without quotaLabels, as the issue's render would emit it."""
    sim = koord
    cluster.apply_objects(sim, [*NODES, OUTSIDE], manager=cluster.KUBELET_MANAGER)
    cluster.apply_objects(
        sim,
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TEAM_NS}}],
        manager=MANAGER,
    )
    assert _send(sim, "apply", _profile(root_is_parent=False)).returncode == 0

    def root() -> Obj:
        return _get(sim, "elasticquota", "-n", NS, ROOT) or {}

    def root_counts_nodes() -> bool:
        return bool(root().get("spec", {}).get("min", {}).get(GPU) == "14")

    _wait(root_counts_nodes, what=f"root quota {ROOT} over 16 cards", seen=root)
    plain = _send(sim, "apply", ORG_QUOTA)
    assert _send(sim, "apply", _profile()).returncode == 0
    _wait(
        lambda: root().get("metadata", {}).get("labels", {}).get(f"{LABEL}/is-parent") == "true",
        what=f"root quota {ROOT} labelled is-parent from the profile's quotaLabels",
        seen=lambda: root().get("metadata"),
    )
    for quota in (ORG_QUOTA, TEAM_A_QUOTA, TEAM_B_QUOTA):
        result = _send_settled(sim, quota)
        assert result.returncode == 0, result.stderr
    return Tree(sim, plain.stderr if plain.returncode else "")


def _send_settled(sim: cluster.SimCluster, quota: Obj) -> Any:
    """Apply `quota` once the webhook's quota informer has seen its parent as a parent: the
    webhook judges against its informer cache, which lags the API server by a moment."""
    deadline = time.monotonic() + SETTLE
    while True:
        result = _send(sim, "apply", quota)
        if result.returncode == 0 or time.monotonic() > deadline:
            return result
        if "IsParent is false" not in result.stderr and "not find parentInfo" not in result.stderr:
            return result
        time.sleep(0.5)


def test_profile_without_is_parent_quota_label_takes_no_children(tree: Tree) -> None:
    """The root quota the controller writes carries only the profile's quotaLabels; without
    `is-parent: "true"` among them every child is refused (quota_topology_check.go:196-198)."""
    assert (
        f"{ORG} has parentName {ROOT} but the parentQuotaInfo's IsParent is false"
        in tree.under_plain_root
    ), tree.under_plain_root


def test_profile_root_quota_is_capacity_times_ratio_truncated(tree: Tree) -> None:
    """16 cards x 0.9 = 14 (profile_controller.go:251-264 truncates per resource, :160-168
    sets min to it and max to MaxInt64/2000 for every resource key), and the tree id the
    controller writes is the one `tree_id` computes."""
    root = _get(tree.sim, "elasticquota", "-n", NS, ROOT)
    assert root is not None
    assert root["spec"]["min"][GPU] == "14"
    assert root["spec"]["min"]["cpu"] == "115200m"  # 128 cores x 0.9: milli-precision
    assert sorted(root["spec"]["max"]) == sorted(KEYS)
    assert root["metadata"]["labels"][f"{LABEL}/tree-id"] == TREE
    assert root["metadata"]["labels"][f"{LABEL}/is-root"] == "true"
    profile = _get(tree.sim, "elasticquotaprofile", "-n", NS, PROFILE)
    assert profile is not None
    assert profile["metadata"]["labels"][f"{LABEL}/tree-id"] == TREE


def test_hand_written_tree_is_accepted(tree: Tree) -> None:
    for name in (ORG, TEAM_A, TEAM_B):
        found = _get(tree.sim, "elasticquota", "-n", NS, name)
        assert found is not None, name
        assert found["metadata"]["labels"][f"{LABEL}/tree-id"] == TREE


def test_child_max_keys_must_equal_parents(tree: Tree) -> None:
    """koordinator#1747: quota_topology_check.go:221-223 (child vs its parent) and :245-247
    (parent vs each child), without ElasticQuotaEnableUpdateResourceKey. Adding a card type
    is refused whichever side is applied first."""
    child = _quota("koord-sim-team-c", ORG, gpu_min=0, gpu_max=4, keys=("cpu", "memory"))
    _refused(
        tree.sim,
        "apply",
        child,
        f"checkSubAndParentGroupQuotaKey failed: {ORG}'s max keys are not the same with "
        "koord-sim-team-c's",
    )
    wider_parent = _quota(ORG, ROOT, gpu_min=14, gpu_max=16, is_parent=True)
    wider_parent["spec"]["max"]["example.com/card"] = "8"
    _refused(tree.sim, "apply", wider_parent, "max keys are not the same with")
    wider_child = _quota(TEAM_A, ORG, gpu_min=8, gpu_max=12, namespaces=(TEAM_NS,))
    wider_child["spec"]["max"]["example.com/card"] = "8"
    _refused(
        tree.sim,
        "apply",
        wider_child,
        f"checkSubAndParentGroupQuotaKey failed: {ORG}'s max keys are not the same with {TEAM_A}'s",
    )


def test_children_min_sum_above_parent_min_is_refused(tree: Tree) -> None:
    """quota_topology_check.go:280-284: Σ siblings' min (8 + 6 + 1) > the parent's *min* (14)."""
    extra = _quota("koord-sim-team-c", ORG, gpu_min=1, gpu_max=4)
    _refused(
        tree.sim,
        "apply",
        extra,
        f"checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: {ORG}",
    )
    # and from above: the parent's min lowered under its children's sum (:296-300)
    lower = _quota(ORG, ROOT, gpu_min=13, gpu_max=16, is_parent=True)
    _refused(
        tree.sim,
        "apply",
        lower,
        f"checkMinQuotaSum all children's MinQuota > current MinQuota, current: {ORG}",
    )


def test_min_key_missing_from_max_is_refused(tree: Tree) -> None:
    """quota_topology_check.go:60-70."""
    bad = _quota("koord-sim-team-c", ORG, gpu_min=0, gpu_max=4)
    bad["spec"]["min"]["example.com/card"] = "1"
    _refused(
        tree.sim,
        "apply",
        bad,
        "resourceKey example.com/card of quota koord-sim-team-c is included in min, "
        "which is not included in max",
    )


def test_is_parent_cannot_flip_with_children(tree: Tree) -> None:
    """quota_topology_check.go:169-171."""
    flipped = _quota(ORG, ROOT, gpu_min=14, gpu_max=16, is_parent=False)
    _refused(
        tree.sim,
        "apply",
        flipped,
        f"quota has children, isParent is forbidden to modify as false, quotaName:{ORG}",
    )


def test_tree_id_cannot_change(tree: Tree) -> None:
    """quota_topology_check.go:131-135."""
    moved = _quota(TEAM_B, ORG, gpu_min=6, gpu_max=14)
    moved["metadata"]["labels"][f"{LABEL}/tree-id"] = "12345"
    _refused(tree.sim, "apply", moved, f"{TEAM_B} tree id changed [{TREE}] vs [12345]")


def test_quota_with_children_cannot_be_deleted(tree: Tree) -> None:
    """quota_topology.go:172-176."""
    result = tree.sim.kubectl("delete", "elasticquota", "-n", NS, ORG, check=False)
    assert result.returncode != 0, "the parent quota was deleted"
    assert f"delete quota failed, quota {ORG} has 2 child quotas" in result.stderr, result.stderr


def _pod_state(sim: cluster.SimCluster, name: str) -> Obj:
    return _get(sim, "pod", "-n", TEAM_NS, name) or {}


def _scheduled(pod: Obj) -> Obj:
    conditions = pod.get("status", {}).get("conditions", [])
    return next((c for c in conditions if c.get("type") == "PodScheduled"), {})


@pytest.fixture(scope="module")
def bound_pod(tree: Tree) -> Iterator[Obj]:
    """An 8-GPU pod of team-a under koord-scheduler, bound (or the test fails)."""
    name = "koord-sim-fits"
    result = _send(tree.sim, "create", _pod(name, TEAM_A, 8))
    assert result.returncode == 0, result.stderr
    _wait(
        lambda: bool(_pod_state(tree.sim, name).get("spec", {}).get("nodeName")),
        what=f"pod {name} bound by koord-scheduler",
        seen=lambda: _pod_state(tree.sim, name).get("status"),
    )
    yield _pod_state(tree.sim, name)
    tree.sim.kubectl("delete", "pod", "-n", TEAM_NS, name, "--ignore-not-found", "--wait=true")


def test_quota_pod_binds_to_a_node_of_its_pool(tree: Tree, bound_pod: Obj) -> None:
    """The pod mutating webhook pins a pod of a MultiQuotaTree quota to its profile's nodes
    (pkg/webhook/pod/mutating/multi_quota_tree_affinity.go:37-110); koord-scheduler binds it
    there."""
    assert bound_pod["spec"]["nodeName"] in {n["metadata"]["name"] for n in NODES}
    terms = bound_pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    wanted = {"key": POOL_LABEL, "operator": "In", "values": [POOL]}
    assert all(wanted in term["matchExpressions"] for term in terms), terms


def test_pod_over_quota_stays_pending_with_koordinators_message(tree: Tree, bound_pod: Obj) -> None:
    """team-a uses 8 of its max 12: 8 more stays pending with ElasticQuota's PreFilter
    message (pkg/scheduler/plugins/elasticquota/plugin.go:276-283), although the nodes have
    8 cards free."""
    name = "koord-sim-over"
    result = _send(tree.sim, "create", _pod(name, TEAM_A, 8))
    assert result.returncode == 0, result.stderr
    try:
        _wait(
            lambda: (
                "Insufficient quotas" in _scheduled(_pod_state(tree.sim, name)).get("message", "")
            ),
            what=f"pod {name} refused by koord-scheduler's ElasticQuota",
            seen=lambda: _pod_state(tree.sim, name).get("status"),
        )
        pod = _pod_state(tree.sim, name)
        message = _scheduled(pod)["message"]
        assert f"quotaName: {TEAM_A}" in message, message
        # The dimensions depend on when koord-scheduler last refreshed team-a's runtime: before
        # the new pod's request is counted the runtime is the old request (cpu:1, gpu:8) and
        # cpu exceeds too (CI saw "[nvidia.com/gpu cpu]"); after, it is gpu alone. Cards exceed
        # in both readings, and that is the claim.
        exceeded = re.search(r"exceedDimensions: \[([^\]]*)\]", message)
        assert exceeded is not None, message
        assert GPU in exceeded.group(1).split(), message
        assert not pod["spec"].get("nodeName")
    finally:
        tree.sim.kubectl("delete", "pod", "-n", TEAM_NS, name, "--ignore-not-found", "--wait=true")


def test_quota_with_pods_cannot_be_deleted(tree: Tree, bound_pod: Obj) -> None:
    """quota_topology.go:183-201 (pods found by the `label.quotaName` field index)."""
    result = tree.sim.kubectl("delete", "elasticquota", "-n", NS, TEAM_A, check=False)
    assert result.returncode != 0, "a quota with a running pod was deleted"
    expected = (
        f"delete quota failed, quota {TEAM_A} has 1 child pods: {bound_pod['metadata']['name']}"
    )
    assert expected in result.stderr, result.stderr


def test_pod_bound_to_a_parent_quota_is_refused(tree: Tree) -> None:
    """pkg/webhook/elasticquota/pod_check.go:54-58, through the pod validating webhook."""
    result = _send(tree.sim, "create", _pod("koord-sim-parent", ORG, 1))
    assert result.returncode != 0, "a pod bound to a parent quota was admitted"
    assert "vpod.koordinator.sh" in result.stderr, result.stderr
    assert f"pod can not be linked to a parentQuotaGroup,quota:{ORG}" in result.stderr


def test_misspelled_quota_label_falls_silently_into_the_default_quota(
    tree: Tree, bound_pod: Obj
) -> None:
    """A quota label naming no quota is admitted (pod_check.go:77-85 takes the label as is)
    and scheduled under koordinator-default-quota (plugin.go:353-357): team-a's namespace and
    its 8 used GPUs of 12 do not count (under team-a the same pod stays pending, as
    test_pod_over_quota_stays_pending_with_koordinators_message shows)."""
    name = "koord-sim-misspelled"
    result = _send(tree.sim, "create", _pod(name, TEAM_A + "x", 8))
    assert result.returncode == 0, result.stderr
    try:
        _wait(
            lambda: bool(_pod_state(tree.sim, name).get("spec", {}).get("nodeName")),
            what=f"pod {name} bound under the default quota",
            seen=lambda: _pod_state(tree.sim, name).get("status"),
        )
    finally:
        tree.sim.kubectl("delete", "pod", "-n", TEAM_NS, name, "--ignore-not-found", "--wait=true")


@pytest.mark.parametrize(
    "reserved", ["koordinator-root-quota", "koordinator-default-quota", "koordinator-system-quota"]
)
def test_reserved_quotas_cannot_be_deleted(tree: Tree, reserved: str) -> None:
    """koord-scheduler creates the three (ElasticQuota plugin start-up); quota_topology.go:
    164-166 refuses their deletion, so a tree must never use those names."""
    result = tree.sim.kubectl("delete", "elasticquota", "-n", NS, reserved, check=False)
    assert result.returncode != 0, f"{reserved} was deleted"
    assert f"can not delete quotaGroup :{reserved}" in result.stderr, result.stderr
