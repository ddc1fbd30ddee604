"""Benchmark of `hetgitops drift`: a generated fleet of about 10,000 live objects on the test
control plane, timed as whole `hetgitops drift` processes (import, render, LISTs, compare).

Usage (from the repository root, with hetgitops and the test extras installed; the control
plane is started if none runs in $HETGITOPS_CONTROLPLANE_DIR):

    python bench/bench_drift.py                      # default shape, 5 runs, median shown
    python bench/bench_drift.py --nodes 8000 --teams 400 --repeat 7

The fleet comes from bench/fleetgen.py. Its rendered tree is applied by server-side apply as
Argo CD would (`argocd-controller`); its nodes are created with the labels, taints and
accelerators the policy gives them, so a clean run reports no findings. The benchmark asserts
that (exit 1 otherwise) and prints the request count, which stays at kinds + 2 whatever the
size (pages of 5,000). Columns, in seconds: each run's wall time, then the median; `render`
is the in-process time of `api.render` alone, for comparison.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "e2e")]

from drift_fleet import applied, create_nodes, node_objects, render, reset, server_side_apply  # noqa: E402
from harness.controlplane import harness  # noqa: E402

from bench.fleetgen import FleetSpec, write_policy  # noqa: E402

CHUNK = 1000  # objects per kubectl apply: keeps each request body a few MB


def _apply_chunks(plane: harness.ControlPlane, objects: list[dict[str, Any]]) -> None:
    for start in range(0, len(objects), CHUNK):
        server_side_apply(plane, objects[start : start + CHUNK], manager="argocd-controller")


def _run(policy: Path, kubeconfig: Path) -> tuple[float, int, str]:
    command = [str(Path(sys.executable).parent / "hetgitops"), "drift", str(policy)]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--kubeconfig", str(kubeconfig)], capture_output=True, text=True, check=False
    )
    return time.perf_counter() - start, done.returncode, done.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=6000)
    parser.add_argument("--teams", type=int, default=650)
    parser.add_argument("--pools", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    plane = harness.up()
    folder = Path(tempfile.mkdtemp(prefix="bench-drift-"))
    policy = write_policy(
        FleetSpec(nodes=args.nodes, teams=args.teams, pools=args.pools), folder / "policy"
    )
    start = time.perf_counter()
    result = render(policy)
    rendered = time.perf_counter() - start
    assert result.policy is not None
    reset(plane)
    objects = applied(result)
    _apply_chunks(plane, objects)
    create_nodes(plane, result.policy)
    nodes = len(node_objects(result.policy))
    print(f"live fleet: {len(objects)} hetgitops objects + {nodes} nodes = {len(objects) + nodes}")
    print(f"render (in process): {rendered:.2f} s")
    times = []
    for i in range(args.repeat):
        seconds, code, last = _run(policy, plane.readonly_kubeconfig)
        print(f"run {i + 1}: {seconds:.2f} s, exit {code}: {last}")
        if code != 0:
            return 1
        times.append(seconds)
    print(f"median of {len(times)} whole-process runs: {statistics.median(times):.2f} s")
    if os.environ.get("BENCH_KEEP") != "1":
        reset(plane)
    return 0


if __name__ == "__main__":
    sys.exit(main())
