"""Issue 38, the five day-2 answers made exact: each hazard tested against `diff` on policy
pairs (or the manifests it reads), with its live radius where it has one."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetgitops.diff.blast import LiveWork, annotate
from hetgitops.diff.hazards import Hazard, hazards
from hetgitops.diff.run import DiffResult
from hetgitops.output.manifests import Manifest
from tests.diff.test_blast import TEAMS, pod


def _priority_class(name: str, value: int) -> Manifest:
    obj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    return Manifest("core", obj)


def test_a_recreated_priority_class_counts_the_tier_pods_a_controller_could_recreate() -> None:
    """(3) Pods of the tier that a controller owns are what it recreates while the class is
    gone; a bare pod (no owner), a finished one and another tier's are not counted."""
    (recreated,) = hazards([_priority_class("online", 1000)], [_priority_class("online", 2000)], [])
    work = LiveWork(
        pods=[
            pod("d-0", "serve", "n1", priorityClassName="online"),
            pod("d-1", "serve", "n2", priorityClassName="online"),
            pod("bare", "serve", "n2", priorityClassName="online", owners=[]),
            pod("t-0", "train", "n1", priorityClassName="training"),
            {
                **pod("done", "serve", "n1", priorityClassName="online"),
                "status": {"phase": "Failed"},
            },
        ],
        team_of_namespace=TEAMS,
    )
    (counted,) = annotate([recreated], work)
    assert counted.live == (
        "live: of the tier that a controller could recreate during the gap (refused while the "
        "class is gone): 2 pod(s) (online-inference 2)"
    )


FLEET_SINGLE = ("fleet.yaml", "    migStrategy: mixed\n", "    migStrategy: single\n")
H100_UNIFORM = (
    "pools/inference.yaml",
    "      - gpus: [0, 1]\n        profiles: {1g.10gb: 7}\n"
    "      - gpus: [2, 3]\n        profiles: {3g.40gb: 2}\n",
    "      - gpus: all\n        profiles: {1g.10gb: 7}\n",
)
# Under single a MIG pool's quota is written in slices (`mig:`): the bundled h100-infer quotas
# become slices of the one profile, so both sides validate.
H100_QUOTAS = [
    (
        "teams/others.yaml",
        "      cards: 16\n      mig: {1g.10gb: 56, 3g.40gb: 24}\n",
        "      mig: {1g.10gb: 56}\n",
    ),
    ("teams/training.yaml", "    - {pool: h100-infer, normalized: 23.2}\n", ""),
]


