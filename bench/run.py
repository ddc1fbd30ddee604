"""Benchmark runner: whole-process timings of hetgitops commands on generated fleets, as JSON.

    python bench/run.py                               # bundled, large, 2x, 4x; 5 runs each
    python bench/run.py --fleets large --repeat 3     # one fleet
    python bench/run.py --fleets large,nodes4x,teams4x,pools4x,4x  # scaling, one dimension
    python bench/run.py --kubeconfig cp.kubeconfig    # also `drift` (a control plane must be up)
    python bench/run.py --fleets large --guard bench/baseline.json  # the CI regression guard
    python bench/run.py --fleets large --commands validate,render,jobs \
        --baseline bench/baseline.json                # refresh the guard's baseline

Every command runs as a fresh process (`hetgitops ...` in a new interpreter, what CI and Argo CD's
repo server pay), N times: wall seconds, CPU seconds (user + system of the child) and peak RSS,
as median and min. `reference` is a fixed workload timed the same way in the same run (a fresh
Python that libyaml-loads the fleet's rendered tree); `ratio` = a command's median CPU over the
reference's, a figure that survives a loaded or slower machine, which the guard compares with a
committed baseline. `throughput` is in-process: objects per second of hetgitops' output checks
on the large fleet's render, next to `kubernetes_validate.validate` on a sample of the same.

Fleets: `bundled` (policies/), `large` (5,000 nodes, 40 pools, 300 teams, 20 card types; see
bench/fleetgen.py), `2x` / `4x` (nodes, pools and teams scaled together), `nodes4x`, `teams4x`,
`pools4x` (one dimension alone). The JSON goes to stdout (and `--out FILE`); progress to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.fleetgen import LARGE, FleetSpec, write_policy  # noqa: E402

NOW = "2026-09-01"
COMMANDS = ("validate", "render", "jobs", "diff", "drift", "explain", "capacity")
FLEETS: dict[str, FleetSpec | None] = {
    "bundled": None,
    "large": LARGE,
    "2x": LARGE.scaled(2),
    "4x": LARGE.scaled(4),
    "nodes4x": LARGE.scaled(4, teams=False, pools=False),
    "teams4x": LARGE.scaled(4, nodes=False, pools=False),
    "pools4x": LARGE.scaled(4, nodes=False, teams=False),
}
REFERENCE = (
    "import sys, pathlib, yaml\n"
    "n = 0\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.yaml')):\n"
    "    n += sum(1 for _ in yaml.load_all(p.read_text('utf-8'), Loader=yaml.CSafeLoader))\n"
    "print(n)\n"
)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclasses.dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float
    exit: int


def run_once(argv: list[str], cwd: Path) -> Sample:
    """One whole process: wall clock, the child's own CPU and peak RSS (from wait4)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode)


def measure(argv: list[str], repeat: int, cwd: Path) -> dict[str, Any]:
    samples = [run_once(argv, cwd) for _ in range(repeat)]

    def stat(pick: Callable[[Sample], float]) -> dict[str, float]:
        values = [pick(s) for s in samples]
        return {"median": round(statistics.median(values), 3), "min": round(min(values), 3)}

    return {
        "wall": stat(lambda s: s.wall),
        "cpu": stat(lambda s: s.cpu),
        "rss_mb": round(max(s.rss_mb for s in samples), 1),
        "exit": sorted({s.exit for s in samples}),
    }


def hetgitops(*args: str) -> list[str]:
    return [sys.executable, "-c", "from hetgitops.cli.main import main; main()", *args]


def has_command(name: str) -> bool:
    done = subprocess.run(hetgitops(name, "--help"), capture_output=True, cwd=REPO, check=False)
    return done.returncode == 0


def quota_change(policy: Path, changed: Path) -> Path:
    """A copy of `policy` with one quota one card smaller: the commonest pull request."""
    shutil.copytree(policy, changed, dirs_exist_ok=True)
    for path in sorted(changed.rglob("*.yaml")):
        text = path.read_text("utf-8")
        if "kind: Team" not in text:
            continue
        match = re.search(r"cards: (\d+)", text)
        if match and int(match[1]) > 1:
            edited = f"cards: {int(match[1]) - 1}"
            path.write_text(text[: match.start()] + edited + text[match.end() :], "utf-8")
            return changed
    raise SystemExit(f"no team quota to change under {policy}")


