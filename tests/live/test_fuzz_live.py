"""Issue 33: the structure-aware fuzz of live answers (tests/live/fuzz.py). A seeded slice of
300 mutants on every run (the quick loop too); a `slow` sweep of HETGITOPS_FUZZ_LIVE mutants
(1,000 in the full run, about 40 s on a quiet 2-core machine; HETGITOPS_FUZZ_LIVE=5000 or
`python -m tests.live.fuzz 5000` for the issue's full sweep) and a sample as real processes.
Each defect it found has its case here, through the same commands (drift, import, explain,
explain workload, diff --kubeconfig)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.live import fuzz

SWEEP = int(os.environ.get("HETGITOPS_FUZZ_LIVE", "1000"))
CLI = [sys.executable, "-c", "from hetgitops.cli.entry import main; main()"]


@pytest.fixture(scope="module")
def seed() -> fuzz.Seed:
    return fuzz.seed()


def _report(tally: fuzz.Tally) -> str:
    cases = [*tally.crashes, *tally.hangs, *tally.silent][:5]
    return tally.line() + "".join(f"\n== {c}: {m}\n{s}" for m, c, s in cases)


def test_a_seeded_slice_of_live_mutants(seed: fuzz.Seed) -> None:
    tally = fuzz.sweep(seed, 300, 33)
    assert not (tally.crashes or tally.hangs or tally.silent), _report(tally)
    assert tally.located > 100 and tally.same > 50  # the mutants reach the readers


@pytest.mark.slow
def test_a_sweep_of_live_mutants(seed: fuzz.Seed) -> None:
    tally = fuzz.sweep(seed, SWEEP, 2026)
    assert not (tally.crashes or tally.hangs or tally.silent), _report(tally)


def _index(seed: fuzz.Seed, plural: str, name: str) -> int:
    return next(i for i, o in enumerate(seed.items[plural]) if fuzz._name(o) == name)


# (plural, name, path, op, value, command, what the located exit 4 says): each was an internal
# error (exit 3) or a wrong answer without a word before live.shape checked the field.
CASES: list[tuple[str, str, tuple[Any, ...], str, Any, str, str]] = [
    (
        "clusterqueues",
        "",
        ("status", "flavorsUsage", 0, "name"),
        "delete",
        None,
        "explain",
        "status.flavorsUsage[0].name is missing",
    ),
    (
        "workloads",
        "job-2",
        ("spec", "podSets", 0, "template", "spec", "containers"),
        "list",
        [1, "x"],
        "explain-workload",
        "containers[0] is a number, not an object",
    ),
    (
        "pods",
        "job-1-abcde",
        ("spec", "containers", 0, "resources", "requests"),
        "number",
        42,
        "explain",
        "spec.containers[0].resources.requests is a number, not an object",
    ),
    (
        "nodes",
        "",
        ("status", "allocatable", "nvidia.com/gpu"),
        "quantity",
        "1e400",
        "explain",
        "a quantity out of range",
    ),
    # Found by the 5,000-mutant sweep (seed 2026): explain parsed the queue-order time of a
    # Workload whose creationTimestamp is no time (ValueError, exit 3).
    (
        "workloads",
        "job-1",
        ("metadata", "creationTimestamp"),
        "quantity",
        "8 ",
        "explain",
        "metadata.creationTimestamp is '8 ', not an RFC 3339 time",
    ),
    # A digit that is no ASCII digit: apimachinery reads only 0-9 (quantity.go:202), the
    # shape check's `\d` took any Unicode digit and left it to a reader that did not.
    (
        "nodes",
        "",
        ("status", "allocatable", "nvidia.com/gpu"),
        "quantity",
        "\u0668",
        "explain",
        "not a quantity (negative or unreadable)",
    ),
    (
        "pods",
        "job-1-abcde",
        ("spec", "containers", 0, "resources", "requests"),
        "object",
        {"nvidia.com/gpu": "-8"},
        "diff",
        "not a quantity (negative or unreadable)",
    ),
    (
        "events",
        "job-2.1",
        ("message",),
        "null",
        True,
        "explain-workload",
        "message is a boolean, not a string",
    ),
    ("configmaps", "", ("data",), "number", 0.5, "import", "data is a number, not an object"),
    # The shape check itself walked `true` or `0.5` as a list (TypeError).
    (
        "customresourcedefinitions",
        "clusterqueues.kueue.x-k8s.io",
        ("spec", "versions"),
        "boolean",
        True,
        "drift",
        "spec.versions is a boolean, not a list",
    ),
    (
        "podgroups",
        "pg-1",
        ("status", "conditions"),
        "number",
        0.5,
        "diff",
        "status.conditions is a number, not a list",
    ),
    (
        "clusterqueues",
        "research",
        ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota"),
        "list",
        [],
        "drift",
        "nominalQuota is a list, not a quantity",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[5]}" for c in CASES])
def test_an_out_of_shape_field_is_a_located_exit_4(seed: fuzz.Seed, case: Any) -> None:
    plural, name, path, op, value, command, said = case
    index = _index(seed, plural, name) if name else 0
    if plural == "clusterqueues" and not name:  # the one with usage
        index = next(i for i, o in enumerate(seed.items[plural]) if "status" in o)
    if plural == "nodes":
        index = next(
            i for i, o in enumerate(seed.items[plural]) if path[-1] in o["status"]["allocatable"]
        )
    obj = seed.items[plural][index]
    mutant = fuzz.Mutant(plural, index, fuzz._name(obj), None, path, op, value)
    (kind, message), _ = fuzz.outcome(seed, command, mutant.apply(seed.items))
    assert kind == "error", message
    assert said in message and fuzz._name(obj) in message


def test_a_crd_with_null_versions_is_a_finding_naming_it(seed: fuzz.Seed) -> None:
    """The full sweep's: `spec.versions: null` was a TypeError in drift (exit 3)."""
    name = "resourceflavors.kueue.x-k8s.io"
    index = _index(seed, "customresourcedefinitions", name)
    mutant = fuzz.Mutant(
        "customresourcedefinitions", index, name, None, ("spec", "versions"), "null", None
    )
    (kind, answer), _ = fuzz.outcome(seed, "drift", mutant.apply(seed.items))
    assert kind == "ok", answer
    assert f"the installed CRD {name} does not serve v1beta2 (it serves nothing)" in answer