def test_switching_to_mig_strategy_single_says_whole_gpu_pods_become_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(5) mixed -> single: the MIG pool h100-infer gets the hazard at the fleet's migStrategy
    line; its live radius counts only the pods on its nodes that request nvidia.com/gpu."""
    from tests.diff.test_hazards import _compare

    result = _compare(
        tmp_path,
        monkeypatch,
        [H100_UNIFORM, *H100_QUOTAS],
        [FLEET_SINGLE, H100_UNIFORM, *H100_QUOTAS],
    )
    assert not result.invalid
    (single,) = [h for h in result.hazards if h.rule == "mig-strategy-single"]
    assert single.subject == "Pool h100-infer"
    assert "runs on one 1g.10gb slice, not a GPU" in single.message
    assert single.span.line == 22 and single.span.file.endswith("fleet.yaml")
    whole = {"requests": {"nvidia.com/gpu": "1"}}
    slice_ = {"requests": {"nvidia.com/mig-1g.10gb": "1"}}
    work = LiveWork(
        pods=[
            pod("w-0", "serve", "gpu-h100-001", containers=[{"name": "c", "resources": whole}]),
            pod("s-0", "serve", "gpu-h100-001", containers=[{"name": "c", "resources": slice_}]),
            pod("w-1", "serve", "gpu-l40s-01", containers=[{"name": "c", "resources": whole}]),
        ],
        team_of_namespace=TEAMS,
    )
    (counted,) = annotate([single], work)
    assert counted.live.endswith(": 1 pod(s) (online-inference 1)")
    # Already single on both sides: nothing to announce.
    again = _compare(
        tmp_path / "again",
        monkeypatch,
        [FLEET_SINGLE, H100_UNIFORM, *H100_QUOTAS],
        [FLEET_SINGLE, H100_UNIFORM, *H100_QUOTAS],
    )
    assert not [h for h in again.hazards if h.rule == "mig-strategy-single"]


SHARING_OFF = ("pools/dev.yaml", "  timeSlicing:\n    replicas: 4\n", "")
RENAMED = (
    "pools/dev.yaml",
    "  timeSlicing:\n    replicas: 4\n",
    "  timeSlicing:\n    replicas: 4\n    renameByDefault: true\n",
)
# rtx4090-dev: 3 nodes of 4 GPUs (12 whole GPUs); the quotas 32 + 16 replicas, lowered to fit.
WHOLE_QUOTAS = [
    ("teams/others.yaml", "{pool: rtx4090-dev, cards: 32}", "{pool: rtx4090-dev, cards: 8}"),
    ("teams/others.yaml", "{pool: rtx4090-dev, cards: 16}", "{pool: rtx4090-dev, cards: 4}"),
]


def _sharing_off(result: DiffResult) -> Hazard:
    found = [h for h in result.hazards if h.rule == "sharing-reduced"]
    assert len(found) == 1, [h.rule for h in result.hazards]
    return found[0]


def test_turning_time_slicing_off_gives_a_staged_path_the_schema_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(1) The mode comes from the old pool (timeSlicing, not mps) and no `replicas: 1` is
    proposed: step 1 lowers the quotas keeping the stanza (valid, and no sharing hazard),
    step 2 removes it and says when it is safe, node by node."""
    from tests.diff.test_hazards import _compare

    one = _sharing_off(_compare(tmp_path / "one", monkeypatch, [], [SHARING_OFF, *WHOLE_QUOTAS]))
    assert "mps" not in one.action and "replicas: 1" not in one.action
    assert "keep spec.timeSlicing as it is and lower the quotas on pool rtx4090-dev to 12" in (
        one.action
    )
    assert "admit 48 nvidia.com/gpu" in one.message
    assert ("capacity", "nvidia.com/gpu|12") in one.scope
    step1 = _compare(tmp_path / "step1", monkeypatch, [], WHOLE_QUOTAS)
    assert not step1.invalid and not [h for h in step1.hazards if h.rule.startswith("sharing")]
    step2 = _compare(tmp_path / "step2", monkeypatch, WHOLE_QUOTAS, [SHARING_OFF, *WHOLE_QUOTAS])
    last = _sharing_off(step2)
    assert "already fit 12 nvidia.com/gpu (step 1 done)" in last.message
    assert last.action.startswith("merge only when")
    # 12 replicas in use in all fit 12 GPUs, but 8 of them on dev-4090-1 (4 GPUs) do not.
    requests = {"requests": {"nvidia.com/gpu": "1"}}
    packed = LiveWork(
        pods=[
            pod(
                f"p{i}",
                "train",
                "dev-4090-1" if i < 8 else "dev-4090-2",
                containers=[{"name": "c", "resources": requests}],
            )
            for i in range(12)
        ]
    )
    (live,) = annotate([last], packed)
    assert "NOT safe yet: above the new capacity on dev-4090-1 (8 in use, 4 after)" in live.live
    spread = LiveWork(pods=packed.pods[:4] + packed.pods[8:])
    (fine,) = annotate([last], spread)
    assert fine.live.endswith("8 nvidia.com/gpu in use on those nodes, 12 after: safe now")


def test_turning_renamed_time_slicing_off_says_drain_those_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(1) With renameByDefault the pods hold nvidia.com/gpu.shared, which vanishes while the
    same GPUs become free nvidia.com/gpu: no staged path, drain."""
    from tests.diff.test_hazards import _compare

    off = _sharing_off(_compare(tmp_path, monkeypatch, [RENAMED], [SHARING_OFF, *WHOLE_QUOTAS]))
    assert off.action.startswith("drain those nodes")
    assert "two steps" not in off.action
    assert "request nvidia.com/gpu.shared" in off.message


MLU_POOL = (
    "---\napiVersion: hetgitops.io/v1alpha1\nkind: Pool\nmetadata:\n  name: mlu370-eval\n"
    "spec:\n  description: One Cambricon MLU370 node under evaluation; volunteers only.\n"
    "  cardType: mlu370-x8\n  purpose: batch\n  cardsPerNode: 8\n  nodes:\n"
    "    - {names: mlu-370-01, zone: zone-c, rack: rack-c03}\n  taints:\n"
    "    - {key: hetgitops.io/pool, value: mlu370-eval, effect: NoSchedule}\n  labels:\n"
    "    hetgitops.io/cost-center: cc-research\n"
)
POOL_REMOVED = [
    ("pools/dev.yaml", MLU_POOL, ""),
    ("teams/others.yaml", "    - {pool: mlu370-eval, cards: 8}\n", ""),
]


def _podgroup(name: str, queue: str, phase: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "research"},
        "spec": {"queue": queue, "minMember": 2},
        "status": {"phase": phase, "running": 2 if phase == "Running" else 0},
    }


def test_removing_a_pool_under_a_volcano_gang_is_a_hazard_on_every_volcano(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(4) The bundled fleet declares Volcano 1.15.1: pruning the pool's Queue is announced at
    the queue's policy line and the live radius counts the running gangs in it and, apart, the
    waiting ones (never scheduled once the queue goes). Declared 1.14.1 (no queue-delete
    check), the prune is not refused, but a waiting gang is still stranded: the hazard says
    that much and no more."""
    from tests.diff.test_hazards import _compare

    result = _compare(tmp_path / "v115", monkeypatch, [], POOL_REMOVED)
    assert not result.invalid
    (pruned,) = [h for h in result.hazards if h.rule == "volcano-queue-pruned"]
    assert pruned.subject == "Queue research-mlu370-eval"
    assert "--enable-queue-allocated-pods-check (off by default)" in pruned.message
    assert pruned.span.file.endswith("others.yaml") and pruned.span.line > 1
    work = LiveWork(
        podgroups=[
            _podgroup("gang-a", "research-mlu370-eval", "Running"),
            _podgroup("gang-b", "research-mlu370-eval", "Pending"),
            _podgroup("gang-c", "research-rtx4090-dev", "Running"),
        ],
        team_of_namespace={"research": "research"},
    )
    (live,) = annotate([pruned], work)
    assert live.live.endswith(
        "gangs in the queue (one still waiting when it goes is never scheduled; under the 1.15 "
        "delete check the prune is refused while one runs): 1 running and 1 waiting "
        "PodGroup(s) (research 2)"
    )
    assert "status.allocated.pods" in pruned.action
    v114 = ("fleet.yaml", 'volcano: "1.15.1"', 'volcano: "1.14.1"')
    older = _compare(tmp_path / "v114", monkeypatch, [v114], [v114, *POOL_REMOVED])
    assert not older.invalid
    (unchecked,) = [h for h in older.hazards if h.rule == "volcano-queue-pruned"]
    assert unchecked.subject == "Queue research-mlu370-eval"
    assert "Volcano 1.14.1 deletes a Queue whatever is in it" in unchecked.message
    assert "never scheduled" in unchecked.message
    assert "allocated-pods-check" not in unchecked.message + unchecked.action


