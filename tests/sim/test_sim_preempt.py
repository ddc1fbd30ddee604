"""Differential test: `explain --preempt`'s victims against the Workloads the real Kueue v0.19.2
evicts (issue 37 item 1), on six pools of the bundled fleet at once (`preempt_lanes.LANES`: one
cohort with lending limits, everything lent, isolated, reclaim across cohorts, time-sliced).

Per round (seeded): every lane's pool is filled with generated Jobs of its teams until Kueue has
judged them all and nothing moves. Then, `HETGITOPS_PREEMPT_PROBES` times over the same fill: the
admitted Workloads are read live (`preemption_input.live_view`, the reader `explain --preempt
--kubeconfig` uses), the model predicts the victims of one generated higher-priority probe per
lane, the probes are submitted together, the victims Kueue really evicts for each (Preempted
conditions naming the probe's UID) are read, and the probes are deleted, which gives their quota
back to the fill (the victims are requeued and readmitted; the next probe is predicted from the
state read again). Per probe: the victim set by name, and by what tells victims apart for Kueue
(ClusterQueue, priority, admission time, usage: candidates equal in all of these Kueue orders by
UID, the model by name). The agreement is printed (pytest -s) and written to
$HETGITOPS_PREEMPT_REPORT when set."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from harness.simcluster import cluster, gitops

from hetgitops.explain.nodes import pool_nodes
from hetgitops.explain.preemption_input import live_view
from hetgitops.explain.preemption_report import preempt
from hetgitops.explain.state import Holder
from hetgitops.explain.workload import Workload
from hetgitops.live import workloads
from hetgitops.live.client import Cluster
from hetgitops.model.policy import Policy

from .checks import get, settle
from .preempt_lanes import LANES, ROUND, Lane, fillers, make_job, probe, workload

pytestmark = pytest.mark.sim

SEED = 37
ROUNDS = int(os.environ.get("HETGITOPS_PREEMPT_ROUNDS", "2"))
PROBES = int(os.environ.get("HETGITOPS_PREEMPT_PROBES", "2"))


def _workloads(sim: cluster.SimCluster, names: set[str]) -> dict[str, dict[str, Any]]:
    """Job name -> its Workload, for the Jobs of `names`."""
    found = {}
    for wl in get(sim, "workloads.kueue.x-k8s.io", "-A")["items"]:
        for owner in wl["metadata"].get("ownerReferences", []):
            if owner["name"] in names:
                found[owner["name"]] = wl
    return found


def _state(wl: dict[str, Any]) -> str:
    for cond in wl.get("status", {}).get("conditions", []):
        if cond["type"] == "QuotaReserved":
            return f"{cond['status']}:{cond.get('message', '')}"
    return "unjudged"


def _quiet(sim: cluster.SimCluster, names: set[str], timeout: float = 180) -> None:
    """Wait until every Job of `names` has its Workload, none is still being evicted, and
    three reads agree (a preemption among them settles in that time)."""
    last: list[dict[str, str]] = []

    def moving() -> list[str]:
        found = _workloads(sim, names)
        seen = {n: _state(w) for n, w in found.items()}
        missing = sorted(n for n in names if n not in seen)
        # An evicted Workload keeps its quota until its Job has stopped: read then, the
        # snapshot has a victim Kueue no longer sees once the probe arrives.
        missing += sorted(
            f"{n} still evicting"
            for n, w in found.items()
            if workloads.evicted(w) and workloads.holds_quota(w)
        )
        last.append(seen)
        changed = len(last) < 3 or any(s != seen for s in last[-3:])
        return missing or (["still changing"] if changed else [])

    settle(moving, timeout=timeout, what="workloads not judged or settled")


def _holders(
    sim: cluster.SimCluster, policy: Policy
) -> tuple[list[Holder], dict[str, dict[str, int]]]:
    """What `explain --preempt --kubeconfig` reads: the admitted Workloads and what Kueue's
    topology-aware cache has free per node."""
    reader = Cluster(sim.plane.readonly_kubeconfig, None)
    try:
        view = live_view(policy, reader)
    finally:
        reader.close()
    # Every node of the policy is a kwok node of the fleet: the reading sees them all.
    assert not view.notes, view.notes
    return view.holders, view.free


def _tie_breaks(
    policy: Policy,
    asked: Workload,
    holders: list[Holder],
    free: dict[str, dict[str, int]],
    rng: random.Random,
) -> list[tuple[str, list[str]]]:
    """The outcome and victims under other tie-breaks: candidates equal in everything Kueue
    orders by (evicted, queue, priority, admission time to the second) it orders by UID, which
    the model cannot know; it orders them by name. Each shuffle renames the holders so that
    their names order them at random, and maps the victims back. The outcome can change too:
    with topology, the first of two tied candidates may free the wrong node, and then the
    queue is back within nominal and the second is spared (candidateIsValid)."""
    found = []
    for _ in range(24):
        order = list(range(len(holders)))
        rng.shuffle(order)
        renamed = [
            dataclasses.replace(h, name=f"{k:03d}|{h.name}")
            for k, h in zip(order, holders, strict=True)
        ]
        said = preempt(policy, asked, renamed, free)
        victims = sorted(f"{v.name.split('|', 1)[1]}:{v.reason}" for v in said.victims)
        found.append((said.outcome, victims))
    return found


# Kueue's words for each reason in a Preempted message, longest first (preemption.go:162-168).
REASON_WORDS = (
    ("reclamation within the cohort while borrowing", "InCohortReclaimWhileBorrowing"),
    ("reclamation within the cohort", "InCohortReclamation"),
    ("Fair Sharing within the cohort", "InCohortFairSharing"),
    ("prioritization in the ClusterQueue", "InClusterQueue"),
)


def _preempted_by(condition: dict[str, Any], uid: str) -> str | None:
    """Kueue's reason if the Preempted condition names the probe: True, or reset to False by a
    re-admission since (SetQuotaReservation, workload.go:907-912: reason QuotaReserved, message
    "Previously: " + the old one), which a victim readmitted at once on free room shows by the
    time the probe is read."""
    message = str(condition.get("message", ""))
    if condition.get("type") != "Preempted" or f"UID: {uid}" not in message:
        return None
    if condition.get("status") == "True":
        return str(condition["reason"])
    if message.startswith("Previously: "):
        return next((r for words, r in REASON_WORDS if f"due to {words};" in message), "")
    return None


def _evicted(found: dict[str, dict[str, Any]], uid: str) -> list[str]:
    return sorted(
        f"{w['metadata']['namespace']}/{w['metadata']['name']}:{reason}"
        for w in found.values()
        for c in w.get("status", {}).get("conditions", [])
        if (reason := _preempted_by(c, uid)) is not None
    )


def _detail(
    holders: list[Holder],
    found: dict[str, dict[str, Any]],
    name: str,
    pool: str,
    free: dict[str, dict[str, int]],
    nodes: set[str],
) -> dict[str, Any]:
    """What both saw: every holder (with where it holds the pool's nodes), what the model took
    to be free on the pool's nodes, and Kueue's own word on the probe."""
    return {
        "holders": [
            [h.name, h.cluster_queue, h.priority, h.admitted, h.evicted,
             {f"{p}/{r}": v for (p, r), v in sorted(h.usage.items())},
             {n: dict(u) for n, u in sorted(h.placed.items())}]
            for h in holders
            if any(p == pool for p, _ in h.usage)
        ],
        "free": {n: free[n] for n in sorted(free) if n in nodes},
        "probe_status": found[name].get("status", {}).get("conditions", []),
        "probe_admission": found[name].get("status", {}).get("admission"),
    }  # fmt: skip


def _judge(
    policy: Policy, lane: Lane, sent: dict[str, Any], found: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """One probe's row: what the model said and what Kueue did."""
    holders, asked, said, free = sent["holders"], sent["workload"], sent["said"], sent["free"]
    nodes = {n.name for n in pool_nodes(policy, policy.pools[lane.pool])}
    name = sent["job"]["metadata"]["name"]
    evicted = _evicted(found, found[name]["metadata"]["uid"])
    predicted = sorted(f"{v.name}:{v.reason}" for v in said.victims)
    admitted = _state(found[name]).startswith("True")
    # What Kueue did: admitted at once, preempted to admit it, or left it pending.
    did = "preempt" if evicted else ("fits" if admitted else "none")
    exact = predicted == evicted and did == said.outcome
    shuffled = random.Random(sent["number"])
    tied = exact or (did, evicted) in _tie_breaks(policy, asked, holders, free, shuffled)
    team, units, tier = sent["asked"]
    # Kueue's workloadFits also wants a topology assignment for the probe's pods after the
    # removals (preemption.go:676-680; every bundled flavor is topology-aware). Until the
    # model replayed it, this was the one class of difference left (10 of 216); counted apart
    # so a return of it is named, and no longer excused.
    topology = did == "none" and said.outcome == "preempt"
    return {
        **({} if exact else {"detail": _detail(holders, found, name, lane.pool, free, nodes)}),
        "round": sent["number"],
        "pool": lane.pool,
        "probe": f"{team} {units} units, tier {tier}",
        "kueue": did,
        "outcome": said.outcome,
        "predicted": predicted,
        "evicted": evicted,
        "exact": exact,
        "equivalent": tied,
        "topology": topology and not tied,
    }


def _probe_all(
    sim: cluster.SimCluster,
    policy: Policy,
    rng: random.Random,
    at: tuple[int, int],
    names: set[str],
) -> list[dict[str, Any]]:
    """The `at` = (round, k)th probe of each lane, all predicted from one read of the live
    state and submitted together; deleted once judged. `names`: the round's fillers."""
    number, k = at
    holders, free = _holders(sim, policy)
    sent = []
    for lane in LANES:
        asked = probe(lane, rng)
        obj = make_job(policy, lane, f"sim-pre-{number}-{lane.pool}-p{k}", asked, number)
        chosen = workload(policy, lane, *asked)
        said = preempt(policy, chosen, holders, free)
        sent.append((lane, {"job": obj, "asked": asked, "workload": chosen, "said": said,
                            "holders": holders, "free": free, "number": number}))  # fmt: skip
    probes = {s["job"]["metadata"]["name"] for _, s in sent}
    gitops.apply_objects(sim, [s["job"] for _, s in sent], manager="hetgitops-sim-user")
    _quiet(sim, names | probes)
    found = _workloads(sim, names | probes)
    rows = [_judge(policy, lane, s, found) for lane, s in sent]
    for name in sorted(probes):
        where = found[name]["metadata"]["namespace"]
        sim.kubectl("delete", "job", "-n", where, name, "--wait=false")
    settle(lambda: sorted(_workloads(sim, probes)), timeout=120, what="probes left")
    return rows


def _round(
    sim: cluster.SimCluster, policy: Policy, rng: random.Random, number: int
) -> list[dict[str, Any]]:
    filled = [j for lane in LANES for j in fillers(policy, lane, rng, number)]
    names = {j["metadata"]["name"] for j in filled}
    gitops.apply_objects(sim, filled, manager="hetgitops-sim-user")
    rows: list[dict[str, Any]] = []
    try:
        for k in range(PROBES):
            _quiet(sim, names)
            rows += _probe_all(sim, policy, rng, (number, k), names)
        return rows
    finally:
        sim.kubectl("delete", "jobs", "-A", "-l", f"{ROUND}={number}", "--wait=false")
        settle(lambda: sorted(_workloads(sim, names)), timeout=120, what="workloads left")


def _table(results: list[dict[str, Any]]) -> list[str]:
    """Per pool: probes, Kueue's outcomes, victim sets equal by name and up to UID ties."""
    lines = []
    for lane in LANES:
        mine = [r for r in results if r["pool"] == lane.pool]
        did = Counter(r["kueue"] for r in mine)
        reasons = Counter(v.split(":")[1] for r in mine for v in r["evicted"])
        lines.append(
            f"  {lane.pool}: {len(mine)} probes (fits {did['fits']}, preempt {did['preempt']}, "
            f"none {did['none']}), equal {sum(r['exact'] for r in mine)}, up to UID ties "
            f"{sum(r['equivalent'] for r in mine)}, topology {sum(r['topology'] for r in mine)}; "
            f"reasons {dict(sorted(reasons.items()))}"
        )
    return lines


def test_preempt_predicts_the_workloads_kueue_evicts(
    sim: cluster.SimCluster, fleet_policy: Policy, synced: Path
) -> None:
    rng = random.Random(SEED)
    start = time.monotonic()
    results = [row for n in range(ROUNDS) for row in _round(sim, fleet_policy, rng, n)]
    exact = sum(r["exact"] for r in results)
    equivalent = sum(r["equivalent"] for r in results)
    topology = sum(r["topology"] for r in results)
    preempting = sum(bool(r["evicted"]) for r in results)
    lines = [
        f"explain --preempt vs Kueue: {len(results)} probes ({preempting} with evictions) on "
        f"{len(LANES)} pools, victim sets equal {exact}, equal under some order of the "
        f"candidates Kueue ties by UID {equivalent}; Kueue found no topology placement where the "
        f"model preempts {topology}; wall time {time.monotonic() - start:.0f} s",
        *_table(results),
        *(f"  TOPOLOGY {json.dumps(r)}" for r in results if r["topology"]),
        *(f"  DISAGREE {json.dumps(r)}" for r in results if not r["equivalent"]),
    ]
    print("\n".join(lines))
    target = os.environ.get("HETGITOPS_PREEMPT_REPORT")
    if target:
        Path(target).write_text("\n".join([*lines, *(json.dumps(r) for r in results)]) + "\n")
    # Every probe agrees, up to Kueue's tie-break by UID (docs/explain.md), the topology class
    # included since the model replays the placement.
    assert equivalent == len(results), "\n".join(lines)
