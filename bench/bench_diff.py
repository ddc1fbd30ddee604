"""Benchmark of `hetgitops diff` against `hetgitops render` on the large synthetic fleet.

Usage (from the repository root, with hetgitops installed):

    python bench/bench_diff.py              # 5 runs of each, medians
    python bench/bench_diff.py --repeat 9

It writes the large fleet (`bench.fleetgen.LARGE`: 5,000 nodes, 300 teams) into a temporary
Git repository, commits it, changes one team's quota in a second commit, then times whole
processes (import, both sides read from Git objects, validated, compiled and output-checked,
the report printed): `render` of the fleet to stdout, `diff --base HEAD~1 --head HEAD`, and
`diff --base-dir A --head-dir B`. The issue's target is diff <= 2x render. Wall-clock medians
and CPU (user+sys of the child) medians are printed; this asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fleetgen import LARGE, write_policy

NOW = "2026-09-01"
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]


def _timed(command: list[str], cwd: Path) -> tuple[float, float, int]:
    """(wall seconds, child CPU seconds, exit code) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def _cut_one_quota(policy: Path) -> None:
    first = sorted((policy / "teams").glob("*.yaml"))[0]
    text = first.read_text(encoding="utf-8")
    match = re.search(r"cards: (\d+)", text)
    assert match, first
    cut = max(int(match.group(1)) - 4, 0)
    first.write_text(text.replace(match.group(0), f"cards: {cut}", 1), encoding="utf-8")


def _setup(root: Path) -> None:
    repo = root / "repo"
    write_policy(LARGE, repo / "policy")
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "fleet"], cwd=repo, check=True)
    shutil.copytree(repo / "policy", root / "a")
    _cut_one_quota(repo / "policy")
    subprocess.run([*GIT, "commit", "-q", "-am", "cut one quota"], cwd=repo, check=True)
    shutil.copytree(repo / "policy", root / "b")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    exe = [shutil.which("hetgitops") or "hetgitops"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _setup(root)
        repo = root / "repo"
        commands = {
            "render": ([*exe, "render", "policy", "--now", NOW], repo),
            "diff (git refs)": (
                [*exe, "diff", "policy", "--base", "HEAD~1", "--head", "HEAD", "--now", NOW],
                repo,
            ),
            "diff (folders)": (
                [*exe, "diff", "--base-dir", "a", "--head-dir", "b", "--now", NOW],
                root,
            ),
        }
        results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in commands}
        for _ in range(args.repeat):  # interleaved, so machine load hits every command alike
            for name, (command, cwd) in commands.items():
                results[name].append(_timed(command, cwd))
        base_wall = statistics.median(w for w, _, _ in results["render"])
        base_cpu = statistics.median(c for _, c, _ in results["render"])
        print(
            f"large fleet: {LARGE.nodes} nodes, {LARGE.teams} teams; "
            f"{args.repeat} runs; cpus={os.cpu_count()}"
        )
        print(f"{'command':18} {'wall s':>8} {'x render':>9} {'cpu s':>8} {'x render':>9}  exit")
        for name, runs in results.items():
            wall = statistics.median(w for w, _, _ in runs)
            cpu = statistics.median(c for _, c, _ in runs)
            codes = sorted({code for _, _, code in runs})
            print(
                f"{name:18} {wall:8.2f} {wall / base_wall:9.2f} "
                f"{cpu:8.2f} {cpu / base_cpu:9.2f}  {codes}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
