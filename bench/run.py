"""Benchmark runner: whole-process timings of hetgitops commands on generated fleets, as JSON.

    python bench/run.py                               # bundled, large, 2x, 4x; 5 runs each
    python bench/run.py --fleets large --repeat 5     # one fleet: quote its `targets`
    python bench/run.py --fleets large,10x --repeat 3 # 50,000 nodes: `scaling` (<= 10x) and RSS
    python bench/run.py --fleets large,nodes4x,teams4x,pools4x,4x  # scaling, one dimension
    python bench/run.py --kubeconfig cp.kubeconfig    # also `drift` (a control plane must be up)
    python bench/run.py --fleets large --guard bench/baseline.json  # the CI regression guard
    python bench/run.py --fleets large --commands validate,render-new,render-rerun,jobs,diff \
        --baseline bench/baseline.json                # refresh the guard's baseline
    python bench/run.py --fleets large --commands explain,capacity,explain-f,\
explain-koordinator,explain-preempt,capacity-without,jobs-ray --baseline bench/baseline.json
                                                      # the newer commands' (docs/performance.md)

Every command runs as a fresh process (`hetgitops ...` in a new interpreter, what CI, pre-commit
and Argo CD's repo server pay; hetgitops' modules are byte-compiled first, as an installed
wheel's are), N times, the commands interleaved round by round so that a machine whose load
changes slows them alike: wall seconds, CPU seconds (user + system of the child) and peak RSS,
as median and min. The cases: `validate`; `render` to stdout;
`render-new`, `render --output` into a folder that does not exist (the previous run's tree
moved aside before each run, untimed, and removed after all rounds: see `_absent`);
`render-rerun`, `render --output` into the tree the previous run wrote (what a
pre-commit hook or a local loop pays); `jobs --output`; `diff --base-dir --head-dir` of two
folders differing by one team's quota; `explain` (a team's first card type, 8 GPUs) and
`capacity`; `drift` with --kubeconfig. The newer commands' cases (bench/newcases.py, generated
fleets only): `explain-f` (300 job templates of `jobs` in one `explain -f`), `explain-koordinator`
(300 koord-scheduler templates, on the fleet with the koordinator target), `explain-preempt`
(`--preempt` for 60 templates among 1,727 admitted workloads), `capacity-without` (half the
nodes out: `--without zone=zone-0,zone=zone-1`), `jobs-ray` (`jobs --output` with Ray profiles).
They read the fleet plus Ray profiles and the koordinator target (`newcases.newer`); the others,
and capacity-without, the fleet as generated. `--baseline FILE` merges into an existing FILE
(the commands not measured keep their ratios); `--guard` judges the `--commands` asked for.

`reference` is a fixed workload timed the same way in the same rounds: a fresh Python that
libyaml-loads (CSafeLoader) the fleet's rendered stream, the least any tool reading the same
objects pays. `ratio` = a command's median CPU over the reference's, `user_ratio` the same for
user-space CPU alone, `wall_ratio` for wall seconds: figures that survive a loaded or slower
machine. The guard compares `user_ratio` with a committed baseline (the kernel's share of
writing files follows the file system's history, not the code). `targets` (fleet `large`)
holds issue 24's goals as ratios, each with `met`; `scaling` (a fleet beside `large`) is each
command's CPU at that fleet over its CPU at `large` next to the size factor, and the peak RSS.
`throughput` is in-process: objects per second of hetgitops' output checks on the large fleet's
render, next to `kubernetes_validate.validate` on a sample of the same.

Fleets: `bundled` (policies/), `large` (5,000 nodes, 40 pools, 300 teams, 20 card types; see
bench/fleetgen.py), `2x` / `4x` / `10x` (nodes, pools and teams scaled together; `10x` is the
50,000-node fleet), `nodes4x`, `teams4x`, `pools4x` (one dimension alone). The JSON goes to
stdout (and `--out FILE`); progress to stderr.
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

from bench import newcases  # noqa: E402
from bench.fleetgen import LARGE, FleetSpec, write_policy  # noqa: E402

NOW = "2026-09-01"
COMMANDS = (
    "validate",
    "render",
    "render-new",
    "render-rerun",
    "jobs",
    "diff",
    "drift",
    "explain",
    "capacity",
    *newcases.NEW_COMMANDS,
)
FLEETS: dict[str, FleetSpec | None] = {
    "bundled": None,
    "large": LARGE,
    "2x": LARGE.scaled(2),
    "4x": LARGE.scaled(4),
    "10x": LARGE.scaled(10),
    "nodes4x": LARGE.scaled(4, teams=False, pools=False),
    "teams4x": LARGE.scaled(4, nodes=False, pools=False),
    "pools4x": LARGE.scaled(4, nodes=False, teams=False),
}
REFERENCE = (
    "import sys, yaml\n"
    "with open(sys.argv[1], encoding='utf-8') as f:\n"
    "    print(sum(1 for _ in yaml.load_all(f.read(), Loader=yaml.CSafeLoader)))\n"
)
# Issue 24's goals at the large fleet, as ratios to the reference (0.55 s on a quiet machine):
# validate <= 1.8 (1.0 s), render --output <= 2.7 (1.5 s), jobs --output <= 3.6 (2.0 s), and
# diff <= 1.5 x render to stdout.
TARGETS: dict[str, tuple[str, float]] = {
    "validate": ("reference", 1.8),
    "render-new": ("reference", 2.7),
    "render-rerun": ("reference", 2.7),
    "jobs": ("reference", 3.6),
    "diff": ("render", 1.5),
}
SCALING_BOUND = 1.0  # a fleet k x larger may cost at most k x (nothing super-linear)
RSS_LIMIT_MB = 500


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclasses.dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float
    exit: int
    user: float = 0.0  # user-space CPU alone: what the guard compares (see `guard`)


def run_once(argv: list[str], cwd: Path) -> Sample:
    """One whole process: wall clock, the child's own CPU and peak RSS (from wait4)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return Sample(wall, cpu, usage.ru_maxrss / 1024, child.returncode, usage.ru_utime)


