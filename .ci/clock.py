#!/usr/bin/env python3
"""The phase clock of .ci/run: where a CI run's time goes, and a budget guard.

  clock.py begin PHASE       start a phase
  clock.py end PHASE         end it; prints its wall time
  clock.py report BUDGETS    the phase table, the Go builds (scripts/gobuilds' times.tsv) and
                             the total; exit 1 when a phase ran past its budget by the margin
                             on a quiet machine

Every sample records the wall clock, the CPU the whole machine spent (/proc/stat) and the CPU
this run's own processes spent: those whose environment carries HETGITOPS_CI_TOKEN, which
.ci/run exports before anything starts (/proc/PID/stat utime+stime, plus cutime+cstime for
the children they reaped). The difference, less the kernel's own work (interrupts, softirqs and
kernel threads: the loopback traffic of a simulated cluster alone costs about half a core of
them, which no process is charged for), is other work on the machine: a phase that ran long
while other work took more than QUIET_CORES cores on average is reported, not failed, since the
slow-down is not the change's. Only the standard library: it runs before the virtualenv exists.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

TOKEN = "HETGITOPS_CI_TOKEN"
CLOCK_FILE = "HETGITOPS_CI_CLOCK"
TICKS = os.sysconf("SC_CLK_TCK")
# Other work averaging above this many cores makes a phase's time no evidence of a slow-down.
QUIET_CORES = 0.3


def machine_cpu() -> float:
    """CPU seconds the machine spent busy since boot (user, nice, system, irq, softirq, steal)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICKS


# /proc/PID/stat field 9 (flags): PF_KTHREAD, a kernel thread (include/linux/sched.h).
_PF_KTHREAD = 0x00200000


