"""Volcano day-2 against the real queue webhook (v1.14.1, tests/harness/simcluster).

1. The admission replay of tests/day2 (volcano_admission.py) is held against the real webhook
   request by request: with `rules=V1_14` it must agree on every one; the v1.15.1 rules differ
   exactly where the two releases' validate_queue.go differ.
2. Migration from the tree hetgitops rendered before the flat-queue change (a team queue at
   wave 0 holding its `<team>-<pool>` leaves at wave 1) to the current flat tree, and back,
   synced once the Argo CD way and once the Flux way: the migration converges on the tools'
   own retries (see the test's docstring for why one pass is not promised).

The day-2 policy matrix itself (quota, team, pool, taint, labels, MIG, tier) runs in
test_sim_day2.py, whose trees include the Volcano Queues: with the webhook-manager running every
sync there passes Volcano admission, and `converged` waits for each Queue to be Open.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from day2.volcano_admission import V1_14, V1_15, Cluster, Queue, Rejected
from harness.simcluster import cluster, gitops

from hetgitops.model import quantities

from .checks import closed_volcano_queues, get, settle

pytestmark = pytest.mark.sim

Obj = dict[str, Any]
PREFIX = "sim-replay-"
MANAGER = "hetgitops-sim-replay"
GPU = "nvidia.com/gpu"
# How long the webhook's queue informer may take to see a write before the test gives up.
INFORMER_DEADLINE = 60.0


def _q(
    name: str,
    parent: str,
    *,
    capability: dict[str, str] | None = None,
    deserved: dict[str, str] | None = None,
    guarantee: dict[str, str] | None = None,
) -> Obj:
    spec: Obj = {"parent": parent if parent == "root" else PREFIX + parent, "weight": 1}
    for key, value in (("capability", capability), ("deserved", deserved)):
        if value is not None:
            spec[key] = value
    if guarantee is not None:
        spec["guarantee"] = {"resource": guarantee}
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": PREFIX + name},
        "spec": spec,
    }


def _gpus(name: str, parent: str, cards: int, guarantee: int = 0) -> Obj:
    amount = {GPU: str(cards)}
    return _q(
        name,
        parent,
        capability=amount,
        deserved=amount,
        guarantee={GPU: str(guarantee)} if guarantee else None,
    )


# (operation, object or name). "apply" is what server-side apply sends (CREATE, else UPDATE).
STEPS: list[tuple[str, Any]] = [
    ("apply", _gpus("team", "root", 80, 40)),
    ("apply", _gpus("team-a800", "team", 80, 40)),
    ("apply", _gpus("team", "root", 72, 36)),  # the old tree's shrink, parent first
    ("apply", _gpus("team-a800", "team", 88, 44)),  # the old tree's grow, child first
    ("apply", _gpus("team", "root", 88, 44)),
    ("apply", _gpus("team-b", "team", 8, 8)),  # children's guarantee over the parent's
    ("dry-run", _gpus("orphan", "missing", 8)),  # Flux dry-runs a child before its parent
    ("delete", "team"),  # a parent with a child
    ("apply", _gpus("team-a800", "root", 80, 40)),  # the migration: a leaf moves to root
    ("delete", "team"),  # then the parent goes
    ("apply", _q("nocap", "root", deserved={GPU: "16"})),
    ("apply", _q("nocap-child", "nocap", capability={GPU: "8"}, deserved={GPU: "8"})),
    ("apply", _q("caponly", "root", capability={GPU: "16"})),
    ("apply", _q("caponly-child", "caponly", capability={GPU: "8"}, deserved={GPU: "8"})),
    ("apply", _q("partial", "root", capability={GPU: "8"}, deserved={"cpu": "4", GPU: "8"})),
]
# Steps where the v1.15.1 rules (the replay's default) and v1.14.1 disagree, and why.
RELEASE_DIFFERENCES = {
    11: "v1.14.1 checks a child's capability against its direct parent's: none there means 0",
    13: "v1.14.1 falls back to the parent's capability when it sets no deserved",
    14: "v1.14.1 counts a dimension capability leaves out (cpu) as 0, v1.15.1 as unlimited",
}


def _replay(rules: str) -> list[bool]:
    replay = Cluster(rules=rules)
    accepted = []
    for operation, arg in STEPS:
        try:
            if operation == "delete":
                replay.delete(PREFIX + arg)
            else:
                replay.apply(arg, dry_run=operation == "dry-run")
        except Rejected:
            accepted.append(False)
        else:
            accepted.append(True)
    return accepted


def _real(sim: cluster.SimCluster, operation: str, arg: Any) -> tuple[bool, str]:
    if operation == "delete":
        result = sim.kubectl(
            "delete", "--wait=false", f"queues.scheduling.volcano.sh/{PREFIX}{arg}", check=False
        )
    else:
        dry = ["--dry-run=server"] if operation == "dry-run" else []
        result = sim.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            f"--field-manager={MANAGER}",
            *dry,
            "-f",
            "-",
            input=json.dumps(arg),
            check=False,
        )
    _barrier(sim)
    return result.returncode == 0, (result.stdout + result.stderr).strip()


_barriers = iter(range(1_000_000))


def _barrier(sim: cluster.SimCluster) -> None:
    """Wait until the webhook's queue informer has seen every write made so far.

    The webhook judges each request against its informer's cache, not the API server
    (validate_queue.go:347, :397 of v1.14.1 read `config.QueueLister`), so a request made right
    after a write may be judged on the state before it. The informer receives a resource's
    events in resourceVersion order: once it has seen a queue created after those writes, it
    has seen them all. That queue is a fresh empty `barrier-N` under root; the webhook shows it
    has it by accepting a server-side dry run of a child under it, which it refuses with
    "parent queue ... not found" until then (validate_queue.go:397-399)."""
    name = f"barrier-{next(_barriers)}"
    created = sim.kubectl("apply", "-f", "-", input=json.dumps(_q(name, "root")), check=False)
    assert created.returncode == 0, f"cannot create the informer barrier {name}: {created.stderr}"
    probe = json.dumps(_q(f"{name}-probe", name))
    deadline = time.monotonic() + INFORMER_DEADLINE
    while True:
        seen = sim.kubectl("apply", "--dry-run=server", "-f", "-", input=probe, check=False)
        if seen.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the Volcano webhook did not see queue {PREFIX}{name} within "
                f"{INFORMER_DEADLINE:.0f}s; its last answer: {seen.stderr.strip()}"
            )
        time.sleep(0.2)


@pytest.fixture
def scratch_queues(sim: cluster.SimCluster) -> Iterator[None]:
    _delete_scratch(sim)
    yield
    _delete_scratch(sim)


def _delete_scratch(sim: cluster.SimCluster) -> None:
    """Children before parents: the webhook refuses a parent until its informer has seen its
    children go, so leaves are deleted round after round until no scratch queue is left."""
    deadline = time.monotonic() + INFORMER_DEADLINE
    while True:
        listed = json.loads(
            sim.kubectl("get", "queues.scheduling.volcano.sh", "-o", "json").stdout
        )["items"]
        mine = {q["metadata"]["name"]: q for q in listed}
        mine = {name: q for name, q in mine.items() if name.startswith(PREFIX)}
        if not mine:
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"scratch queues left after {INFORMER_DEADLINE:.0f}s: {sorted(mine)}"
            )
        parents = {q["spec"].get("parent") for q in mine.values()}
        leaves = [name for name in mine if name not in parents]
        sim.kubectl("delete", "--wait=false", "queues.scheduling.volcano.sh", *leaves, check=False)
        time.sleep(0.5)


def test_replay_agrees_with_the_real_webhook(
    sim: cluster.SimCluster, synced: Path, scratch_queues: None
) -> None:
    real = [_real(sim, operation, arg) for operation, arg in STEPS]
    v1_14, v1_15 = _replay(V1_14), _replay(V1_15)
    disagreements = [
        f"step {i} {STEPS[i][0]} {_label(STEPS[i][1])}: real {'accepted' if ok else 'refused'}"
        f" ({message[-160:]}), replay {'accepted' if v1_14[i] else 'refused'}"
        for i, (ok, message) in enumerate(real)
        if ok != v1_14[i]
    ]
    assert not disagreements, "\n".join(disagreements)
    # The v1.15.1 replay differs from the real v1.14.1 webhook exactly on the listed steps.
    assert {i for i in range(len(STEPS)) if v1_15[i] != v1_14[i]} == set(RELEASE_DIFFERENCES)


def _label(arg: Any) -> str:
    return str(arg) if isinstance(arg, str) else str(arg["metadata"]["name"])


# ---- migration: old team tree <-> flat tree ----------------------------------------------


def old_tree(flat: Path, out: Path) -> Path:
    """The pre-flat render of the same policy, built by the old compiler's rule (git history
    of hetgitops/compilers/volcano.py before d99aa55): per team a queue under root at wave 0
    whose deserved, capability and guarantee are the sums of its leaves; the `<team>-<pool>`
    leaves (unchanged) under it at wave 1."""
    documents = gitops.documents(flat)
    leaves = [d for d in documents if d["kind"] == "Queue"]
    teams: dict[str, list[Obj]] = {}
    for leaf in leaves:
        teams.setdefault(leaf["metadata"]["labels"]["hetgitops.io/team"], []).append(leaf)
    queues: list[Obj] = []
    for team, members in sorted(teams.items()):
        queues.append(_team_queue(team, members))
        for leaf in members:
            moved = copy.deepcopy(leaf)
            moved["spec"]["parent"] = team
            moved["metadata"]["annotations"][gitops.SYNC_WAVE] = "1"
            queues.append(moved)
    out.mkdir(parents=True)
    others = [d for d in documents if d["kind"] != "Queue"]
    (out / "objects.yaml").write_text(yaml.safe_dump_all(others + queues, sort_keys=False))
    (out / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": ["objects.yaml"]}, sort_keys=False)
    )
    return out


def _team_queue(team: str, leaves: list[Obj]) -> Obj:
    first = leaves[0]
    labels = {k: v for k, v in first["metadata"]["labels"].items() if k != "hetgitops.io/pool"}
    spec: Obj = {"parent": "root", "weight": first["spec"]["weight"], "reclaimable": True}
    for field in ("deserved", "capability"):
        spec[field] = _sum([leaf["spec"].get(field, {}) for leaf in leaves])
    guarantee = _sum([leaf["spec"].get("guarantee", {}).get("resource", {}) for leaf in leaves])
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    spec["dequeueStrategy"] = "traverse"
    return {
        "apiVersion": first["apiVersion"],
        "kind": "Queue",
        "metadata": {
            "name": team,
            "labels": labels,
            "annotations": {gitops.SYNC_WAVE: "0"},
        },
        "spec": spec,
    }


def _sum(maps: list[dict[str, str]]) -> dict[str, str]:
    total: dict[str, Decimal] = {}
    for values in maps:
        for name, amount in values.items():
            total[name] = total.get(name, Decimal(0)) + quantities.value_of(amount)
    return {
        name: quantities.canonical(value, binary=name == "memory") for name, value in total.items()
    }


SYNCS: dict[str, Callable[..., None]] = {"argocd": gitops.sync_argocd, "flux": gitops.sync_flux}


def test_old_tree_is_what_the_old_compiler_admitted(bundled_tree: Path, tmp_path: Path) -> None:
    """The synthesised old tree installs under both rule sets (else the migration below would
    start from a tree no one could have had)."""
    old = gitops.documents(old_tree(bundled_tree / "volcano", tmp_path / "old"))
    ordered = sorted((d for d in old if d["kind"] == "Queue"), key=gitops.wave)
    for rules in (V1_14, V1_15):
        replay = Cluster(rules=rules)
        for obj in ordered:
            replay.apply(obj)
        assert {q.parent for q in replay.queues.values() if q.name not in ("root", "default")} - {
            "root"
        }, "no leaf under a team queue"
        assert all(isinstance(q, Queue) for q in replay.queues.values())


def _restore_flat(sim: cluster.SimCluster, flat: Path, old: Path) -> None:
    gitops.sync_argocd(sim, flat, old, attempts=3)
    settle(lambda: closed_volcano_queues(sim, flat), timeout=60, what="flat tree restored")
    left = {q["metadata"]["name"] for q in get(sim, "queues.scheduling.volcano.sh")["items"]}
    assert not left & _team_names(old), "a team queue of the old tree is left"


def _team_names(old: Path) -> set[str]:
    return {
        d["metadata"]["name"]
        for d in gitops.documents(old)
        if d["kind"] == "Queue" and "hetgitops.io/pool" not in d["metadata"]["labels"]
    }


@pytest.mark.parametrize("tool", sorted(SYNCS))
def test_migration_from_team_tree_to_flat_tree_converges(
    sim: cluster.SimCluster, synced: Path, tmp_path: Path, tool: str
) -> None:
    """Old tree installed, then the flat tree synced over it: the leaves move to root in the
    apply, the emptied team queues are pruned after it.

    Not always in one pass: Volcano's webhook counts a queue's children from its informer
    cache (validate_queue.go, the delete check), so a prune that reaches it before the cache
    has seen the leaves move is refused ("queue research can not be deleted because it has 1
    child queues", seen from the real Flux on a loaded CI machine). Both tools retry a failed
    sync (Flux at the Kustomization's retryInterval, Argo CD with its sync retry), and the next
    attempt succeeds: convergence is what is asserted, as docs/targets/volcano.md says."""
    flat = synced / "volcano"
    old = old_tree(flat, tmp_path / "old")
    try:
        gitops.sync_argocd(sim, old, flat, attempts=3)  # the old tree as it was installed
        settle(lambda: closed_volcano_queues(sim, old), timeout=60, what="old tree installed")
        SYNCS[tool](sim, flat, old, attempts=3)
        settle(lambda: closed_volcano_queues(sim, flat), timeout=60, what=f"{tool} migrated")
    finally:
        _restore_flat(sim, flat, old)


# A rollback to the old tree: Argo CD creates the team queues in wave 0 and moves the leaves
# under them in wave 1; Flux dry-runs the whole stage first, where no team queue exists yet.
ROLLBACK_REFUSAL = {"argocd": None, "flux": "failed to get parent queue"}


@pytest.mark.parametrize("tool", sorted(SYNCS))
def test_rollback_from_flat_tree_to_team_tree(
    sim: cluster.SimCluster, synced: Path, tmp_path: Path, tool: str
) -> None:
    flat = synced / "volcano"
    old = old_tree(flat, tmp_path / "old")
    refusal = ROLLBACK_REFUSAL[tool]
    try:
        if refusal is None:
            SYNCS[tool](sim, old, flat, attempts=1)
            settle(lambda: closed_volcano_queues(sim, old), timeout=60, what=f"{tool} rollback")
        else:
            # Every retry dry-runs against the same cluster: it never converges on its own.
            with pytest.raises(gitops.SyncFailed, match=refusal):
                SYNCS[tool](sim, old, flat, attempts=2)
    finally:
        _restore_flat(sim, flat, old)
