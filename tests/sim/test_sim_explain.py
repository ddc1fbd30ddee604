"""Differential test: `hetgitops explain`'s verdict against what the real Kueue v0.19.2 does.

Hundreds of seeded generated requests (tests/harness/simcluster/workloads.py: random team, card
type, count, per-pod split, MIG profile, tolerations, tier) are submitted as batch Jobs, in batches
of one per card type so that no two of a batch share a flavor, first on the empty fleet and
then on a partly loaded one (every team holding whole nodes of its first pool). For each, the
prediction (`explain` over the Job manifest) and Kueue's Workload are compared: admitted or
pending, the flavor, and the reason (Kueue's message classified into its reason token: the
UnadmittedWorkloadsObservability gate is off by default, so the condition says `Pending`) and
the exact message. Agreement per category is printed (pytest -s) and written to
$HETGITOPS_EXPLAIN_REPORT when set. The empty fleet must agree on every request.

Speed (it runs in .ci/run): requests whose predicted verdict cannot depend on what else runs
(pending for a reason Kueue decides from the ClusterQueue alone: a flavor mismatch, an
uncovered resource, more than PotentialAvailable) share batches freely; one that holds quota or
nodes (admitted, or placed by topology) is alone in its card type's flavor per batch. A
prediction that is wrong still shows: its own verdict disagrees."""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from harness.simcluster import cluster, gitops
from harness.simcluster.explain_requests import edge_requests
from harness.simcluster.fleet import node_resources
from harness.simcluster.workloads import Generated, generate, job

from hetgitops.explain import kueue_messages, quotas
from hetgitops.explain import request as requests
from hetgitops.explain.explanation import Explanation, explain
from hetgitops.explain.nodes import pool_nodes
from hetgitops.explain.workload import from_manifest
from hetgitops.model.policy import Policy
from hetgitops.plan.capacity import main_resource
from hetgitops.plan.flavors import HOSTNAME
from hetgitops.plan.quota_plan import kueue_amount, team_plan

from .checks import get, settle
from .conftest import POLICIES

pytestmark = pytest.mark.sim

SEED = 20
EMPTY_COUNT = 300
EDGE_COUNT = 40  # of the 300: topology edges (explain_requests)
LOADED_COUNT = 60
BATCH = "hetgitops.io/sim-batch"
# Predicted categories and how many of each the empty fleet takes (in generation order), so
# that few batches cover them: what holds quota or nodes needs a batch of its own per card.
CAPS = {"admitted": 150, "NoMatchingFlavor": 80, "ExceedsMaxQuota": 80}
PER_CARD = 22
MAX_BATCH = 12


def reason_of(message: str) -> str:
    """Kueue's reason token for a pending message, as its severity rules pick it: per pod
    set the least severe among the flavors tried (flavorassigner.go:943-990)."""
    if "topology" in message and "fit" in message:
        return kueue_messages.TOPOLOGY_PLACEMENT_FAILED
    if "insufficient unused quota" in message:
        return kueue_messages.WAITING_FOR_QUOTA
    if "insufficient quota" in message:
        return kueue_messages.EXCEEDS_MAX_QUOTA
    return kueue_messages.NO_MATCHING_FLAVOR


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


def queue_gpus(sim: cluster.SimCluster, queue: str, pool: str) -> int:
    """The GPUs a ClusterQueue's own status says it holds in one pool's flavor (named
    `<pool>-<hash of its node selection>`)."""
    cq = get(sim, "clusterqueues.kueue.x-k8s.io", queue)
    for entry in cq.get("status", {}).get("flavorsUsage") or []:
        if entry["name"].rpartition("-")[0] != pool:
            continue
        for resource in entry.get("resources") or []:
            if resource["name"] == "nvidia.com/gpu":
                return kueue_amount("nvidia.com/gpu", str(resource.get("total", "0")))
    return 0


