"""explain against Kueue v0.19.2 on what an independently written policy found it getting wrong
(issue 32): pod sets of each kind, podset groups, borrowing distance, node affinity, GFD labels,
built-in PriorityClasses, the missing-LocalQueue message, resumed flavor scans, and pods no node
holds. Each test failed before its fix."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.workload import from_manifest

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
QUEUE = {QUEUE_LABEL: "pretraining"}


@pytest.fixture(scope="module")
def policy() -> Any:
    return run.load_policy([REPO / "policies"], NOW)


def _pod(gpus: int = 8, **spec: Any) -> dict[str, Any]:
    return {
        "spec": {
            "containers": [
                {"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}},
            ],
            "tolerations": [{"operator": "Exists"}],
            **spec,
        }
    }


def _meta(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": "x", "namespace": "pretrain", "labels": labels or dict(QUEUE)}


def _lws(size: int, *, leader: bool) -> dict[str, Any]:
    template: dict[str, Any] = {"size": size, "workerTemplate": _pod()}
    if leader:
        template["leaderTemplate"] = _pod()
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": _meta(),
        "spec": {"replicas": 1, "leaderWorkerTemplate": template},
    }


def test_a_leaderworkerset_without_leader_template_is_one_pod_set_main() -> None:
    """leaderworkerset_reconciler.go:400-431: no leaderTemplate -> one pod set "main" of size
    pods; with one -> "leader" (1) and "worker" (size - 1), kept even at 0 pods."""
    plain = from_manifest(_lws(4, leader=False))
    assert [(p.name, p.count) for p in plain.pod_sets] == [("main", 4)]
    single = from_manifest(_lws(1, leader=True))
    assert [(p.name, p.count) for p in single.pod_sets] == [("leader", 1), ("worker", 0)]


def _job(**template_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(),
        "spec": {"parallelism": 1, "template": _pod(**template_spec)},
    }


@pytest.mark.parametrize("name", ["system-cluster-critical", "system-node-critical"])
def test_a_built_in_priority_class_is_admitted(policy: Any, name: str) -> None:
    found = explain(policy, from_manifest(_job(priorityClassName=name)))
    assert found.verdict == "admitted", found.message
    # A WorkloadPriorityClass of that name does not exist: the label is still refused.
    labelled = _job()
    labelled["metadata"]["labels"] = {**QUEUE, "kueue.x-k8s.io/priority-class": name}
    assert explain(policy, from_manifest(labelled)).reason == "WorkloadPriorityClassNotFound"


def test_a_missing_local_queue_is_named_as_kueue_names_it(policy: Any) -> None:
    """workload_controller.go:2084: "LocalQueue %s doesn't exist" with spec.queueName."""
    job = _job()
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "nope"}
    found = explain(policy, from_manifest(job))
    assert (found.reason, found.message) == ("Misconfigured", "LocalQueue nope doesn't exist")


def _jobset(*counts: int, **template_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _meta(),
        "spec": {
            "replicatedJobs": [
                {
                    "name": f"p{i}",
                    "replicas": 1,
                    "template": {"spec": {"parallelism": n, "template": _pod(**template_spec)}},
                }
                for i, n in enumerate(counts)
            ]
        },
    }


def test_a_quota_failure_of_a_later_pod_set_resumes_the_earlier_ones_scan(policy: Any) -> None:
    """scheduler.go:280-285 records every cycle's assignment: p0 took a800-train (the first of
    three flavors), p1 then exceeds it (16 + 80 > 92); Kueue requeues at once and p0 resumes
    at a100-transition while p1 scans from the first flavor again, and both fit."""
    found = explain(policy, from_manifest(_jobset(2, 10)))
    (first,) = found.kueue.cycles
    assert first.reason == "ExceedsMaxQuota"
    assert found.verdict == "admitted", found.message
    assert [r.flavor.pool for r in found.kueue.pod_sets if r.flavor] == [
        "a100-transition",
        "a800-train",
    ]


def _affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
            }
        }
    }


def test_required_node_affinity_picks_the_flavor_and_the_nodes(policy: Any) -> None:
    """flavorassigner.go:1280-1321: the required terms, cut to the flavor's label keys, are
    matched against its nodeLabels; kube-scheduler then applies all of them to the nodes."""
    pool = {"key": "hetgitops.io/pool", "operator": "NotIn", "values": ["a800-train"]}
    found = explain(policy, from_manifest(_job(affinity=_affinity([pool]))))
    assert found.verdict == "admitted", found.message
    assert found.pool == "a100-transition"
    assert found.kueue.pod_sets[0].attempts[0].messages[0].endswith("doesn't match node affinity")
    # A key no flavor has: Kueue's flavor check ignores it, but the topology placement finds
    # no 80 GiB a800 node under 60 GiB and the resumed scan lands on the 40 GiB A100s.
    small = {"key": "hetgitops.io/gpu-memory-gib", "operator": "Lt", "values": ["60"]}
    found = explain(policy, from_manifest(_job(affinity=_affinity([small]))))
    (first,) = found.kueue.cycles
    assert first.reason == "TopologyPlacementFailed"
    assert "excluded: nodeSelector: 16" in first.message
    assert found.pool == "a100-transition"
    # Terms are ORed: a second term that holds lets the pod onto the nodes again.
    big = {"key": "hetgitops.io/gpu-memory-gib", "operator": "Gt", "values": ["60"]}
    found = explain(policy, from_manifest(_job(affinity=_affinity([small], [big]))))
    assert found.pool == "a800-train"
    assert "node(s) fit a pod" in found.scheduler[0]


def test_node_selector_requirements_hold_as_kubernetes_matches_them() -> None:
    from hetgitops.model.node_selection import requirement_holds

    labels = {"a": "5", "b": "x"}
    cases = [
        ({"key": "b", "operator": "In", "values": ["x", "y"]}, True),
        ({"key": "b", "operator": "NotIn", "values": ["x"]}, False),
        ({"key": "c", "operator": "NotIn", "values": ["x"]}, True),
        ({"key": "a", "operator": "Exists"}, True),
        ({"key": "a", "operator": "DoesNotExist"}, False),
        ({"key": "a", "operator": "Gt", "values": ["4"]}, True),
        ({"key": "a", "operator": "Lt", "values": ["5"]}, False),
        ({"key": "b", "operator": "Gt", "values": ["1"]}, False),
        ({"key": "c", "operator": "Lt", "values": ["9"]}, False),
    ]
    assert [requirement_holds(r, labels) for r, _ in cases] == [want for _, want in cases]


def test_a_job_selecting_gfds_product_label_lands_on_the_cards_nodes(policy: Any) -> None:
    """GFD labels each NVIDIA node nvidia.com/gpu.product (CardType.productNames), gpu.count,
    gpu.memory; explain's nodes carry them, so the standard product selector matches."""
    from hetgitops.explain.nodes import pool_nodes

    selector = {"nvidia.com/gpu.product": "NVIDIA-A800-SXM4-80GB", "nvidia.com/gpu.count": "8"}
    found = explain(policy, from_manifest(_job(nodeSelector=selector)))
    assert (found.verdict, found.pool) == ("admitted", "a800-train"), found.message
    assert "16 node(s) fit a pod" in found.scheduler[0]
    labels = pool_nodes(policy, policy.pools["h100-infer"])[0].labels
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert labels["nvidia.com/mig.capable"] == "true"
    assert labels["nvidia.com/mig-1g.10gb.count"].isdigit()
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"


