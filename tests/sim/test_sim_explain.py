"""Differential test: `hetgitops explain`'s verdict against what the real Kueue v0.19.2 does.

Hundreds of seeded generated requests (tests/simcluster/workloads.py: random team, card type,
count, per-pod split, MIG profile, tolerations, tier) are submitted as batch Jobs, in batches
of one per card type so that no two of a batch share a flavor, first on the empty fleet and
then on a partly loaded one (every team holding whole nodes of its first pool). For each, the
prediction (`explain` over the Job manifest) and Kueue's Workload are compared: admitted or
pending, the flavor, and the reason (Kueue's message classified into its reason token: the
UnadmittedWorkloadsObservability gate is off by default, so the condition says `Pending`) and
the exact message. Agreement per category is printed (pytest -s) and written to
$HETGITOPS_EXPLAIN_REPORT when set. The empty fleet must agree on every request."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from simcluster import cluster, gitops
from simcluster.workloads import Generated, generate, job, rounds

from hetgitops.compilers.kueue_flavors import HOSTNAME
from hetgitops.explain import kueue
from hetgitops.explain import request as requests
from hetgitops.explain.explanation import Explanation, explain
from hetgitops.explain.nodes import pool_nodes
from hetgitops.explain.workload import from_manifest
from hetgitops.model.policy import Policy
from hetgitops.plan.capacity import main_resource
from hetgitops.plan.quota_plan import team_plan

from .checks import get, settle
from .conftest import POLICIES

# Not yet run against the real Kueue (the simulated cluster's binaries were still building when
# it was written, issue 20 note): opt in with HETGITOPS_SIM_EXPLAIN=1 until its first run has
# been checked and its disagreements explained; then this gate goes and .ci/run runs it.
OPT_IN = "HETGITOPS_SIM_EXPLAIN"
pytestmark = [
    pytest.mark.sim,
    pytest.mark.skipif(
        os.environ.get(OPT_IN) != "1", reason=f"not yet verified against Kueue; {OPT_IN}=1 runs it"
    ),
]

SEED = 20
EMPTY_COUNT = 300
LOADED_COUNT = 100


def reason_of(message: str) -> str:
    """Kueue's reason token for a pending message, as its severity rules pick it: per pod
    set the least severe among the flavors tried (flavorassigner.go:943-990)."""
    if "topology" in message and "fit" in message:
        return kueue.TOPOLOGY_PLACEMENT_FAILED
    if "insufficient unused quota" in message:
        return kueue.WAITING_FOR_QUOTA
    if "insufficient quota" in message:
        return kueue.EXCEEDS_MAX_QUOTA
    return kueue.NO_MATCHING_FLAVOR


def observed(sim: cluster.SimCluster, names: set[str]) -> dict[str, tuple[str, str, str]]:
    """Job name -> (admitted|pending, flavor, message) for every Workload Kueue has judged."""
    found: dict[str, tuple[str, str, str]] = {}
    for wl in get(sim, "workloads.kueue.x-k8s.io", "-A")["items"]:
        owners = [o["name"] for o in wl["metadata"].get("ownerReferences", [])]
        job = next((o for o in owners if o in names), None)
        if job is None:
            continue
        status = wl.get("status", {})
        if status.get("admission"):
            flavors = status["admission"]["podSetAssignments"][0].get("flavors", {})
            accel = sorted(v for k, v in flavors.items() if k not in ("cpu", "memory"))
            found[job] = ("admitted", (accel or sorted(flavors.values()))[0], "")
            continue
        for cond in status.get("conditions", []):
            if cond["type"] == "QuotaReserved" and cond["status"] == "False" and cond["message"]:
                found[job] = ("pending", "", cond["message"])
    return found


def predicted(e: Explanation) -> tuple[str, str, str]:
    if e.verdict == "admitted":
        return ("admitted", e.flavor or "", "")
    return ("pending", "", e.message)


def _judge(
    sim: cluster.SimCluster, batch: list[Generated], timeout: float = 90
) -> dict[str, tuple[str, str, str]]:
    jobs = [g.job for g in batch]
    names = {g.name for g in batch}
    gitops.apply_objects(sim, jobs, manager="hetgitops-sim-user")
    deadline = time.monotonic() + timeout
    seen: dict[str, tuple[str, str, str]] = {}
    while time.monotonic() < deadline:
        seen = observed(sim, names)
        if set(seen) == names:
            # A pending message can still grow as Kueue retries; read it once more.
            time.sleep(0.5)
            seen = observed(sim, names)
            break
        time.sleep(0.5)
    gitops.prune(sim, jobs)
    settle(lambda: _left(sim), timeout=90, what="workloads left")
    return seen


def _left(sim: cluster.SimCluster) -> list[str]:
    return [
        w["metadata"]["name"]
        for w in get(sim, "workloads.kueue.x-k8s.io", "-A")["items"]
        if not w["metadata"]["name"].startswith("sim-load")
        and not any(
            o["name"].startswith("sim-load") for o in w["metadata"].get("ownerReferences", [])
        )
    ]


class Tally:
    def __init__(self) -> None:
        self.total: Counter[str] = Counter()
        self.agree: Counter[str] = Counter()
        self.disagreements: list[dict[str, Any]] = []

    def add(
        self, g: Generated, want: tuple[str, str, str], got: tuple[str, str, str] | None
    ) -> None:
        category = f"{want[0]}:{reason_of(want[2])}" if want[0] == "pending" else "admitted"
        kinds = {"verdict": got is not None and got[0] == want[0]}
        kinds["flavor"] = got is not None and got[1] == want[1]
        kinds["reason"] = got is not None and (
            got[0] == "admitted" or reason_of(got[2]) == reason_of(want[2])
        )
        kinds["message"] = got is not None and got[2] == want[2]
        for kind, ok in kinds.items():
            self.total[kind] += 1
            self.agree[kind] += ok
        self.total[category] += 1
        whole = all(kinds.values())
        self.agree[category] += whole
        if not whole:
            self.disagreements.append(
                {
                    "job": g.name,
                    "request": repr(g.request),
                    "explain": want,
                    "kueue": got,
                }
            )

    def lines(self, title: str) -> list[str]:
        out = [f"{title}:"]
        for key in sorted(self.total):
            out.append(f"  {key:40} {self.agree[key]}/{self.total[key]}")
        return out


def _report(name: str, tally: Tally, seconds: float) -> None:
    text = "\n".join([*tally.lines(name), f"  wall time {seconds:.0f} s"])
    print(text)
    target = os.environ.get("HETGITOPS_EXPLAIN_REPORT")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(text + "\n")
            for d in tally.disagreements:
                out.write("  DISAGREE " + json.dumps(d) + "\n")


def _run(
    sim: cluster.SimCluster,
    policy: Policy,
    generated: list[Generated],
    *,
    usage: kueue.Usage | None = None,
    node_free: dict[str, dict[str, int]] | None = None,
) -> Tally:
    tally = Tally()
    for batch in rounds(generated):
        seen = _judge(sim, batch)
        for g in batch:
            want = predicted(
                explain(policy, from_manifest(g.job), usage=usage, node_free=node_free)
            )
            tally.add(g, want, seen.get(g.name))
    return tally


def test_explain_agrees_with_kueue_on_the_empty_fleet(
    sim: cluster.SimCluster, fleet_policy: Policy, synced: Path
) -> None:
    generated = generate(fleet_policy, SEED, EMPTY_COUNT)
    start = time.monotonic()
    tally = _run(sim, fleet_policy, generated)
    _report("explain vs Kueue, empty fleet", tally, time.monotonic() - start)
    assert tally.total["verdict"] >= 300
    assert not tally.disagreements, json.dumps(tally.disagreements[:5], indent=1)


def _load(policy: Policy) -> tuple[list[dict[str, Any]], kueue.Usage, dict[str, dict[str, int]]]:
    """One Job per team holding whole nodes of its first pool (half its nominal, rounded down
    to whole nodes, no borrowing), pinned by hostname so the free units per node are known."""
    jobs: list[dict[str, Any]] = []
    usage: Counter[tuple[str, str, str]] = Counter()
    node_free: dict[str, dict[str, int]] = {}
    taken: set[str] = set()
    for team in sorted(policy.teams.values(), key=lambda t: t.name):
        plans = team_plan(policy, team)
        if not plans:
            continue
        plan = plans[0]
        nodes = [n for n in pool_nodes(policy, plan.pool) if n.name not in taken]
        card = policy.card_types[plan.pool.card_type]
        resource = main_resource(plan.pool, card)
        per_node = nodes[0].units.get(resource, 0) if nodes else 0
        if not per_node:
            continue
        count = min(plan.nominal[resource] // 2 // per_node, len(nodes))
        for index, node in enumerate(nodes[:count]):
            taken.add(node.name)
            asked = requests.Request(
                team.name, gpus=per_node, pool=plan.pool.name, per_node=per_node
            )
            workload = requests.from_request(policy, asked)
            obj = job(f"sim-load-{team.name}-{index}", workload, tolerate=True, policy=policy)
            obj["spec"]["template"]["spec"]["nodeSelector"][HOSTNAME] = node.name
            jobs.append(obj)
            (pod_set,) = workload.pod_sets
            for r, v in pod_set.requests.items():
                usage[team.name, plan.pool.name, r] += v
            node_free[node.name] = {
                r: u - (per_node if r == resource else 0) for r, u in node.units.items()
            }
    return jobs, usage, node_free


def test_explain_against_kueue_on_a_partly_loaded_fleet(
    sim: cluster.SimCluster, fleet_policy: Policy, synced: Path
) -> None:
    jobs, usage, node_free = _load(fleet_policy)
    gitops.apply_objects(sim, jobs, manager="hetgitops-sim-user")
    names = {j["metadata"]["name"] for j in jobs}
    try:
        settle(
            lambda: sorted(n for n in names if observed(sim, names).get(n, ("",))[0] != "admitted"),
            timeout=120,
            what="load jobs not admitted",
        )
        generated = generate(fleet_policy, SEED + 1, LOADED_COUNT, prefix="sim-wl-loaded")
        start = time.monotonic()
        tally = _run(sim, fleet_policy, generated, usage=usage, node_free=node_free)
        _report("explain vs Kueue, partly loaded fleet", tally, time.monotonic() - start)
        assert tally.total["verdict"] >= LOADED_COUNT
        # Disagreements here are explained in the issue note; most must still agree.
        assert tally.agree["verdict"] >= 0.9 * tally.total["verdict"]
    finally:
        gitops.prune(sim, jobs)


def test_live_mode_reads_the_clusters_usage_and_a_pending_workload(
    sim: cluster.SimCluster, fleet_policy: Policy, synced: Path
) -> None:
    """`explain --kubeconfig` reads ClusterQueue flavorsUsage (the load Jobs pretraining holds
    in a800-train) and `explain workload NS/NAME` turns a pending Workload's message into the
    quota line to raise, against the real Kueue."""
    from hetgitops.cli import main as cli_main

    kubeconfig = str(sim.plane.readonly_kubeconfig)
    jobs, _, _ = _load(fleet_policy)
    mine = [j for j in jobs if "pretraining" in j["metadata"]["name"]]
    asked = requests.Request("pretraining", gpus=200, card="a800-80gb", per_node=8)
    big = job(
        "sim-live-big",
        requests.from_request(fleet_policy, asked),
        tolerate=True,
        policy=fleet_policy,
    )
    gitops.apply_objects(sim, [*mine, big], manager="hetgitops-sim-user")
    names = {j["metadata"]["name"] for j in [*mine, big]}
    try:
        settle(lambda: sorted(names - set(observed(sim, names))), timeout=120, what="verdicts")
        base = ["explain", "--policy", str(POLICIES), "--kubeconfig", kubeconfig]
        held = sum(8 for _ in mine)
        live = CliRunner().invoke(
            cli_main.main, [*base, "--team", "pretraining", "--card", "a800-80gb", "--gpus", "8"]
        )
        assert (
            f"ClusterQueue pretraining holds {held} nvidia.com/gpu in a800-train now" in live.output
        )
        report = CliRunner().invoke(
            cli_main.main, [*base, "workload", f"pretrain/{big['metadata']['name']}"]
        )
        assert report.exit_code == 1, report.output
        assert "ExceedsMaxQuota in pool a800-train: nvidia.com/gpu needs 108 more" in report.output
        assert "policies/teams/training.yaml:" in report.output
    finally:
        gitops.prune(sim, [*mine, big])