@dataclasses.dataclass
class Case:
    """One command line, and what must hold before each run of it (untimed)."""

    argv: list[str]
    prepare: Callable[[], None] = lambda: None


def summarise(samples: list[Sample]) -> dict[str, Any]:
    def stat(pick: Callable[[Sample], float]) -> dict[str, float]:
        values = [pick(s) for s in samples]
        return {"median": round(statistics.median(values), 3), "min": round(min(values), 3)}

    return {
        "wall": stat(lambda s: s.wall),
        "cpu": stat(lambda s: s.cpu),
        "user": stat(lambda s: s.user),
        "rss_mb": round(max(s.rss_mb for s in samples), 1),
        "exit": sorted({s.exit for s in samples}),
    }


def measure(cases: dict[str, Case], repeat: int, cwd: Path) -> dict[str, dict[str, Any]]:
    """Each case `repeat` times, round by round (every case once per round)."""
    samples: dict[str, list[Sample]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, case in cases.items():
            case.prepare()
            samples[name].append(run_once(case.argv, cwd))
    return {name: summarise(found) for name, found in samples.items()}


def compile_bytecode() -> None:
    """Byte-compile hetgitops' own modules before timing, as an installed wheel ships them. An
    editable checkout run with PYTHONDONTWRITEBYTECODE set (or from a read-only tree) would
    otherwise compile every module from source in every timed process, ~0.2 s CPU at this
    machine's quiet speed that no installed user, CI runner or repo server pays."""
    import compileall

    import hetgitops

    compileall.compile_dir(Path(hetgitops.__file__).parent, quiet=1)


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


def _absent(folder: Path) -> Callable[[], None]:
    """Make `folder` absent by moving the previous run's tree aside (emptied after all rounds):
    deleting its ~2,000 files here would slow the next run's file creation for minutes on a
    file system without a journal, where ext4 does not reuse an inode deleted in the last 60 s
    (300 s while its table block is dirty) and scans past each one (linux fs/ext4/ialloc.c,
    `recently_deleted`, RECENTCY_MIN / RECENTCY_DIRTY): the bench's own clean-up, not hetgitops,
    would be timed. The CI machine's /dev/vda is such a file system."""
    trash = folder.parent / ".trash"

    def prepare() -> None:
        if folder.exists():
            trash.mkdir(exist_ok=True)
            folder.rename(trash / f"{folder.name}-{len(list(trash.iterdir()))}")

    return prepare


def empty_trash(base: Path) -> None:
    shutil.rmtree(base / ".trash", ignore_errors=True)


def _present(case: list[str], folder: Path) -> Callable[[], None]:
    def prepare() -> None:
        if not folder.is_dir():
            run_once(case, REPO)

    return prepare


def fleet_cases(
    policy: Path, base: Path, args: argparse.Namespace, spec: FleetSpec | None = None
) -> dict[str, Case]:
    render = hetgitops("render", str(policy), "--now", NOW)
    rerun = [*render, "--output", str(base / "tree")]
    cases = {
        "validate": Case(hetgitops("validate", str(policy), "--now", NOW)),
        "render": Case(render),
        "render-new": Case(
            [*render, "--output", str(base / "new-tree")], _absent(base / "new-tree")
        ),
        "render-rerun": Case(rerun, _present(rerun, base / "tree")),
        "jobs": Case(hetgitops("jobs", str(policy), "--now", NOW, "--output", str(base / "jobs"))),
    }
    if "explain" in args.commands and has_command("explain"):
        team, card = first_team_and_card(policy)
        cases["explain"] = Case(
            hetgitops(
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
        )
    if "capacity" in args.commands and has_command("capacity"):
        cases["capacity"] = Case(hetgitops("capacity", str(policy), "--now", NOW))
    if "diff" in args.commands and has_command("diff"):
        head = quota_change(policy, base / "changed")
        cases["diff"] = Case(
            hetgitops("diff", "--base-dir", str(policy), "--head-dir", str(head), "--now", NOW)
        )
    if spec is not None:  # the newer commands' cases (bench/newcases.py): generated fleets
        newer = newcases.argvs(hetgitops, spec, policy, base, args.commands, NOW)
        cases.update({command: Case(argv) for command, argv in newer.items()})
    elif any(c in newcases.NEW_COMMANDS for c in args.commands):
        _log("the newer commands' cases run on generated fleets only, not on policies/")
    if "drift" in args.commands and args.kubeconfig and has_command("drift"):
        cases["drift"] = Case(hetgitops("drift", str(policy), "--kubeconfig", str(args.kubeconfig)))
    return {command: case for command, case in cases.items() if command in args.commands}


def rendered_stream(policy: Path, base: Path) -> Path:
    """The fleet's `render` stdout, for the reference to load."""
    out = base / "stream.yaml"
    with out.open("wb") as sink:
        subprocess.run(
            hetgitops("render", str(policy), "--now", NOW), stdout=sink, cwd=REPO, check=True
        )
    return out


def bench_fleet(name: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    policy, base = fleet_folder(name, root), root / name
    base.mkdir(parents=True, exist_ok=True)
    cases = fleet_cases(policy, base, args, FLEETS[name])
    stream_file = rendered_stream(policy, base)
    cases["reference"] = Case([sys.executable, "-c", REFERENCE, str(stream_file)])
    _log(f"{name}: {', '.join(cases)} x{args.repeat}, interleaved")
    measured = measure(cases, args.repeat, REPO)
    empty_trash(base)
    reference = measured.pop("reference")
    for figures in measured.values():
        figures["ratio"] = round(figures["cpu"]["median"] / reference["cpu"]["median"], 2)
        figures["user_ratio"] = round(
            figures["user"]["median"] / max(reference["user"]["median"], 1e-6), 2
        )
        figures["wall_ratio"] = round(figures["wall"]["median"] / reference["wall"]["median"], 2)
    tree = base / "tree"
    if not tree.is_dir():  # render-rerun not measured: write the tree once to count its files
        run_once(hetgitops("render", str(policy), "--now", NOW, "--output", str(tree)), REPO)
    spec = FLEETS[name]
    result: dict[str, Any] = {"spec": dataclasses.asdict(spec) if spec else None}
    result["files"] = sum(1 for p in tree.rglob("*") if p.is_file())
    result["objects"] = stream_file.read_text("utf-8").count("\n---\n") + 1
    result["commands"] = measured
    result["reference"] = reference
    return result


def targets(commands: dict[str, Any]) -> dict[str, Any]:
    """Issue 24's goals: each command's CPU ratio to what the goal divides by, and `met`."""
    found: dict[str, Any] = {}
    for command, (over, limit) in TARGETS.items():
        if command not in commands or (over != "reference" and over not in commands):
            continue
        ratio = commands[command]["ratio"]
        if over != "reference":
            ratio = round(commands[command]["cpu"]["median"] / commands[over]["cpu"]["median"], 2)
        found[command] = {"ratio_to": over, "ratio": ratio, "limit": limit, "met": ratio <= limit}
    return found


def scaling(fleets: dict[str, Any], against: str = "large") -> dict[str, Any]:
    """Each fleet beside `against`: CPU growth per command next to the size factor, peak RSS."""
    base = fleets.get(against)
    if base is None:
        return {}
    found: dict[str, Any] = {}
    for name, data in fleets.items():
        spec = FLEETS[name]
        if name == against or spec is None:
            continue
        factor = round(max(spec.nodes / LARGE.nodes, spec.teams / LARGE.teams), 2)
        growth = {
            command: round(figures["cpu"]["median"] / base["commands"][command]["cpu"]["median"], 2)
            for command, figures in data["commands"].items()
            if command in base["commands"]
        }
        rss = max(figures["rss_mb"] for figures in data["commands"].values())
        found[name] = {
            "size_factor": factor,
            "cpu_growth": growth,
            "within_bound": all(g <= factor * SCALING_BOUND for g in growth.values()),
            "peak_rss_mb": rss,
            "rss_within_limit": rss <= RSS_LIMIT_MB,
        }
    return found


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


def table(report: dict[str, Any]) -> str:
    """The figures as a Markdown table (to stderr, for notes and the README)."""
    lines = [
        "| fleet | command | wall median | CPU median | ratio (CPU) | ratio (user) | ratio (wall) "
        "| peak RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fleet, data in report["fleets"].items():
        one = {"ratio": 1, "user_ratio": 1, "wall_ratio": 1}
        rows = {**data["commands"], "reference": {**data["reference"], **one}}
        for command, f in rows.items():
            lines.append(
                f"| {fleet} | {command} | {f['wall']['median']:.2f} s | {f['cpu']['median']:.2f} s"
                f" | {f['ratio']} | {f['user_ratio']} | {f['wall_ratio']} | {f['rss_mb']:.0f} MB |"
            )
    for command, goal in report.get("targets", {}).items():
        verdict = "met" if goal["met"] else "NOT met"
        lines.append(
            f"target {command}: {goal['ratio']} x {goal['ratio_to']} <= {goal['limit']}: {verdict}"
        )
    for fleet, grown in report.get("scaling", {}).items():
        lines.append(
            f"scaling {fleet} (x{grown['size_factor']}): {grown['cpu_growth']}, "
            f"within bound: {grown['within_bound']}, peak RSS {grown['peak_rss_mb']} MB"
        )
    before, after = report["machine_before"]["loadavg"], report["machine_after"]["loadavg"]
    lines.append(f"load average before {before}, after {after}")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in load]}


def guard(
    report: dict[str, Any],
    baseline_file: Path,
    margin: float,
    commands: list[str] | None = None,
) -> list[str]:
    """Commands whose user-CPU ratio to the reference grew beyond `margin` x the baseline's:
    those of `commands` (default: every command the baseline holds; one asked for and not
    measured is a problem too). User CPU alone: the kernel's share of writing a tree depends on
    the file system's history, not on hetgitops (render-new measured 3.1 to 5.8 x the reference
    on one machine within an hour, the same code, from 2.3 when the baseline was taken)."""
    baseline = json.loads(baseline_file.read_text("utf-8"))
    problems = []
    for fleet, ratios in baseline["ratios"].items():
        for command, ratio in ratios.items():
            if commands is not None and command not in commands:
                continue
            got = report["fleets"].get(fleet, {}).get("commands", {}).get(command)
            if got is None:
                problems.append(f"{fleet} {command}: not measured")
            elif got["user_ratio"] > ratio * margin:
                problems.append(
                    f"{fleet} {command}: {got['user_ratio']} x the reference (user CPU), "
                    f"baseline {ratio} "
                    f"(limit {round(ratio * margin, 2)})"
                )
    return problems


def write_baseline(report: dict[str, Any], path: Path) -> None:
    """The measured ratios into the baseline at `path`. An existing baseline keeps the entries
    of the commands not measured now (a refresh of some commands leaves the others' figures
    alone) and lists the refresh, its date, load and commands, under `refreshed`."""
    ratios = {
        fleet: {command: figures["user_ratio"] for command, figures in data["commands"].items()}
        for fleet, data in report["fleets"].items()
    }
    if not path.exists():
        baseline: dict[str, Any] = {
            "about": "user CPU of each command / user CPU of the reference workload "
            "(bench/run.py); "
            "the CI guard fails beyond --margin x these",
            "measured": report["date"],
            "machine": report["machine_before"],
            "ratios": ratios,
        }
    else:
        baseline = json.loads(path.read_text("utf-8"))
        for fleet, measured in ratios.items():
            baseline["ratios"].setdefault(fleet, {}).update(measured)
        baseline.setdefault("refreshed", []).append(
            {
                "measured": report["date"],
                "machine": report["machine_before"],
                "commands": sorted({c for measured in ratios.values() for c in measured}),
            }
        )
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
    compile_bytecode()
    try:
        report: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        report["machine_before"] = machine()
        report["repeat"] = args.repeat
        report["fleets"] = {name: bench_fleet(name, args, root) for name in fleets}
        if "large" in report["fleets"]:
            report["targets"] = targets(report["fleets"]["large"]["commands"])
        if len(report["fleets"]) > 1:
            report["scaling"] = scaling(report["fleets"])
        if not args.no_throughput:
            _log("throughput (in-process)")
            report["throughput"] = throughput(root)
        report["machine_after"] = machine()
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(report, indent=2)
    print(text)
    _log(table(report))
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    if args.baseline:
        write_baseline(report, args.baseline)
    if args.guard:
        problems = guard(report, args.guard, args.margin, args.commands)
        for problem in problems:
            _log(f"performance regression: {problem}")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