def test_try_next_flavor_prefers_borrowing_from_the_nearer_cohort(tmp_path: Path) -> None:
    """isPreferred / borrowingLevel.betterThan (flavorassigner.go:487-575): with
    whenCanBorrow TryNextFlavor and no flavor fitting unborrowed, the flavor whose quota comes
    from the lower cohort wins. research's h100-infer (listed first) borrows from the root
    ai-centre (height 2), rtx4090-dev from its own cohort research (height 1)."""
    import shutil

    root = tmp_path / "policies"
    shutil.copytree(REPO / "policies", root)
    fleet = root / "fleet.yaml"
    fleet.write_text(
        fleet.read_text().replace(
            "    queueingStrategy: BestEffortFIFO\n",
            "    queueingStrategy: BestEffortFIFO\n"
            "    flavorFungibility: {whenCanBorrow: TryNextFlavor}\n",
        )
    )
    teams = root / "teams" / "others.yaml"
    old = "    - {pool: rtx4090-dev, cards: 32}\n    - pool: h100-infer\n      mig: {1g.10gb: 28}\n"
    new = "    - pool: h100-infer\n      mig: {1g.10gb: 28}\n    - {pool: rtx4090-dev, cards: 4}\n"
    assert old in teams.read_text()
    teams.write_text(teams.read_text().replace(old, new))
    policy = run.load_policy([root], NOW)
    job = _job()
    job["metadata"] = {"name": "x", "namespace": "research", "labels": {QUEUE_LABEL: "research"}}
    job["spec"]["parallelism"] = 8
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"nvidia.com/gpu": 1},
    }
    found = explain(policy, from_manifest(job))
    attempts = found.kueue.pod_sets[0].attempts
    assert [(a.pool, a.mode, a.level) for a in attempts[:2]] == [
        ("h100-infer", "borrow", 2),
        ("rtx4090-dev", "borrow", 1),
    ]
    assert (found.verdict, found.pool) == ("admitted", "rtx4090-dev")