def kueue_admits(e: Explanation) -> bool:
    """Kueue admits the Workload: explain's verdict may still be pending when no node can hold
    a pod of it (Unschedulable, explain/fit.py), which Kueue without a Topology does not check."""
    return e.verdict == "admitted" or (e.kueue is not None and e.kueue.admitted)


def predicted(e: Explanation) -> tuple[str, str, str]:
    if kueue_admits(e):
        return ("admitted", e.flavor or "", "")
    return ("pending", "", e.message)


def also(e: Explanation) -> set[str]:
    """Messages Kueue may equally show: after a topology failure in a flavor that is not its
    ClusterQueue's last, the Workload's condition alternates between that failure and the
    resumed cycle's verdict as Kueue requeues it (both were seen, run to run, for the same
    request on Kueue v0.19.2)."""
    if e.kueue is None or not e.kueue.cycles or e.kueue.admitted:
        return set()
    return {c.message for c in e.kueue.cycles} | {e.kueue.message}


def _judge(
    sim: cluster.SimCluster,
    batch: list[Generated],
    number: int,
    expected: Callable[[str, tuple[str, str, str]], bool],
    timeout: float = 180,
) -> dict[str, tuple[str, str, str]]:
    """Submit the batch and read the verdicts until every Workload shows what `expected` accepts
    (Kueue's verdict is not final at its first condition: a topology failure is followed by a
    second cycle that may admit), or until the timeout, after which what was last seen is the
    answer and any difference is reported as a disagreement. Then delete the batch and wait
    until its Workloads are gone."""
    jobs = []
    for g in batch:
        obj = json.loads(json.dumps(g.job))
        obj["metadata"]["labels"][BATCH] = str(number)
        jobs.append(obj)
    names = {g.name for g in batch}
    gitops.apply_objects(sim, jobs, manager="hetgitops-sim-user")
    deadline = time.monotonic() + timeout
    seen: dict[str, tuple[str, str, str]] = {}
    while time.monotonic() < deadline:
        seen = observed(sim, names)
        if set(seen) == names and all(expected(name, got) for name, got in seen.items()):
            break
        time.sleep(0.3)
    sim.kubectl("delete", "jobs", "-A", "-l", f"{BATCH}={number}", "--wait=false")
    settle(lambda: _left(sim, names), timeout=90, what="workloads left")
    return seen


def _left(sim: cluster.SimCluster, names: set[str]) -> list[str]:
    return [
        w["metadata"]["name"]
        for w in get(sim, "workloads.kueue.x-k8s.io", "-A")["items"]
        if any(o["name"] in names for o in w["metadata"].get("ownerReferences", []))
    ]


def _usage_free(e: Explanation) -> bool:
    """Pending before any quota check (no flavor matches, or a resource no flavor covers):
    nothing any other request does changes its verdict or message."""
    if e.verdict != "pending" or e.kueue is None or e.kueue.cycles:
        return False
    attempts = [a for r in e.kueue.pod_sets for a in r.attempts]
    return e.reason == kueue_messages.NO_MATCHING_FLAVOR and all(
        a.reason == kueue_messages.NO_MATCHING_FLAVOR
        and a.mode == "nofit"
        and not a.borrowing
        and all(
            "doesn't match" in m or "TopologyAwareScheduling" in m or "level" in m
            for m in a.messages
        )
        for a in attempts
    )


def _holds(e: Explanation) -> bool:
    """Takes quota or nodes (admitted), or is decided by the nodes (topology placement)."""
    return kueue_admits(e) or (
        e.kueue is not None
        and (bool(e.kueue.cycles) or e.reason == kueue_messages.TOPOLOGY_PLACEMENT_FAILED)
    )


