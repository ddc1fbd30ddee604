"""The busy day-2 harness's judgement without a cluster (issue 38, items 7-10 and 12): which
hazard announces a disruption (same pool or work, overbooking said in words), the live radius
held against every kind, stranded work as Kueue leaves it, capacity by the labels nodes carry
now with Volcano's usage, and the at-rest reading."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from harness.simcluster import announce, busy, cluster, policyfleet

from . import test_sim_day2 as day2
from .conftest import NOW, POLICIES

Obj = dict[str, Any]
POOLS = busy.Pools(
    node_pool={"dev-1": "rtx", "dev-2": "rtx", "l40s-1": "l40s", "l40s-2": "l40s"},
    flavor_pool={"rtx-a": "rtx", "rtx-b": "rtx", "l40s-a": "l40s"},
    pool_name={"rtx": "rtx", "l40s": "l40s", "l40s-serving": "l40s"},
)


def _queue(name: str, flavors: list[str], covered: list[str], active: bool = True) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {
            "resourceGroups": [
                {"coveredResources": covered, "flavors": [{"name": f} for f in flavors]}
            ]
        },
        "status": {"conditions": [{"type": "Active", "status": str(active)}]},
    }


def _flavor(name: str, pool: str, taint: str = "") -> Obj:
    spec: Obj = {"nodeLabels": {busy.POOL_LABEL: pool}}
    if taint:
        spec["nodeTaints"] = [{"key": taint, "effect": "NoSchedule"}]
    return {"metadata": {"name": name}, "spec": spec}


def _workload(
    key: str, queue: str, pool: str, flavor: str = "", resource: str = "nvidia.com/gpu"
) -> Obj:
    namespace, name = key.split("/")
    pod = {"nodeSelector": {busy.POOL_LABEL: pool}, "containers": [{"resources": {}}]}
    pod["containers"][0]["resources"]["requests"] = {resource: "1", "cpu": "1"}
    workload: Obj = {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"queueName": queue, "podSets": [{"name": "main", "template": {"spec": pod}}]},
        "status": {},
    }
    if flavor:
        workload["status"] = {
            "conditions": [{"type": "QuotaReserved", "status": "True"}],
            "admission": {
                "podSetAssignments": [
                    {"flavors": {resource: flavor}, "resourceUsage": {resource: "8"}}
                ]
            },
        }
    return workload


def _pod(key: str, node: str = "", pool: str = "", phase: str = "Running", **extra: Any) -> Obj:
    namespace, name = key.split("/")
    spec: Obj = {"nodeName": node} if node else {"nodeSelector": {busy.POOL_LABEL: pool}}
    spec["containers"] = [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]
    spec.update(extra)
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": spec,
        "status": {"phase": phase},
    }


def _load(
    workloads: list[Obj] = (),  # type: ignore[assignment]
    pods: list[Obj] = (),  # type: ignore[assignment]
    queues: list[Obj] = (),  # type: ignore[assignment]
    flavors: list[Obj] = (),  # type: ignore[assignment]
    localqueues: dict[str, str] | None = None,
    namespaces: dict[str, str] | None = None,
) -> busy.Load:
    return busy.Load(
        capacity={},
        kueue={},
        pods={},
        volcano={},
        borrowing={},
        workloads={f"{w['metadata']['namespace']}/{w['metadata']['name']}": w for w in workloads},
        live_pods={f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods},
        namespaces=namespaces or {},
        localqueues=localqueues or {},
        clusterqueues={q["metadata"]["name"] for q in queues},
        flavors={f["metadata"]["name"] for f in flavors},
        queue_specs={q["metadata"]["name"]: q for q in queues},
        flavor_specs={f["metadata"]["name"]: f for f in flavors},
    )


def _hazard(rule: str, subject: str, message: str = "", live: str = "") -> Obj:
    return {"rule": rule, "subject": subject, "message": message, "action": "", "live": live}


TAINT_RTX = _hazard(
    "taint-evicts",
    "NodeFeatureRule rule rtx",
    "adds NoExecute taint maintenance= to 2 node(s) (dev-1, dev-2): every pod there ...",
    "live: evicted: 3 pod(s) (research 3)",
)


def _judge(hazards: list[Obj], base: busy.Load, final: busy.Load, **measured: Any) -> Any:
    kinds = ("pods_deleted", "workloads_evicted", "stranded", "namespaces_deleted")
    args = {k: measured.get(k, []) for k in kinds}
    return announce.judge(
        hazards=hazards,
        ctx=announce.Context(POOLS, base, final),
        double_booked=measured.get("double_booked", {}),
        **args,
    )


# ---- item 8: the same pool, and overbooking said in words -------------------------------


def test_an_eviction_is_announced_only_by_a_hazard_about_its_pool() -> None:
    base = _load(pods=[_pod("serving/a", node="l40s-1"), _pod("research/b", node="dev-1")])
    elsewhere = _judge([TAINT_RTX], base, base, pods_deleted=["serving/a"])
    assert elsewhere.failures and "pods-deleted on l40s" in elsewhere.failures[0]
    here = _judge([TAINT_RTX], base, base, pods_deleted=["research/b"])
    assert not here.failures, here.failures
    assert here.announced_by["pods-deleted"] == ["taint-evicts"]


def test_a_double_booking_is_announced_only_by_a_hazard_that_says_overbooked() -> None:
    base = _load(queues=[_queue("research", ["rtx-a"], ["nvidia.com/gpu"])])
    silent = _hazard(
        "kueue-resource-uncovered",
        "ClusterQueue research",
        "stops covering nvidia.com/gpu: workloads that request it are never admitted",
    )
    over = {("rtx", "nvidia.com/gpu"): (Decimal(52), Decimal(48))}
    unsaid = _judge([silent], base, base, double_booked=over).failures
    assert unsaid and "no hazard" in unsaid[0], unsaid
    renamed = _hazard(
        "kueue-flavor-renamed",
        "ResourceFlavor rtx-a",
        "is replaced by rtx-b for pool rtx: ... so the pool is double-booked (up to 48 "
        "nvidia.com/gpu) until they finish",
        "live: no longer counted: 4 admitted and 0 pending workload(s); admitted usage "
        "(holds: {research: {nvidia.com/gpu: '44'}})",
    )
    verdict = _judge([renamed], base, base, double_booked=over)
    assert not verdict.failures, verdict.failures
    assert verdict.radius["double-booked rtx|nvidia.com/gpu"] == "4 above, stated 44"
    other_pool = {("l40s", "nvidia.com/gpu"): (Decimal(36), Decimal(32))}
    assert _judge([renamed], base, base, double_booked=other_pool).failures


# ---- item 7: evictions and double bookings against the live radius ------------------------


def test_workloads_evicted_beyond_the_radius_fail() -> None:
    workloads = [_workload(f"research/w{i}", "research", "rtx", flavor="rtx-a") for i in range(5)]
    base = _load(workloads=workloads)
    keys = [f"research/w{i}" for i in range(5)]
    verdict = _judge([TAINT_RTX], base, base, workloads_evicted=keys)
    assert any("5 measured, the live radius" in f for f in verdict.failures), verdict.failures
    assert not _judge([TAINT_RTX], base, base, workloads_evicted=keys[:3]).failures


def test_a_double_booking_above_what_the_hazard_states_fails() -> None:
    base = _load()
    said = _hazard(
        "mig-repartition",
        "Pool l40s",
        "re-partitions ... so pool l40s is overbooked during the sync by 4 nvidia.com/gpu "
        "(quotas 36, the old layout holds 32)",
    )
    small = {("l40s", "nvidia.com/gpu"): (Decimal(36), Decimal(32))}
    assert not _judge([said], base, base, double_booked=small).failures
    big = {("l40s", "nvidia.com/gpu"): (Decimal(40), Decimal(32))}
    assert any("8 above" in f for f in _judge([said], base, base, double_booked=big).failures)


# ---- item 9: stranded as Kueue leaves it ---------------------------------------------------


def test_stranded_counts_no_flavor_inactive_queues_and_unbound_pods() -> None:
    load = _load(
        workloads=[
            _workload("research/fits", "research", "rtx"),
            _workload("research/gone", "old", "rtx"),
            _workload("research/mig", "research", "rtx", resource="nvidia.com/mig-3g.40gb"),
            _workload("serving/label", "serving", "l40s"),
            _workload("research/tainted", "tainted", "rtx"),
            _workload("ft/stopped", "ft", "l40s"),
            _workload("research/running", "research", "rtx", flavor="rtx-a"),
        ],
        pods=[
            _pod("research/placed", node="dev-1"),
            _pod("research/nowhere", pool="rtx", phase="Pending"),
            _pod("research/gated", pool="rtx", phase="Pending", schedulingGates=[{"name": "k"}]),
        ],
        queues=[
            _queue("research", ["rtx-a"], ["cpu", "nvidia.com/gpu"]),
            _queue("serving", ["l40s-serving"], ["cpu", "nvidia.com/gpu"]),
            _queue("tainted", ["rtx-t"], ["cpu", "nvidia.com/gpu"]),
            _queue("ft", ["l40s-a"], ["cpu", "nvidia.com/gpu"], active=False),
        ],
        flavors=[
            _flavor("rtx-a", "rtx"),
            _flavor("l40s-serving", "l40s-serving"),
            _flavor("rtx-t", "rtx", taint="maintenance"),
            _flavor("l40s-a", "l40s"),
        ],
        localqueues={
            "research/research": "research",
            "serving/serving": "serving",
            "research/tainted": "tainted",
            "ft/ft": "ft",
        },
    )
    assert load.stranded() == [
        "inactive ft/stopped",
        "no-flavor research/mig",
        "no-flavor research/tainted",
        "no-flavor serving/label",
        "queue-gone research/gone",
        "unbound research/nowhere",
    ]


def test_stranded_work_is_held_against_the_hazard_about_its_queue() -> None:
    base = _load(localqueues={"ft/ft": "ft"})
    pending = _workload("ft/a", "ft", "l40s")
    final = _load(workloads=[pending])
    lq = _hazard(
        "localqueue-removed",
        "LocalQueue ft/ft",
        "",
        "live: stranded: 0 admitted and 1 pending workload(s)",
    )
    other = _hazard("localqueue-removed", "LocalQueue serving/serving", "", lq["live"])
    assert not _judge([lq], base, final, stranded=["queue-gone ft/a"]).failures
    assert _judge([other], base, final, stranded=["queue-gone ft/a"]).failures
    two = _judge(
        [lq],
        base,
        _load(workloads=[pending, _workload("ft/b", "ft", "l40s")]),
        stranded=["queue-gone ft/a", "queue-gone ft/b"],
    )
    assert any("2 measured, the live radius" in f for f in two.failures), two.failures


# ---- item 10: capacity by the labels nodes carry now, Volcano's usage --------------------


def _node(name: str, pool: str | None, gpus: int) -> Obj:
    labels = {busy.POOL_LABEL: pool} if pool else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}},
    }


def test_capacity_follows_the_pool_label_not_the_baseline_node_names() -> None:
    nodes = [_node("l40s-1", "l40s-serving", 8), _node("l40s-2", None, 8), _node("dev-1", "rtx", 4)]
    assert busy.capacity_of(nodes, POOLS) == {
        ("l40s", "nvidia.com/gpu"): Decimal(8),
        ("rtx", "nvidia.com/gpu"): Decimal(4),
    }


def test_volcano_gangs_count_in_what_a_pool_has_taken() -> None:
    gang = _pod("pretrain/g", node="dev-1", schedulerName="volcano")
    kueue_pod = _pod("pretrain/k", node="dev-1", schedulerName="volcano")
    kueue_pod["metadata"]["labels"] = {busy.KUEUE_QUEUE: "pretraining"}
    pods, volcano = busy.pod_usage([gang, kueue_pod, _pod("r/p", node="dev-2")], POOLS)
    assert volcano == {("rtx", "nvidia.com/gpu"): Decimal(1)}
    assert pods == {("rtx", "nvidia.com/gpu"): Decimal(2)}
    load = busy.Load(
        capacity={("rtx", "nvidia.com/gpu"): Decimal(4)},
        kueue={("rtx", "nvidia.com/gpu"): Decimal(4)},
        pods=pods,
        volcano=volcano,
        borrowing={},
        workloads={},
        live_pods={},
        namespaces={},
        localqueues={},
        clusterqueues=set(),
        flavors=set(),
    )
    assert load.over_capacity() == {("rtx", "nvidia.com/gpu"): (Decimal(5), Decimal(4))}


# ---- item 12: at rest by watch, namespaces by uid, added nodes -----------------------------


def test_namespaces_are_compared_by_name_and_uid() -> None:
    base = _load(namespaces={"research": "u1", "ft": "u2", "serving": "u3"})
    now = _load(namespaces={"research": "u1", "ft": "u9"})
    assert busy.namespaces_gone(base, now) == ["ft", "serving"]


def test_settled_waits_until_the_watches_see_no_change(monkeypatch: pytest.MonkeyPatch) -> None:
    still = _load(pods=[_pod("r/a", node="dev-1")])
    monkeypatch.setattr(busy, "measure", lambda sim, pools: still)
    monkeypatch.setattr(busy.time, "sleep", lambda seconds: None)
    counts = iter([0, 1, 2, 2])
    assert busy.settled(None, POOLS, changes=lambda: next(counts)) is still  # type: ignore[arg-type]
    moving = itertools.count()
    with pytest.raises(cluster.SimError, match="watched change"):
        busy.settled(None, POOLS, timeout=0.05, changes=lambda: next(moving))  # type: ignore[arg-type]


def test_a_pod_being_deleted_is_not_at_rest() -> None:
    pod = _pod("r/a", node="dev-1")
    pod["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    load = _load(pods=[pod])
    assert busy._moving(load, load) == ["pod r/a being deleted"]


def test_the_nodes_a_change_added_are_the_ones_removed_after_it(tmp_path: Path) -> None:
    after_dir = tmp_path / "policy"
    shutil.copytree(POLICIES, after_dir)
    day2.CHANGES["add-pool"](after_dir)
    baseline = policyfleet.load(POLICIES, now=NOW)
    after = policyfleet.load(after_dir, now=NOW)
    added = policyfleet.added_nodes(baseline, after)
    names = {n.name for p in after.pools.values() for n in p.nodes}
    assert added and set(added) <= names
    assert not set(added) & {n.name for p in baseline.pools.values() for n in p.nodes}
    assert policyfleet.added_nodes(baseline, baseline) == []


def test_a_queue_that_kept_a_flavor_the_tree_dropped_is_unsynced() -> None:
    live = _load(queues=[_queue("ft", ["a800-a", "l40s-old", "l40s-new"], ["nvidia.com/gpu"])])
    rendered = [_queue("ft", ["a800-a", "l40s-new"], ["nvidia.com/gpu"]) | {"kind": "ClusterQueue"}]
    assert busy.unsynced_queues(live, rendered) == [
        "ClusterQueue ft: live flavors ['a800-a', 'l40s-new', 'l40s-old'], "
        "rendered ['a800-a', 'l40s-new']"
    ]
    rendered[0]["spec"] = live.queue_specs["ft"]["spec"]
    assert busy.unsynced_queues(live, rendered) == []


def test_pods_never_bound_fit_in_what_an_overbooking_hazard_states() -> None:
    """change-taint on the busy fleet: the pending l40s job is admitted on the new flavor (36
    on 32) and its 8 pods never bind; kueue-flavor-renamed stated 28 GPUs no longer counted."""
    renamed = _hazard(
        "kueue-flavor-renamed",
        "ResourceFlavor l40s-a",
        "is replaced by l40s-b for pool l40s: ... so the pool is double-booked (up to 32 "
        "nvidia.com/gpu) until they finish; pods the scheduler cannot place then stay Pending",
        "live: no longer counted, running on the pool: 4 admitted and 0 pending workload(s); "
        "admitted usage (holds: {ft: {nvidia.com/gpu: '28'}})",
    )
    unplaced = [_pod(f"ft/p{i}", pool="l40s", phase="Pending") for i in range(8)]
    base, final = _load(), _load(pods=unplaced)
    keys = [f"unbound ft/p{i}" for i in range(8)]
    verdict = _judge([renamed], base, final, stranded=keys)
    assert not verdict.failures, verdict.failures
    assert verdict.radius["unbound l40s"] == "8 measured, radius 8"
    small = dict(renamed, live=renamed["live"].replace("'28'", "'4'"))
    assert _judge([small], base, final, stranded=keys).failures
    silent = dict(renamed, message="is replaced", live="live: 4 admitted and 0 pending workload(s)")
    assert _judge([silent], base, final, stranded=keys).failures


# ---- item 9's rest: inactive LocalQueues, namespaces the ClusterQueue does not select -------


def test_work_pending_on_a_stopped_localqueue_or_an_unselected_namespace_is_stranded() -> None:
    """Kueue's getQueueBlocker: a LocalQueue with a stopPolicy holds its pending work ("LocalQueue
    ... is inactive") even when its ClusterQueue is active; the scheduler admits nothing from a
    namespace the ClusterQueue's selector does not match."""
    queue = _queue("research", ["rtx-a"], ["cpu", "nvidia.com/gpu"])
    queue["spec"]["namespaceSelector"] = {"matchLabels": {"team": "research"}}
    load = _load(
        workloads=[
            _workload("research/held", "held", "rtx"),
            _workload("research/fits", "research", "rtx"),
            _workload("sandbox/unlabelled", "research", "rtx"),
        ],
        queues=[queue],
        flavors=[_flavor("rtx-a", "rtx")],
        localqueues={
            "research/held": "research",
            "research/research": "research",
            "sandbox/research": "research",
        },
    )
    load = dataclasses.replace(
        load,
        localqueue_specs={
            "research/held": {"spec": {"clusterQueue": "research", "stopPolicy": "Hold"}},
            "research/research": {"spec": {"clusterQueue": "research", "stopPolicy": "None"}},
        },
        namespace_labels={"research": {"team": "research"}, "sandbox": {"team": "other"}},
    )
    assert load.stranded() == ["localqueue-inactive research/held", "unselected sandbox/unlabelled"]
    # the live radius of the hazard: what its namespace scope holds
    live = "live: reached: 0 admitted and 1 pending workload(s) (research 1)"
    unlabelled = _hazard("namespace-unselected", "Namespace sandbox", "", live)
    assert not _judge(
        [unlabelled], _load(), load, stranded=["unselected sandbox/unlabelled"]
    ).failures
    held = _judge([unlabelled], _load(), load, stranded=["localqueue-inactive research/held"])
    assert any("localqueue-inactive research/held" in f for f in held.failures), held.failures