# GPU 1 of every h100-infer node goes from 7 x 1g.10gb to 2 x 3g.40gb, and online-inference's
# quota follows: 3g.40gb 24 -> 36 on nodes whose old layout holds 24 (6 nodes x 2 GPUs x 2).
REPARTITION = (
    "pools/inference.yaml",
    "      - gpus: [0, 1]\n        profiles: {1g.10gb: 7}\n"
    "      - gpus: [2, 3]\n        profiles: {3g.40gb: 2}\n",
    "      - gpus: [0]\n        profiles: {1g.10gb: 7}\n"
    "      - gpus: [1, 2, 3]\n        profiles: {3g.40gb: 2}\n",
)
QUOTA_FOLLOWS = (
    "teams/others.yaml",
    "mig: {1g.10gb: 56, 3g.40gb: 24}",
    "mig: {1g.10gb: 14, 3g.40gb: 36}",
)
QUOTA_STAYS = (
    "teams/others.yaml",
    "mig: {1g.10gb: 56, 3g.40gb: 24}",
    "mig: {1g.10gb: 14, 3g.40gb: 24}",
)


def _mig_pod(name: str, node: str, resource: str) -> dict[str, object]:
    requests = {"requests": {resource: "1"}}
    return pod(name, "serve", node, containers=[{"name": "c", "resources": requests}])


def test_a_mig_repartition_with_the_quota_following_says_the_pool_is_overbooked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(2) The quota that follows the new layout overbooks the pool during the sync (by 12
    nvidia.com/mig-3g.40gb: quotas 36, the old layout holds 24); the live radius counts the pods
    requesting the slices GPU 1 held (1g.10gb), not whole-GPU or 3g.40gb pods on the nodes."""
    from tests.diff.test_hazards import _compare

    result = _compare(tmp_path / "follows", monkeypatch, [], [REPARTITION, QUOTA_FOLLOWS])
    assert not result.invalid
    (remade,) = [h for h in result.hazards if h.rule == "mig-repartition"]
    assert (
        "pool h100-infer is overbooked during the sync by 12 nvidia.com/mig-3g.40gb (quotas 36, "
        "the old layout holds 24)" in remade.message
    )
    assert "keep the quotas within what the old layout holds (24 nvidia.com/mig-3g.40gb)" in (
        remade.action
    )
    work = LiveWork(
        pods=[
            _mig_pod("s-0", "gpu-h100-001", "nvidia.com/mig-1g.10gb"),
            _mig_pod("s-1", "gpu-h100-002", "nvidia.com/mig-1g.10gb"),
            _mig_pod("m-0", "gpu-h100-001", "nvidia.com/mig-3g.40gb"),
            _mig_pod("w-0", "gpu-h100-001", "nvidia.com/gpu"),
            _mig_pod("o-0", "gpu-l40s-01", "nvidia.com/mig-1g.10gb"),
        ],
        team_of_namespace=TEAMS,
    )
    (live,) = annotate([remade], work)
    assert live.live == (
        "live: on the nodes, requesting the MIG slices being re-made: 2 pod(s) (online-inference 2)"
    )
    stays = _compare(tmp_path / "stays", monkeypatch, [], [REPARTITION, QUOTA_STAYS])
    (quiet,) = [h for h in stays.hazards if h.rule == "mig-repartition"]
    assert "overbooked" not in quiet.message