def kernel_cpu() -> float:
    """CPU seconds since boot spent on the kernel's own work: irq, softirq and steal
    (/proc/stat), and the kernel threads (kworkers, ksoftirqd): no process is charged for it,
    and our own clusters cause most of it, so it is neither ours nor other work."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    irq, softirq, steal = (int(f) for f in (fields[5], fields[6], fields[7]))
    total = irq + softirq + steal
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            after = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(after[6]) & _PF_KTHREAD:
            total += int(after[11]) + int(after[12])
    return total / TICKS


def own_cpu(token: str) -> float:
    """CPU seconds spent by the live processes carrying `token` and the children they reaped."""
    needle = f"{TOKEN}={token}".encode()
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
        except OSError:  # gone, or not ours to read
            continue
        fields = stat.rsplit(")", 1)[1].split()
        # After the command: state is field 3, utime..cstime are fields 14-17 (proc(5)).
        total += sum(int(f) for f in fields[11:15])
    return total / TICKS


def sample() -> dict[str, float]:
    return {
        "wall": time.time(),
        "machine": machine_cpu(),
        "kernel": kernel_cpu(),
        "own": own_cpu(os.environ.get(TOKEN, "")),
    }


def _clock_file() -> Path:
    return Path(os.environ[CLOCK_FILE])


def _record(event: str, phase: str) -> dict[str, float]:
    now = sample()
    with _clock_file().open("a") as handle:
        handle.write(json.dumps({"event": event, "phase": phase, **now}) + "\n")
    return now


def _events() -> list[dict[str, object]]:
    path = _clock_file()
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def begin(phase: str) -> int:
    _record("begin", phase)
    print(f"== {phase}", flush=True)
    return 0


def end(phase: str) -> int:
    stop = _record("end", phase)
    start = next(
        (e for e in reversed(_events()) if e["event"] == "begin" and e["phase"] == phase), None
    )
    if start is not None:
        print(f"== {phase}: {stop['wall'] - float(str(start['wall'])):.0f}s", flush=True)
    return 0


def _phases() -> list[tuple[str, dict[str, float], dict[str, float]]]:
    events = _events()
    phases = []
    for index, event in enumerate(events):
        if event["event"] != "begin":
            continue
        stop = next(
            (
                e
                for e in events[index + 1 :]
                if e["event"] == "end" and e["phase"] == event["phase"]
            ),
            None,
        )
        begun = {k: float(str(v)) for k, v in event.items() if k not in ("event", "phase")}
        if stop is None:
            # A phase that failed (set -e ended the run inside it): it ends now, in the report
            # the EXIT trap prints, so a failed run still shows where its time went.
            phases.append((f"{event['phase']} (failed)", begun, sample()))
            continue
        ended = {k: float(str(v)) for k, v in stop.items() if k not in ("event", "phase")}
        phases.append((str(event["phase"]), begun, ended))
    return phases


def _busy(sampled: dict[str, float]) -> float:
    """The machine's busy CPU seconds in a sample, less the kernel's own work (a sample
    recorded before the kernel was sampled counts it all)."""
    return sampled["machine"] - sampled.get("kernel", 0.0)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def report(budgets_path: str) -> int:
    config = json.loads(Path(budgets_path).read_text())
    budgets: dict[str, float] = config["phases"]
    margin = float(config["margin"])
    phases = _phases()
    events = _events()
    problems: list[str] = []
    print("== where the time went (wall; own = this run's CPU, other = other work, not the kernel)")
    print("   (the sim slice runs beside the phases after the bench guard: their own CPU overlaps)")
    print(f"{'phase':<44} {'wall':>7} {'budget':>7} {'own CPU':>8} {'other':>7}")
    for phase, begun, ended in phases:
        wall = ended["wall"] - begun["wall"]
        own = ended["own"] - begun["own"]
        other = max(0.0, _busy(ended) - _busy(begun) - own)
        other_cores = other / wall if wall > 0 else 0.0
        budget = budgets.get(phase)
        shown = _minutes(budget) if budget is not None else "-"
        print(
            f"{phase:<44} {_minutes(wall):>7} {shown:>7} {_minutes(own):>8} {other_cores:>5.2f} c"
        )
        if budget is not None and wall > budget * margin:
            what = (
                f"phase '{phase}' took {_minutes(wall)}, over {margin:g}x its budget of "
                f"{_minutes(budget)} (.ci/budgets.json)"
            )
            if other_cores > QUIET_CORES:
                print(f"   note: {what}, but other work took {other_cores:.2f} cores meanwhile")
            else:
                problems.append(what)
    builds = os.environ.get("HETGITOPS_CI_BUILD_TIMES")
    if builds and Path(builds).is_file():
        print("== Go builds (scripts/gobuilds: two lanes; 'at' = since the builds started)")
        print(Path(builds).read_text().rstrip())
    if events:
        # Up to now, not to the last event: a run that failed inside a phase has no end event,
        # and its total must still count that phase (a failed CI run once said 10 min for 56).
        first, last = events[0], {k: v for k, v in sample().items()}
        total = float(str(last["wall"])) - float(str(first["wall"]))
        own = float(str(last["own"])) - float(str(first["own"]))
        begun = {k: float(str(v)) for k, v in first.items() if k not in ("event", "phase")}
        other = _busy(last) - _busy(begun) - own
        other_cores = max(0.0, other) / total if total > 0 else 0.0
        print(f"== total: {_minutes(total)} ({total:.0f}s; other work {other_cores:.2f} cores)")
        limit = config.get("total")
        if limit is not None and total > float(limit) * margin and other_cores <= QUIET_CORES:
            problems.append(
                f"the whole run took {_minutes(total)}, over {margin:g}x {_minutes(float(limit))}"
            )
    for problem in problems:
        print(
            f"CI budget exceeded: {problem}; the machine was quiet, so a change made it slower. "
            "Find the slow test with `pytest --durations=20`, or raise the budget in "
            ".ci/budgets.json with the reason in the commit.",
            file=sys.stderr,
        )
    return 1 if problems else 0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("begin", "end", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    command, argument = argv
    if command == "begin":
        return begin(argument)
    if command == "end":
        return end(argument)
    return report(argument)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