def batches(predicted_: list[tuple[Generated, Explanation]]) -> list[list[Generated]]:
    """Every card type is one pool in the bundled fleet and requests select their card, so
    requests of different card types never share a flavor or a node. Per card type a batch
    holds at most one request that takes quota or nodes; a pending one that Kueue checks
    against quota (its message lists every resource, "insufficient unused quota" for those
    another request's usage shortens) goes only into a batch without such a holder of its
    card; the usage-free ones spread over all batches."""
    holders: dict[str, list[Generated]] = {}
    quota: dict[str, list[Generated]] = {}
    free: list[Generated] = []
    for g, e in predicted_:
        if _usage_free(e):
            free.append(g)
        elif _holds(e):
            holders.setdefault(g.card, []).append(g)
        else:
            quota.setdefault(g.card, []).append(g)
    count = max((len(h) for h in holders.values()), default=0)
    if any(quota.get(c) and len(holders.get(c, [])) >= count for c in quota):
        count += 1
    found: list[list[Generated]] = [[] for _ in range(max(count, 1))]
    for items in holders.values():
        for index, g in enumerate(items):
            found[index].append(g)
    for card, items in quota.items():
        spare = list(range(len(holders.get(card, [])), len(found)))
        for g in items:
            # the least filled batch without a holder of this card; a new one when all are
            # full (Kueue judges one head per ClusterQueue per cycle: big batches wait long)
            index = min(spare, key=lambda i: len(found[i]))
            if len(found[index]) >= MAX_BATCH:
                found.append([])
                spare.append(len(found) - 1)
                index = spare[-1]
            found[index].append(g)
    per = math.ceil(len(free) / len(found))
    for index, batch in enumerate(found):
        batch.extend(free[index * per : (index + 1) * per])
    return [b for b in found if b]


def _category(e: Explanation) -> str:
    return "admitted" if e.verdict == "admitted" else e.reason


def category(e: Explanation) -> str:
    """The report's row: the verdict and reason, and the cycles a placement failure started."""
    if kueue_admits(e) and e.verdict != "admitted":
        return f"admitted, explain says {e.reason}"
    if e.verdict == "admitted":
        return "admitted" + (" after TopologyPlacementFailed" if e.kueue and e.kueue.cycles else "")
    if e.kueue is not None and e.kueue.cycles:
        return f"pending:TopologyPlacementFailed, then {e.kueue.reason}"
    return f"pending:{e.reason}"


def chosen(policy: Policy, seed: int, count: int) -> list[Generated]:
    """`count` requests: the topology edges, then the seeded random mix in generation order
    up to each predicted category's cap (CAPS), every other pending reason kept."""
    picked: list[Generated] = []
    taken: Counter[str] = Counter()
    bound: Counter[str] = Counter()  # usage-bound requests per card type: the batch count
    for g in [*edge_requests(policy, seed, EDGE_COUNT), *generate(policy, seed, count * 5)]:
        if len(picked) >= count:
            break
        e = explain(policy, from_manifest(g.job))
        category = _category(e)
        if taken[category] >= CAPS.get(category, count):
            continue
        if _holds(e):
            if bound[g.card] >= PER_CARD:
                continue
            bound[g.card] += 1
        taken[category] += 1
        picked.append(g)
    return picked


class Tally:
    def __init__(self) -> None:
        self.total: Counter[str] = Counter()
        self.agree: Counter[str] = Counter()
        self.disagreements: list[dict[str, Any]] = []

    def add(
        self,
        g: Generated,
        want: tuple[str, str, str],
        got: tuple[str, str, str] | None,
        category: str | None = None,
        alternatives: set[str] | None = None,
    ) -> None:
        if category is None:
            category = f"{want[0]}:{reason_of(want[2])}" if want[0] == "pending" else "admitted"
        messages = {want[2], *(alternatives or ())}
        kinds = {"verdict": got is not None and got[0] == want[0]}
        kinds["flavor"] = got is not None and got[1] == want[1]
        kinds["reason"] = got is not None and (
            got[0] == "admitted" or reason_of(got[2]) in {reason_of(m) for m in messages}
        )
        kinds["message"] = got is not None and got[2] in messages
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
    usage: quotas.Usage | None = None,
    node_free: dict[str, dict[str, int]] | None = None,
    timeout: float = 180,
) -> Tally:
    tally = Tally()
    pairs = [
        (g, explain(policy, from_manifest(g.job), usage=usage, node_free=node_free))
        for g in generated
    ]
    want = {g.name: (predicted(e), category(e), also(e)) for g, e in pairs}
    seen: dict[str, tuple[str, str, str]] = {}

    def expected(name: str, got: tuple[str, str, str]) -> bool:
        (verdict, flavor, message), _, alternatives = want[name]
        return got[:2] == (verdict, flavor) and got[2] in {message, *alternatives}

    groups = batches(pairs)
    for number, batch in enumerate(groups):
        seen.update(_judge(sim, batch, number, expected, timeout))
    # A Workload Kueue had not judged when its batch timed out (seen once under load 20+:
    # the same request alone is judged in seconds) gets one more try, alone.
    for number, g in enumerate((g for g, _ in pairs if g.name not in seen), len(groups)):
        seen.update(_judge(sim, [g], number, expected))
    for g, _ in pairs:
        verdict, row, alternatives = want[g.name]
        tally.add(g, verdict, seen.get(g.name), row, alternatives)
    return tally


