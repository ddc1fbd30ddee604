"""A flavor rename on a busy pool, judged by the real Kueue v0.19.2, kube-scheduler and kwok.

The l40s-infer pool (4 nodes x 8 cards; online-inference holds 24, finetune-vision 8) is filled
with running 8-card jobs, then gets a NoSchedule taint: its ResourceFlavor's tolerations are
immutable once topologyName is set, so the render names a new flavor. More jobs then ask for
the pool. At every sample, Kueue's admitted usage per flavor (every admitted Workload's
`status.admission`) is compared with what the nodes hold:

- without a transition (the bug issue 19 reports), Kueue admits the new flavor's full quota on
  top of the running work: admitted cards exceed the pool's cards (double booking), and the
  newly admitted pods stay Pending;
- with `spec.kueue.retiringFlavor` as `diff` prints it, nothing is evicted, the old flavor's
  usage stays counted (the ClusterQueues' own flavorsUsage says so), nothing is admitted on top,
  `diff --kubeconfig` calls the removal NOT safe; when half the old work has finished, `holds`
  set to the usage diff prints lets exactly the freed half in; once the rest finishes diff says
  safe, the removal is synced and the waiting jobs are admitted within the pool's cards.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.simcluster import cluster, gitops, policyfleet

from hetgitops.compilers.kueue_queues import local_queue_name
from hetgitops.model.policy import Policy
from hetgitops.plan.flavors import flavor_name

from .checks import condition, converged, eventually, get
from .conftest import NOW, POLICIES, render

pytestmark = pytest.mark.sim

POOL = "l40s-infer"
CARDS = 32  # 4 nodes x 8
GPU = "nvidia.com/gpu"
LABEL = "hetgitops.io/sim-rename"
NODES = '    - {names: "gpu-l40s-[01:04]", zone: zone-b, rack: rack-b03}\n'
TAINT = "  taints:\n    - {key: hetgitops.io/dedicated, value: serving, effect: NoSchedule}\n"
# (team, jobs of 8 cards): the pool full, each team at its quota.
FILL = (("online-inference", 3), ("finetune-vision", 1))
SAMPLES = 8
# Measured figures, printed at the end of the session for the note (pytest -s).
FIGURES: dict[str, Any] = {}


def _job(policy: Policy, team: str, name: str) -> dict[str, Any]:
    spec = policy.teams[team]
    assert policy.fleet is not None
    requests = {GPU: "8", "cpu": "1"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": spec.namespaces[0],
            "labels": {
                "kueue.x-k8s.io/queue-name": local_queue_name(policy.fleet, spec),
                LABEL: "1",
            },
        },
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "completions": 1,
            "template": {
                "metadata": {"labels": {LABEL: "1"}},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"hetgitops.io/card-type": "l40s-48gb"},
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": requests, "limits": requests},
                        }
                    ],
                },
            },
        },
    }


def _submit(sim: cluster.SimCluster, policy: Policy, prefix: str) -> list[tuple[str, str]]:
    jobs = [
        _job(policy, team, f"{prefix}-{team}-{i}") for team, count in FILL for i in range(count)
    ]
    sim.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(j) for j in jobs))
    return [(j["metadata"]["namespace"], j["metadata"]["name"]) for j in jobs]


@dataclass
class Sample:
    """One look at the cluster: Kueue's admitted cards per flavor, the ClusterQueues' own
    flavorsUsage, evicted workloads, and the pods of the pool."""

    admitted: dict[str, int] = field(default_factory=dict)  # flavor -> cards (Workloads)
    queue_usage: dict[str, int] = field(default_factory=dict)  # flavor -> cards (CQ status)
    evicted: list[str] = field(default_factory=list)
    running: set[str] = field(default_factory=set)  # pod names Running on the pool
    pending: int = 0  # pods of ours not bound

    def total(self, flavors: set[str]) -> int:
        return sum(v for f, v in self.admitted.items() if f in flavors)


def _sample(sim: cluster.SimCluster) -> Sample:
    found = Sample()
    for wl in get(sim, "workloads.kueue.x-k8s.io", "-A")["items"]:
        if condition(wl, "Evicted") == "True" or condition(wl, "Preempted") == "True":
            found.evicted.append(wl["metadata"]["name"])
        if condition(wl, "QuotaReserved") != "True" or condition(wl, "Finished") == "True":
            continue
        for assignment in wl["status"]["admission"]["podSetAssignments"]:
            flavor = (assignment.get("flavors") or {}).get(GPU)
            usage = (assignment.get("resourceUsage") or {}).get(GPU)
            if flavor and usage:
                found.admitted[flavor] = found.admitted.get(flavor, 0) + int(usage)
    for cq in get(sim, "clusterqueues.kueue.x-k8s.io")["items"]:
        for entry in cq.get("status", {}).get("flavorsUsage") or []:
            for resource in entry.get("resources") or []:
                if resource["name"] == GPU:
                    amount = int(str(resource.get("total", "0")))
                    found.queue_usage[entry["name"]] = (
                        found.queue_usage.get(entry["name"], 0) + amount
                    )
    for pod in get(sim, "pods", "-A", "-l", LABEL)["items"]:
        if pod["status"].get("phase") == "Running":
            found.running.add(pod["metadata"]["name"])
        elif not pod["spec"].get("nodeName"):
            found.pending += 1
    return found


def _samples(sim: cluster.SimCluster, count: int, interval: float = 1.5) -> Iterator[Sample]:
    for _ in range(count):
        yield _sample(sim)
        time.sleep(interval)


def _pods_of(sim: cluster.SimCluster, jobs: list[tuple[str, str]]) -> set[str]:
    names = {name for _, name in jobs}
    return {
        p["metadata"]["name"]
        for p in get(sim, "pods", "-A", "-l", LABEL)["items"]
        if p["metadata"].get("labels", {}).get("job-name") in names
        and p["status"].get("phase") == "Running"
    }


def _delete(sim: cluster.SimCluster, jobs: list[tuple[str, str]]) -> None:
    for namespace, name in jobs:
        sim.kubectl("delete", "job", name, "-n", namespace, "--cascade=foreground", "--wait=false")


def _diff_live(sim: cluster.SimCluster, base: Path, head: Path) -> str:
    """`hetgitops diff --kubeconfig` as a reviewer runs it on the removal change."""
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "hetgitops"),
            "diff",
            "--base-dir",
            str(base),
            "--head-dir",
            str(head),
            "--now",
            NOW.isoformat(),
            "--kubeconfig",
            str(sim.plane.readonly_kubeconfig),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result.stdout


def _live_line(report: str) -> str:
    lines = report.splitlines()
    at = next(i for i, line in enumerate(lines) if "kueue-flavor-retired" in line)
    return next(line.strip() for line in lines[at:] if line.strip().startswith("live:"))


def _policy_dir(tmp_path: Path, name: str, entry: dict[str, Any] | None) -> Path:
    root = tmp_path / name
    shutil.copytree(POLICIES, root)
    path = root / "pools" / "inference.yaml"
    block = ""
    if entry is not None:
        text = yaml.safe_dump({"kueue": {"retiringFlavor": entry}}, sort_keys=False)
        block = "".join(f"  {line}\n" for line in text.splitlines())
    path.write_text(path.read_text().replace(NODES, NODES + TAINT + block))
    return root


def _retiring_entry(tmp_path: Path) -> dict[str, Any]:
    """The entry as `diff` proposes it for the rename (its snippet, JSON report)."""
    before, bare = POLICIES, _policy_dir(tmp_path, "snippet", None)
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "hetgitops"),
            "diff",
            "--base-dir",
            str(before),
            "--head-dir",
            str(bare),
            "--now",
            NOW.isoformat(),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads(result.stdout)
    (renamed,) = [h for h in report["hazards"] if h["rule"] == "kueue-flavor-renamed"]
    entry: dict[str, Any] = yaml.safe_load(renamed["snippet"])["kueue"]["retiringFlavor"]
    return entry


@pytest.fixture
def loaded(
    sim: cluster.SimCluster, synced: Path, fleet_policy: Policy, tmp_path: Path
) -> Iterator[tuple[Policy, list[tuple[str, str]]]]:
    """The pool full of running 8-card jobs; afterwards every job gone and the bundled tree
    back (the way test_sim_day2 restores)."""
    try:
        running = _submit(sim, fleet_policy, "old")
        eventually(
            lambda: len(_pods_of(sim, running)) == len(running) or None,
            timeout=90,
            what="the pool's jobs Running",
        )
        yield fleet_policy, running
    finally:
        sim.kubectl(
            "delete", "jobs", "-A", "-l", LABEL, "--wait=true", "--timeout=60s", check=False
        )
        trees = sorted(tmp_path.glob("tree-*"))
        policyfleet.create_from(sim, fleet_policy)
        try:
            gitops.sync_argocd(sim, synced, trees[-1] if trees else None, attempts=1)
            converged(sim, fleet_policy, synced, timeout=60)
        except (gitops.SyncFailed, AssertionError):
            gitops.prune(sim, [d for t in trees for d in gitops.documents(t)])
            gitops.sync_argocd(sim, synced)
            converged(sim, fleet_policy, synced)


def _change(
    sim: cluster.SimCluster, synced: Path, tmp_path: Path, name: str, entry: dict[str, Any] | None
) -> tuple[Policy, Path]:
    policy_dir = _policy_dir(tmp_path, name, entry)
    tree = render(policy_dir, tmp_path / f"tree-{name}")
    policy = policyfleet.load(policy_dir, now=NOW)
    policyfleet.create_from(sim, policy)
    previous = sorted(p for p in tmp_path.glob("tree-*") if p != tree)
    gitops.sync_argocd(sim, tree, previous[-1] if previous else synced)
    converged(sim, policy, tree)
    return policy, tree


def _kueue_messages(sim: cluster.SimCluster, jobs: list[tuple[str, str]]) -> dict[str, str]:
    """Job name -> the QuotaReserved=False message of its Workload (what Kueue says)."""
    names = {name for _, name in jobs}
    found: dict[str, str] = {}
    for wl in get(sim, "workloads.kueue.x-k8s.io", "-A")["items"]:
        owner = next(
            (o["name"] for o in wl["metadata"].get("ownerReferences", []) if o["name"] in names),
            None,
        )
        for cond in wl.get("status", {}).get("conditions", []):
            if owner and cond["type"] == "QuotaReserved" and cond["status"] == "False":
                found[owner] = cond.get("message", "")
    return found


def _explain_agrees(
    sim: cluster.SimCluster, policy: Policy, before: Policy, jobs: list[tuple[str, str]]
) -> tuple[int, dict[str, tuple[str, str]]]:
    """explain's message for each waiting job Kueue has judged (the transition policy, offline)
    against the real Kueue's; returns the number compared and the disagreements, as (explain,
    Kueue)."""
    from hetgitops.explain.explanation import explain
    from hetgitops.explain.workload import from_manifest

    last: list[dict[str, str]] = [{}]

    def judged() -> dict[str, str] | None:
        # Kueue judges one head per ClusterQueue at a time (the jobs behind an inadmissible
        # head carry no QuotaReserved condition yet): one verdict per team is what there is.
        last[0] = _kueue_messages(sim, jobs)
        teams = {next(t for t, _ in FILL if f"-{t}-" in name) for name in last[0]}
        return last[0] if len(teams) == len(FILL) else None

    try:
        seen = eventually(judged, timeout=90, what="Kueue's verdict on every waiting job")
    except AssertionError:
        items = get(sim, "workloads.kueue.x-k8s.io", "-A")["items"]
        states = {w["metadata"]["name"]: (w.get("status") or {}).get("conditions") for w in items}
        raise AssertionError(f"seen {last[0]}; workloads: {json.dumps(states)[:3000]}") from None
    wrong = {}
    for name in sorted(seen):
        team = next(t for t, _ in FILL if f"-{t}-" in name)
        manifest = _job(before, team, name)
        predicted = explain(policy, from_manifest(manifest)).message
        if predicted != seen[name]:
            wrong[name] = (predicted, seen[name])
    return len(seen), wrong


def _flavors(policy: Policy) -> str:
    assert policy.fleet is not None
    return flavor_name(policy, policy.fleet, policy.pools[POOL])


def test_a_rename_without_transition_double_books_the_pool(
    sim: cluster.SimCluster, synced: Path, loaded: Any, tmp_path: Path
) -> None:
    before, running = loaded
    old = _flavors(before)
    after, _ = _change(sim, synced, tmp_path, "bare", None)
    new = _flavors(after)
    assert new != old
    _submit(sim, before, "new")
    seen: list[Sample] = []

    def double_booked() -> Sample | None:
        # Kueue admits the new jobs, then the Job controller makes their pods: the state the
        # test means is both done, so wait for it instead of taking the worst of a few looks.
        seen.append(_sample(sim))
        last = seen[-1]
        full = last.total({old, new}) == 2 * CARDS and last.pending == len(running)
        return last if full else None

    try:
        booked = eventually(double_booked, timeout=120, what="the new jobs admitted and Pending")
    except AssertionError as error:
        raise AssertionError(f"{error}; last sample: {seen[-1] if seen else None}") from None
    FIGURES["without transition"] = {
        "admitted cards per flavor (settled)": booked.admitted,
        "ClusterQueue flavorsUsage": booked.queue_usage,
        "pool cards": CARDS,
        "pods Pending": booked.pending,
        "evicted": len(booked.evicted),
    }
    print(f"\nwithout transition: {FIGURES['without transition']}")
    # The bug: Kueue admits the new flavor's full quota on top of the running work, and the
    # newly admitted pods find no node with room.
    assert booked.admitted.get(new) == CARDS and booked.admitted.get(old) == CARDS
    assert old not in booked.queue_usage  # no ClusterQueue counts the old flavor any more
    assert _pods_of(sim, running) == {p for p in booked.running if p.startswith("old-")}


def test_a_rename_with_transition_keeps_the_old_usage_counted_until_it_drains(
    sim: cluster.SimCluster, synced: Path, loaded: Any, tmp_path: Path
) -> None:
    before, running = loaded
    old = _flavors(before)
    pods = _pods_of(sim, running)
    entry = _retiring_entry(tmp_path)
    assert entry["name"] == old
    after, _ = _change(sim, synced, tmp_path, "transition", entry)
    new = _flavors(after)
    waiting = _submit(sim, before, "new")
    # explain models the transition as Kueue does: the new flavor's quota less all the retiring
    # one holds ("maximum capacity (0)"), the retiring flavor's taint untolerated.
    compared, disagreements = _explain_agrees(sim, after, before, waiting)
    FIGURES["explain during the transition"] = {
        "agree": compared - len(disagreements),
        "of": compared,
    }
    print(f"\nexplain during the transition: {FIGURES['explain during the transition']}")
    assert not disagreements, disagreements
    samples = list(_samples(sim, SAMPLES))
    for sample in samples:
        assert not sample.evicted, sample
        assert sample.admitted.get(old) == CARDS, sample  # still counted ...
        assert sample.queue_usage.get(old) == CARDS, sample  # ... by the ClusterQueues too
        assert sample.total({old, new}) <= CARDS, sample  # no double booking
        assert pods <= sample.running, sample  # the running work kept running
    FIGURES["with transition"] = {
        "admitted cards per flavor (every sample)": samples[-1].admitted,
        "ClusterQueue flavorsUsage": samples[-1].queue_usage,
        "pool cards": CARDS,
        "new jobs pending": len(waiting),
        "evicted": 0,
    }
    print(f"\nwith transition: {FIGURES['with transition']}")
    removal = _policy_dir(tmp_path, "removal", None)
    report = _diff_live(sim, tmp_path / "transition", removal)
    assert "kueue-flavor-retired" in report and "NOT safe yet" in report, report
    print(f"\nremoval diff while running: {_live_line(report)}")
    # Half the old work finishes: the waiting jobs still wait (the new flavor's quota is 0).
    finished = [j for j in running if j[1].endswith(("-1", "-2")) and "online" in j[1]]
    _delete(sim, finished)
    eventually(
        lambda: _sample(sim).admitted.get(old) == CARDS // 2 or None,
        timeout=60,
        what="half the old work gone",
    )
    assert not _sample(sim).admitted.get(new)
    # `holds` set to what diff --kubeconfig says the old flavor still holds: the new flavor
    # gets the rest, and Kueue admits exactly that much, never more than the nodes hold.
    report = _diff_live(sim, tmp_path / "transition", removal)
    holds = yaml.safe_load(report.split("still admitted there ", 1)[1].split("; keep", 1)[0])
    assert holds == {
        "finetune-vision": {"cpu": "1", GPU: "8"},
        "online-inference": {"cpu": "1", GPU: "8"},
    }, report
    _change(sim, synced, tmp_path, "transition2", {**entry, "holds": holds})
    partial = eventually(
        lambda: ((s := _sample(sim)).admitted.get(new) == CARDS // 2 and s) or None,
        timeout=60,
        what="the freed half admitted on the new flavor",
    )
    reclaimed: set[str] = set()
    for sample in [partial, *_samples(sim, SAMPLES // 2)]:
        # The running work is never evicted. New work may be: a queue whose new quota is held
        # back can borrow a cohort member's, and Kueue reclaims it (reclaimWithinCohort) when
        # the lender's own jobs arrive; that is ordinary cohort borrowing, counted here.
        assert not [w for w in sample.evicted if w.startswith("job-old-")], sample
        reclaimed |= set(sample.evicted)
        assert sample.admitted.get(old) == CARDS // 2, sample
        assert sample.total({old, new}) <= CARDS, sample
    FIGURES["with holds"] = {
        "admitted cards per flavor": partial.admitted,
        "holds": holds,
        "new workloads reclaimed by cohort preemption": sorted(reclaimed),
    }
    print(f"\nwith holds: {FIGURES['with holds']}")
    # The rest of the old work finishes.
    _delete(sim, [j for j in running if j not in finished])
    eventually(lambda: not _sample(sim).admitted.get(old) or None, timeout=60, what="old work gone")
    drained = _sample(sim)
    assert drained.admitted.get(new) == CARDS // 2, drained
    report = _diff_live(sim, tmp_path / "transition2", removal)
    assert "safe to remove now" in report, report
    print(f"\nremoval diff once drained: {_live_line(report)}")
    # The removal change: the new flavor gets its full quota and admits the waiting jobs.
    _change(sim, synced, tmp_path, "zremoval", None)
    admitted = eventually(
        lambda: ((s := _sample(sim)).admitted.get(new) == CARDS and s) or None,
        timeout=60,
        what="the waiting jobs admitted on the new flavor",
    )
    assert admitted.total({old, new}) == CARDS and not admitted.evicted, admitted
    eventually(
        lambda: len(_pods_of(sim, waiting)) == len(waiting) or None,
        timeout=60,
        what="the waiting jobs Running",
    )
    FIGURES["after removal"] = {"admitted cards per flavor": admitted.admitted}
    print(f"\nafter removal: {FIGURES['after removal']}")
