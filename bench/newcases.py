"""The inputs of the bench's cases for the newer commands (bench/run.py), made untimed, once.

    explain-f            explain -f: 300 job templates `jobs` writes for the newer fleet (Kueue)
    explain-koordinator  explain -f: 300 of `jobs --scheduler koordinator` (koord-scheduler pods)
    explain-preempt      explain --preempt -f: 60 of the Kueue templates against a usage file of
                         every team's admitted workloads (`running_workloads`, 1,727 of them)
    capacity-without     capacity --without zone=zone-0,zone=zone-1: half the nodes out
    jobs-ray             jobs --output on LARGE_NEW: the large fleet's templates plus its Ray ones

The newer fleet (`newer`) is the bench's fleet with Ray profiles and the koordinator target;
the existing cases, and capacity-without, keep reading the fleet as it was. Every input is a
function of the generated policy and of what hetgitops itself writes: the same spec gives the
same bytes.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from bench.fleetgen import FleetSpec, write_policy

NEW_COMMANDS = (
    "explain-f",
    "explain-koordinator",
    "explain-preempt",
    "capacity-without",
    "jobs-ray",
)

REQUESTS = 300  # job templates explained per run: one answer per pod set each
# --preempt replays Kueue's preemption per request over every admitted workload (~45 ms CPU
# each at 1,727 holders on this machine): fewer requests keep the case near the others' cost.
PREEMPT_REQUESTS = 60
WITHOUT = "zone=zone-0,zone=zone-1"  # fleetgen spreads each pool's racks over 4 zones


def templates_file(tree: Path, out: Path, count: int = REQUESTS) -> Path:
    """`count` of the templates `jobs --output` wrote under `tree`, evenly spaced over their
    sorted paths (so every profile, Ray ones included, and many teams take part), as one
    multi-document manifest: what `explain -f` reads."""
    files = sorted(tree.rglob("*.yaml"))
    if not files:
        raise SystemExit(f"no job templates under {tree}")
    picked = files[:: max(1, len(files) // count)][:count]
    out.write_text("---\n".join(p.read_text("utf-8") for p in picked), "utf-8")
    return out


def running_workloads(policy: Path) -> dict[str, Any]:
    """A RunningWorkloads document (schemas/preempt-usage.schema.json) in which every team runs
    at its nominal quota in each pool it holds whole cards in (a training job and a dev job,
    half each) and borrows up to its borrowing limit with a second dev job: each team's next
    job must preempt (its own dev jobs, or other teams' borrowed ones) to be admitted."""
    teams: list[dict[str, Any]] = []
    for path in sorted(policy.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text("utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "Team":
                teams.append(doc)
    entries: list[dict[str, Any]] = []
    minute = 0
    for team in sorted(teams, key=lambda t: t["metadata"]["name"]):
        name, namespace = team["metadata"]["name"], team["spec"]["namespaces"][0]
        for quota in team["spec"]["quotas"]:
            cards, borrow = quota.get("cards", 0), quota.get("borrowingLimit", 0)
            jobs = [("training", cards - cards // 2), ("dev", cards // 2), ("dev", borrow)]
            for k, (tier, gpus) in enumerate(jobs):
                if gpus <= 0:
                    continue
                minute += 1
                entries.append(
                    {
                        "name": f"{namespace}/{quota['pool']}-{k}",
                        "clusterQueue": name,
                        "tier": tier,
                        "pool": quota["pool"],
                        "usage": {"nvidia.com/gpu": gpus},
                        "admitted": f"2026-08-{1 + minute // 1440:02d}T"
                        f"{minute // 60 % 24:02d}:{minute % 60:02d}:00Z",
                    }
                )
    return {"apiVersion": "hetgitops.io/v1alpha1", "kind": "RunningWorkloads", "workloads": entries}


def write_usage(policy: Path, out: Path) -> Path:
    out.write_text(yaml.safe_dump(running_workloads(policy), sort_keys=False), "utf-8")
    return out


def newer(spec: FleetSpec) -> FleetSpec:
    """The fleet the newer cases read: `spec` with Ray profiles and the koordinator target."""
    return dataclasses.replace(spec, ray=True, koordinator=True)


def argvs(
    cli: Callable[..., list[str]],
    spec: FleetSpec,
    policy: Path,
    base: Path,
    wanted: Iterable[str],
    now: str,
) -> dict[str, list[str]]:
    """The command lines of the wanted newer cases on the fleet `spec` (written at `policy`),
    their inputs made under `base` first (untimed). `cli(*args)` spells a hetgitops process."""
    wanted = [w for w in NEW_COMMANDS if w in wanted]
    if not wanted:
        return {}
    new = write_policy(newer(spec), base / "policy-new")
    found: dict[str, list[str]] = {}

    def templates(scheduler: str, count: int) -> Path:
        tree = base / f"templates-{scheduler}"
        if not tree.is_dir():
            argv = cli("jobs", str(new), "--now", now, "--scheduler", scheduler, "-o", str(tree))
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        return templates_file(tree, base / f"requests-{scheduler}-{count}.yaml", count)

    explain = cli("explain", "--policy", str(new), "--now", now)
    if "explain-f" in wanted:
        found["explain-f"] = [*explain, "-f", str(templates("kueue", REQUESTS))]
    if "explain-koordinator" in wanted:
        found["explain-koordinator"] = [*explain, "-f", str(templates("koordinator", REQUESTS))]
    if "explain-preempt" in wanted:
        usage = write_usage(new, base / "usage.yaml")
        requests = templates("kueue", PREEMPT_REQUESTS)
        found["explain-preempt"] = [
            *explain,
            "--preempt",
            "--usage",
            str(usage),
            "-f",
            str(requests),
        ]
    if "capacity-without" in wanted:
        found["capacity-without"] = cli("capacity", str(policy), "--now", now, "--without", WITHOUT)
    if "jobs-ray" in wanted:
        found["jobs-ray"] = cli("jobs", str(new), "--now", now, "--output", str(base / "jobs-ray"))
    return found