def first_team_and_card(policy: Path) -> tuple[str, str]:
    """A team of the fleet and the card type of its first quota's pool: what `explain` asks."""
    import yaml

    teams, pools = [], {}
    for path in sorted(policy.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text("utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "Team":
                teams.append(doc)
            elif isinstance(doc, dict) and doc.get("kind") == "Pool":
                pools[doc["metadata"]["name"]] = doc["spec"]["cardType"]
    team = min(teams, key=lambda t: t["metadata"]["name"])
    return team["metadata"]["name"], pools[team["spec"]["quotas"][0]["pool"]]


def fleet_folder(name: str, root: Path) -> Path:
    spec = FLEETS[name]
    if spec is None:
        return REPO / "policies"
    return write_policy(spec, root / name / "policy")


def bench_fleet(name: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    policy = fleet_folder(name, root)
    out, jobs_out = root / name / "tree", root / name / "jobs"
    runs: dict[str, list[str]] = {
        "validate": hetgitops("validate", str(policy), "--now", NOW),
        "render": hetgitops("render", str(policy), "--now", NOW, "--output", str(out)),
        "jobs": hetgitops("jobs", str(policy), "--now", NOW, "--output", str(jobs_out)),
    }
    if "explain" in args.commands and has_command("explain"):
        team, card = first_team_and_card(policy)
        runs["explain"] = hetgitops(
            "explain",
            "--policy",
            str(policy),
            "--team",
            team,
            "--card",
            card,
            "--gpus",
            "8",
            "--now",
            NOW,
        )
    if "capacity" in args.commands and has_command("capacity"):
        runs["capacity"] = hetgitops("capacity", str(policy), "--now", NOW)
    if "diff" in args.commands and has_command("diff"):
        head = quota_change(policy, root / name / "changed")
        runs["diff"] = hetgitops(
            "diff", "--base-dir", str(policy), "--head-dir", str(head), "--now", NOW
        )
    if "drift" in args.commands and args.kubeconfig and has_command("drift"):
        runs["drift"] = hetgitops("drift", str(policy), "--kubeconfig", str(args.kubeconfig))
    result: dict[str, Any] = {"spec": dataclasses.asdict(FLEETS[name]) if FLEETS[name] else None}
    commands: dict[str, Any] = {}
    for command, argv in runs.items():
        if command not in args.commands:
            continue
        _log(f"{name}: {command} x{args.repeat}")
        commands[command] = measure(argv, args.repeat, REPO)
    if not out.is_dir():  # the reference needs the rendered tree
        run_once(runs["render"], REPO)
    files = list(out.rglob("*.yaml"))
    result["files"] = len(files)
    _log(f"{name}: reference x{args.repeat}")
    reference = measure([sys.executable, "-c", REFERENCE, str(out)], args.repeat, REPO)
    for figures in commands.values():
        figures["ratio"] = round(figures["cpu"]["median"] / reference["cpu"]["median"], 2)
    result["commands"] = commands
    result["reference"] = reference
    return result


def throughput(root: Path, seconds: float = 2.0) -> dict[str, Any]:
    """Objects per second, in this process, after a warm-up: hetgitops' output checks on the
    large fleet's render, and kubernetes_validate.validate on its core objects."""
    import kubernetes_validate

    from hetgitops import api
    from hetgitops.conformance import output_checks

    policy = root / "large" / "policy"
    if not policy.is_dir():
        write_policy(LARGE, policy)
    options = api.Options(now=dt.date.fromisoformat(NOW), check_output=False)
    rendered = api.render([policy], options)
    assert rendered.policy is not None
    manifests = rendered.manifests
    output_checks.check(manifests, rendered.policy)  # warm: validators built
    started, rounds = time.perf_counter(), 0
    while rounds == 0 or time.perf_counter() - started < seconds:
        found = output_checks.check(manifests, rendered.policy)
        rounds += 1
    ours = len(manifests) * rounds / (time.perf_counter() - started)
    core = [m.obj for m in manifests if "." not in str(m.obj.get("apiVersion")).split("/")[0]]
    sample, checked = core[:40], 0
    started = time.perf_counter()
    for obj in sample:
        kubernetes_validate.validate(dict(obj), "1.33", strict=True)
        checked += 1
        if time.perf_counter() - started > seconds:
            break
    theirs = checked / (time.perf_counter() - started)
    return {
        "objects": len(manifests),
        "findings": len(found),
        "hetgitops_output_checks_per_s": round(ours),
        "kubernetes_validate_per_s": round(theirs, 1),
    }


def machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in load]}


def guard(report: dict[str, Any], baseline_file: Path, margin: float) -> list[str]:
    """Commands whose CPU ratio to the reference grew beyond `margin` x the baseline's."""
    baseline = json.loads(baseline_file.read_text("utf-8"))
    problems = []
    for fleet, commands in baseline["ratios"].items():
        for command, ratio in commands.items():
            got = report["fleets"].get(fleet, {}).get("commands", {}).get(command)
            if got is None:
                problems.append(f"{fleet} {command}: not measured")
            elif got["ratio"] > ratio * margin:
                problems.append(
                    f"{fleet} {command}: {got['ratio']} x the reference, baseline {ratio} "
                    f"(limit {round(ratio * margin, 2)})"
                )
    return problems


def write_baseline(report: dict[str, Any], path: Path) -> None:
    ratios = {
        fleet: {command: figures["ratio"] for command, figures in data["commands"].items()}
        for fleet, data in report["fleets"].items()
    }
    baseline = {
        "about": "CPU of each command / CPU of the reference workload (bench/run.py); "
        "the CI guard fails beyond --margin x these",
        "measured": report["date"],
        "machine": report["machine_before"],
        "ratios": ratios,
    }
    path.write_text(json.dumps(baseline, indent=2) + "\n", "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--fleets", default="bundled,large,2x,4x")
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kubeconfig", type=Path, help="include `drift` against this cluster")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--guard", type=Path, help="baseline ratios; exit 1 beyond --margin")
    parser.add_argument("--margin", type=float, default=1.5)
    parser.add_argument("--baseline", type=Path, help="write the measured ratios here")
    parser.add_argument("--keep", type=Path, help="generate fleets here (kept) instead of /tmp")
    args = parser.parse_args(argv)
    args.commands = args.commands.split(",")
    fleets = args.fleets.split(",")
    unknown = [f for f in fleets if f not in FLEETS]
    if unknown:
        parser.error(f"unknown fleet(s) {unknown}; choose from {sorted(FLEETS)}")
    root = args.keep or Path(tempfile.mkdtemp(prefix="hetgitops-bench-"))
    try:
        report: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        report["machine_before"] = machine()
        report["repeat"] = args.repeat
        report["fleets"] = {name: bench_fleet(name, args, root) for name in fleets}
        if not args.no_throughput:
            _log("throughput (in-process)")
            report["throughput"] = throughput(root)
        report["machine_after"] = machine()
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    if args.baseline:
        write_baseline(report, args.baseline)
    if args.guard:
        problems = guard(report, args.guard, args.margin)
        for problem in problems:
            _log(f"performance regression: {problem}")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