def test_explain_agrees_with_kueue_on_the_empty_fleet(
    sim: cluster.SimCluster, fleet_policy: Policy, synced: Path
) -> None:
    generated = chosen(fleet_policy, SEED, EMPTY_COUNT)
    start = time.monotonic()
    tally = _run(sim, fleet_policy, generated, node_free=node_sizes(fleet_policy))
    _report("explain vs Kueue, empty fleet", tally, time.monotonic() - start)
    assert tally.total["verdict"] >= 300
    assert not tally.disagreements, json.dumps(tally.disagreements[:5], indent=1)


def _load(policy: Policy) -> tuple[list[dict[str, Any]], quotas.Usage, dict[str, dict[str, int]]]:
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
            sizes = node_sizes(policy)
            node_free[node.name] = {
                r: u - pod_set.requests.get(r, 0) for r, u in sizes[node.name].items()
            }
    return jobs, usage, {**node_sizes(policy), **node_free}


def node_sizes(policy: Policy) -> dict[str, dict[str, int]]:
    """What each simulated node offers (simcluster.fleet: its accelerators, and cpu and memory
    for its cards plus a spare the policy does not state), told to explain the way live mode
    reads Nodes: the topology placement's limiting resource depends on them."""
    found: dict[str, dict[str, int]] = {}
    for pool in policy.pools.values():
        for node in pool.nodes:
            sizes = node_resources(policy, pool, node)
            found[node.name] = {
                r: kueue_amount(r, str(v)) for r, v in sizes.items() if r not in ("pods",)
            }
    return found


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
        held = sum(8 for _ in mine)
        # Kueue writes a ClusterQueue's status.flavorsUsage in its own reconcile, after the
        # Workloads are admitted (a fresh-clone CI run read it one reconcile early): wait for
        # the queue itself to show the load before asking explain what it holds.

        def usage() -> list[str]:
            shown = queue_gpus(sim, "pretraining", "a800-train")
            if shown == held:
                return []
            verdicts = observed(sim, names)
            return [f"it shows {shown}", *(f"{n}: {verdicts.get(n)}" for n in sorted(names))]

        settle(
            usage, timeout=60, what=f"ClusterQueue pretraining to show {held} GPUs in a800-train"
        )
        base = ["explain", "--policy", str(POLICIES), "--kubeconfig", kubeconfig]
        live = CliRunner().invoke(
            cli_main.main, [*base, "--team", "pretraining", "--card", "a800-80gb", "--gpus", "8"]
        )
        said = f"ClusterQueue pretraining holds {held} nvidia.com/gpu in a800-train now"
        assert said in live.output, live.output
        report = CliRunner().invoke(
            cli_main.main, [*base, "workload", f"pretrain/{big['metadata']['name']}"]
        )
        assert report.exit_code == 1, report.output
        assert "ExceedsMaxQuota in pool a800-train: nvidia.com/gpu needs 108 more" in report.output
        assert "policies/teams/training.yaml:" in report.output
    finally:
        gitops.prune(sim, [*mine, big])