def _pytorchjob(workers: int, *, grouped: bool) -> dict[str, Any]:
    annotations = {"kueue.x-k8s.io/podset-preferred-topology": "hetgitops.io/rack"}
    if grouped:
        annotations["kueue.x-k8s.io/podset-group-name"] = "g"

    def replica(n: int) -> dict[str, Any]:
        return {"replicas": n, "template": {"metadata": {"annotations": annotations}, **_pod()}}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": _meta(),
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)}},
    }


def test_a_podset_group_gets_one_flavor_for_its_summed_request(policy: Any) -> None:
    """flavorassigner.go:778-840: the group's requests are summed and searched once, as the
    PyTorchJobs `jobs` renders annotate them. 8 + 88 GPUs exceed pretraining's a800-train
    (92) and every other flavor; ungrouped, the master would move to a100-transition in the
    resumed cycle and the workers fit a800-train alone."""
    found = explain(policy, from_manifest(_pytorchjob(11, grouped=True)))
    assert (found.verdict, found.reason) == ("pending", "ExceedsMaxQuota")
    assert "current podset request (96) > maximum capacity (92)" in found.message
    assert "pod set master:" in found.message and "pod set worker:" in found.message
    apart = explain(policy, from_manifest(_pytorchjob(11, grouped=False)))
    assert apart.verdict == "admitted", apart.message
    # The annotation alone, without a topology request, is not a group (tas.go:112-114).
    assert from_manifest(_pytorchjob(1, grouped=True)).pod_sets[0].group == "g"
    plain = _pytorchjob(1, grouped=True)
    master = plain["spec"]["pytorchReplicaSpecs"]["Master"]
    del master["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-preferred-topology"]
    assert from_manifest(plain).pod_sets[0].group is None


def test_a_pod_no_node_holds_is_not_admitted_without_a_topology(tmp_path: Path) -> None:
    """Issue 32 item 3: without a Topology Kueue admits on quota alone; a pod of 16 GPUs on
    nodes of 8 then never runs. explain says both and exits 1."""
    import json
    import shutil

    from click.testing import CliRunner

    from hetgitops.cli import main as cli

    root = tmp_path / "policies"
    shutil.copytree(REPO / "policies", root)
    fleet = root / "fleet.yaml"
    topology = "  topology:\n    name: fleet-topology\n    levels: [zone, rack, hostname]\n"
    assert topology in fleet.read_text()
    fleet.write_text(fleet.read_text().replace(topology, ""))
    policy = run.load_policy([root], NOW)
    job = _job()
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": 16}
    }
    found = explain(policy, from_manifest(job))
    assert found.kueue.admitted and found.pool == "a800-train"
    assert (found.verdict, found.reason) == ("unschedulable", "Unschedulable")
    assert found.message == (
        f"Kueue admits the quota in flavor {found.flavor} (pool a800-train); no node can hold "
        "a pod of pod set main: it asks 16 nvidia.com/gpu, the biggest node offers 8"
    )
    manifest = tmp_path / "job.json"
    manifest.write_text(json.dumps(job))
    args = ["explain", "--policy", str(root), "--now", NOW.isoformat(), "-f", str(manifest)]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 1, result.output
    assert "verdict: unschedulable" in result.output and "verdict: admitted" not in result.output
    # A pod that fits a node stays admitted.
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": 8}
    }
    assert explain(policy, from_manifest(job)).verdict == "admitted"
