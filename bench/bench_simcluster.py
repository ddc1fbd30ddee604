"""Benchmark of the simulated cluster at scale: 5,000 kwok nodes from a policy.

Usage (from the repository root, hetgitops importable, Go or cached binaries, kubectl):

    python bench/bench_simcluster.py                  # 5,000 nodes
    python bench/bench_simcluster.py --nodes 1000     # smaller
    python bench/bench_simcluster.py --keep /tmp/big  # keep the generated policy there

The bundled policy is scaled up: every pool's node ranges are rewritten so the pools keep their
share of the fleet (one range per pool, in one rack), quotas stay as they are. The benchmark
uses its own state directory (HETGITOPS_SIMCLUSTER_DIR, default `<tmp>/hetgitops-bench-sim`)
and stops everything it started. It prints, in seconds: `up` (every component started, binaries
cached), `fleet` (Nodes + NodeFeatures created and every node Ready), `apply` (the render tree
synced the Argo CD way until every queue is Active and every node nfd-master can label carries
its labels, and every Volcano Queue is Open), and per team the time from submitting a one-card
Job to its admission by Kueue, with their median. `up` is broken down per component (the
harness' state.json). This is a benchmark, not a test: it asserts nothing and prints a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
NOW = dt.date(2026, 12, 1)


def scaled_policy(target: Path, nodes: int) -> Path:
    """Copy the bundled policy and give each pool its share of `nodes`."""
    shutil.copytree(REPO / "policies", target)
    pool_files = sorted((target / "pools").glob("*.yaml"))
    docs_by_file = {p: list(yaml.safe_load_all(p.read_text())) for p in pool_files}
    pools = [d for docs in docs_by_file.values() for d in docs if d and d["kind"] == "Pool"]
    current = {p["metadata"]["name"]: _count(p) for p in pools}
    total = sum(current.values())
    left = nodes
    for index, pool in enumerate(pools):
        name = pool["metadata"]["name"]
        share = left if index == len(pools) - 1 else max(1, nodes * current[name] // total)
        left -= share
        first = pool["spec"]["nodes"][0]
        entry = {k: v for k, v in first.items() if k != "names"}
        entry["names"] = f"{name}-n[00001:{share:05d}]"
        pool["spec"]["nodes"] = [entry]
    for path, docs in docs_by_file.items():
        path.write_text(yaml.safe_dump_all([d for d in docs if d], sort_keys=False))
    return target


def _count(pool: dict[str, Any]) -> int:
    total = 0
    for entry in pool["spec"]["nodes"]:
        names = entry["names"]
        if "[" in names:
            low, high = names[names.index("[") + 1 : names.index("]")].split(":")
            total += int(high) - int(low) + 1
        else:
            total += 1
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--keep", type=Path, help="keep the generated policy in this folder")
    args = parser.parse_args()
    os.environ.setdefault(
        "HETGITOPS_SIMCLUSTER_DIR", str(Path(tempfile.gettempdir()) / "hetgitops-bench-sim")
    )
    from harness.simcluster import cluster, gitops, policyfleet
    from sim.checks import converged, eventually, get
    from sim.test_sim_quota import _queue, job

    work = Path(tempfile.mkdtemp(prefix="hetgitops-bench-sim-"))
    policy_dir = scaled_policy(args.keep or work / "policy", args.nodes)
    tree = work / "tree"
    hetgitops = Path(sys.executable).parent / "hetgitops"
    started = time.monotonic()
    subprocess.run(
        [str(hetgitops), "render", str(policy_dir), "--now", str(NOW), "--output", str(tree)],
        check=True,
        capture_output=True,
    )
    figures: list[tuple[str, float]] = [("render", time.monotonic() - started)]
    started = time.monotonic()
    policy = policyfleet.load(policy_dir, now=NOW)
    figures.append(("load + validate the policy (Python)", time.monotonic() - started))
    try:
        started = time.monotonic()
        sim = cluster.up()
        figures.append(("up", time.monotonic() - started))
        state = json.loads((sim.run_dir / "state.json").read_text())
        for component, seconds in state["start_seconds"].items():
            figures.append((f"  up: {component}", seconds))
        started = time.monotonic()
        steps: dict[str, float] = {}
        count = policyfleet.create_from(sim, policy, timeout=1800, timings=steps)
        figures.append((f"fleet ({count} nodes Ready)", time.monotonic() - started))
        figures += [(f"  fleet: {step}", seconds) for step, seconds in steps.items()]
        started = time.monotonic()
        gitops.sync_argocd(sim, tree)
        converged(sim, policy, tree, timeout=1800)
        figures.append(("apply (Argo CD order, converged)", time.monotonic() - started))
        admissions: list[float] = []
        for team in sorted(policy.teams.values(), key=lambda t: t.name):
            plan = next(iter(policyfleet_plans(policy, team)), None)
            if plan is None:
                continue
            pool, resource = plan
            namespace, queue = _queue(sim, team.name)
            obj = job(f"bench-{team.name}", namespace, queue, pool, resource, 1, 1)
            started = time.monotonic()
            gitops.apply_objects(sim, [obj], manager="hetgitops-bench")

            def admitted(ns: str = namespace) -> bool:
                items = get(sim, "workloads.kueue.x-k8s.io", "-n", ns)["items"]
                return any(w.get("status", {}).get("admission") for w in items)

            eventually(admitted, timeout=300, what=f"{team.name} admitted")
            seconds = time.monotonic() - started
            admissions.append(seconds)
            figures.append((f"admit one job: {team.name} ({pool.name})", seconds))
            gitops.prune(sim, [obj])
        if admissions:
            figures.append(("admit one job: median over teams", statistics.median(admissions)))
    finally:
        cluster.down()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    width = max(len(name) for name, _ in figures)
    for name, seconds in figures:
        print(f"{name:<{width}}  {seconds:8.1f}")
    return 0


def policyfleet_plans(policy: Any, team: Any) -> list[tuple[Any, str]]:
    """(pool, resource) of the team's quotas on pools whose node agents run (labelled nodes)."""
    from sim.checks import agents_run

    from hetgitops.plan.quota_plan import accelerator_resources, team_plan

    found = []
    for plan in team_plan(policy, team):
        if not agents_run(policy, plan.pool):
            continue
        for resource in accelerator_resources([plan]):
            if plan.nominal.get(resource, 0) > 0:
                found.append((plan.pool, resource))
    return found


if __name__ == "__main__":
    sys.exit(main())