def test_a_queue_the_revert_left_terminating_is_found(tmp_path: Path) -> None:
    """The rename-team revert re-applies ClusterQueue finetune-vision while its old copy waits on
    Kueue's resource-in-use finalizer: restore must see it (the queue admits nothing), not a
    queue the tree does not have or a live one."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "kustomization.yaml").write_text("resources: [queues.yaml]\n")
    (tree / "queues.yaml").write_text(
        "kind: ClusterQueue\nmetadata: {name: finetune-vision}\n---\n"
        "kind: ClusterQueue\nmetadata: {name: research}\n"
    )
    deleting = {"deletionTimestamp": "2026-12-06T01:27:43Z"}
    load = _load(
        queues=[
            _queue("finetune-vision", [], [])
            | {"metadata": {"name": "finetune-vision", **deleting}},
            _queue("research", [], []),
            _queue("vision", [], []) | {"metadata": {"name": "vision", **deleting}},
        ]
    )
    assert busy.terminating_queues(load, tree) == {"finetune-vision"}


def _podgroup(key: str, queue: str, phase: str, running: int = 0) -> Obj:
    namespace, name = key.split("/")
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"queue": queue, "minMember": 4},
        "status": {"phase": phase, "running": running},
    }


def test_a_gang_waiting_in_a_deleted_volcano_queue_is_stranded_and_held_to_its_hazard() -> None:
    """Volcano's scheduler drops a job whose Queue is gone: a gang still waiting there is never
    scheduled (a running one keeps running). It is announced only by the prune hazard of its
    own Queue, within the waiting PodGroups that hazard's live line names."""
    groups = [
        _podgroup("research/waiting", "research-a100", "Pending"),
        _podgroup("research/inqueue", "research-a100", "Inqueue"),
        _podgroup("research/running", "research-a100", "Running", running=4),
        _podgroup("pretrain/waiting", "pretrain", "Pending"),
    ]
    load = dataclasses.replace(
        _load(),
        podgroups={f"{g['metadata']['namespace']}/{g['metadata']['name']}": g for g in groups},
        volcano_queues={"default", "root", "pretrain"},
    )
    assert load.stranded() == [
        "volcano-queue-gone research/inqueue",
        "volcano-queue-gone research/waiting",
    ]
    # no Queue read (a light reading, or no Volcano): nothing is claimed
    assert dataclasses.replace(load, volcano_queues=set()).stranded() == []
    stranded = load.stranded()
    live = "live: reached: 1 running and 2 waiting PodGroup(s) (research 3)"
    pruned = _hazard("volcano-queue-pruned", "Queue research-a100", "leaves the policy", live)
    assert not _judge([pruned], _load(), load, stranded=stranded).failures
    other = _hazard("volcano-queue-pruned", "Queue pretrain", "leaves the policy", live)
    failures = _judge([other], _load(), load, stranded=stranded).failures
    assert any("about Queue research-a100" in f for f in failures), failures
    short = _hazard("volcano-queue-pruned", "Queue research-a100", "", live.replace("2 w", "1 w"))
    failures = _judge([short], _load(), load, stranded=stranded).failures
    assert any("2 measured, the live radius" in f for f in failures), failures