@pytest.mark.parametrize(
    ("plural", "path", "op", "value", "said"),
    [
        ("cohorts", ("spec",), "null", None, ""),  # was: AttributeError in the round trip
        (
            "clusterqueues",
            ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota"),
            "delete",
            None,
            "nominalQuota to",  # was: QuantityError; now the round trip's finding
        ),
    ],
)
def test_import_reads_an_absent_spec_or_quota_without_crashing(
    seed: fuzz.Seed, plural: str, path: tuple[Any, ...], op: str, value: Any, said: str
) -> None:
    index = 0 if plural == "cohorts" else _index(seed, plural, "research")
    obj = seed.items[plural][index]
    mutant = fuzz.Mutant(plural, index, fuzz._name(obj), None, path, op, value)
    (kind, answer), _ = fuzz.outcome(seed, "import", mutant.apply(seed.items))
    assert kind == "ok", answer
    before = fuzz.outcome(seed, "import", seed.items)[0][1]
    assert answer == before or fuzz._name(obj) in fuzz._changed(before, answer)
    assert said in answer


def _process(
    seed: fuzz.Seed, command: str, items: dict[str, list[Any]], tmp_path: Path
) -> tuple[int, str]:
    """`command` as a real process against a real local server answering `items`."""
    from tests.drift.hostile import kubeconfig, send_json, serving

    def answer(handler: BaseHTTPRequestHandler) -> None:
        plural = handler.path.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        if plural not in fuzz.KINDS:
            send_json(handler, {"kind": "Status", "message": "not found", "code": 404}, 404)
            return
        group, version, kind = fuzz.KINDS[plural]
        body = {"kind": f"{kind}List", "apiVersion": f"{group}/{version}".strip("/")}
        send_json(handler, {**body, "metadata": {}, "items": items.get(plural, [])})

    out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}"
    explain = ["explain", "--policy", str(fuzz.POLICIES), "--now", "2026-12-01"]
    args = {
        "drift": ["drift", str(fuzz.POLICIES)],
        "import": ["import", "--output", str(out)],
        "explain": [*explain, "--team", seed.team, "--gpus", "8"],
        "explain-workload": [*explain, "workload", "/".join(seed.workload_ref)],
    }[command]
    with serving(answer) as server:
        config = kubeconfig(tmp_path / "kc", server.url)
        done = subprocess.run(
            [*CLI, *args, "--kubeconfig", str(config)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    said = (done.stdout + done.stderr).replace(str(out), "OUT")
    return done.returncode, said


@pytest.mark.slow
@pytest.mark.parametrize("command", ["drift", "import", "explain", "explain-workload"])
def test_a_sample_of_mutants_as_real_processes(
    seed: fuzz.Seed, command: str, tmp_path: Path
) -> None:
    """The in-process oracle, through the CLI against a real HTTP server: 3 mutants of the kinds
    `command` reads; exit 0, 1 or 4, and an exit 4 or a changed report names the object."""
    _, reads = fuzz.outcome(seed, command, seed.items)
    code, before = _process(seed, command, seed.items, tmp_path)
    assert code in (0, 1), before
    chosen = [m for m in fuzz.mutants(seed, 400, random.Random(33)) if m.plural in reads]
    for mutant in chosen[:3]:
        exit_code, said = _process(seed, command, mutant.apply(seed.items), tmp_path)
        assert exit_code in (0, 1, 4), (str(mutant), said)
        if exit_code == 4 or said != before:
            assert fuzz._named(mutant, fuzz._changed(before, said)) or not fuzz.invalid(
                mutant, mutant.original
            ), (str(mutant), said)


def test_a_volcano_queue_weight_of_false_is_the_round_trips_finding(seed: fuzz.Seed) -> None:
    """The full sweep's (seed 7): `weight: false` was written into the Team (a bool is an int
    in Python), and the import failed on the written policy's schema without naming the Queue."""
    name = "data-preprocessing-rtx4090-dev"
    index = _index(seed, "queues", name)
    mutant = fuzz.Mutant("queues", index, name, 1, ("spec", "weight"), "boolean", False)
    (kind, answer), _ = fuzz.outcome(seed, "import", mutant.apply(seed.items))
    assert kind == "ok", answer
    assert f"Queue {name}: the first sync sets spec.weight to 1 (the cluster has false)" in answer
    assert "weight: false" not in answer