def test_running_pods_hold_their_cards_on_unlabelled_nodes_and_in_used_mig_slices() -> None:
    """A removed pool's nodes lose their label but keep running what they ran: held for the
    baseline pool, not overbooked. A MIG slice in use is not destroyed by a re-partition
    (mig-parted refuses), whatever the node advertises. Fewer time-slicing replicas under the
    same pods stay an overbooking."""
    unlabelled = _node("l40s-1", None, 8)
    mig = _node("dev-1", "rtx", 0)
    mig["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] = "1"
    sliced = _node("dev-2", "rtx", 2)  # time-slicing went from 4 replicas to 2
    pods = [
        _pod("ft/a", node="l40s-1"),
        _pod("ft/b", node="l40s-1"),
        _pod("ft/done", node="l40s-1", phase="Succeeded"),
        _pod("serve/m1", node="dev-1"),
        _pod("serve/m2", node="dev-1"),
        _pod("serve/m3", node="dev-1"),
        *[_pod(f"dev/t{i}", node="dev-2") for i in range(4)],
    ]
    for pod in pods[3:6]:
        pod["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/mig-3g.40gb": "1"}
    nodes = [unlabelled, mig, sliced]
    held = busy.held_by_running(nodes, pods, POOLS)
    assert held == {
        ("l40s", "nvidia.com/gpu"): Decimal(2),
        ("rtx", "nvidia.com/mig-3g.40gb"): Decimal(2),
    }
    assert ("rtx", "nvidia.com/gpu") not in held  # 4 pods on 2 replicas: still over
