"""Structure-aware fuzz of `explain -f` (issue 33 item 12): the manifests `hetgitops jobs`
renders for the bundled policies and the explain tests' manifests of every kind, with fields
replaced by wrong types and values or removed (seeded). Each mutant is answered (an
explanation) or refused with its location, never an internal error, never a hang.

HETGITOPS_FUZZ_EXPLAIN=20000 for a longer run (the suite runs 5,000 mutants, issue 33's size:
about 13 s of CPU here).
"""

from __future__ import annotations

import copy
import datetime as dt
import os
import random
import re
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import fastyaml
import pytest
import yaml
from click.testing import CliRunner

from hetgitops.cli import main as cli
from hetgitops.compilers.jobs.render import compile_jobs
from hetgitops.explain import run
from hetgitops.explain.workload import WorkloadError

from .test_explain import KINDS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
MUTANTS = int(os.environ.get("HETGITOPS_FUZZ_EXPLAIN", "5000"))
SEED = 33
# Wrong types and values the API server refuses (or that are odd but valid: 0, huge counts).
VALUES: list[Any] = [
    None, "", "x", "<script>alert(1)</script>", -1, -8, 0, 2.5, "1.5", "-1Gi", "1e999999",
    True, [], {}, [1, "a"], {"k": [1]}, {"a": {"b": None}}, 2**31, 2**63, 10**30, "Exists",
    "In", [{"key": "k", "operator": "Gt", "values": ["x"]}], "NoSchedule", "8", 8, 1, "2Gi",
    float("inf"), float("nan"), {1: "a"}, "9" * 400, 2**31 - 1, "0.5", "100m", [None],
]  # fmt: skip
LOCATED = re.compile(r"^m\.yaml(:\d+:\d+)?: ")
HANG_SECONDS = 5


def seeds() -> list[dict[str, Any]]:
    policy = run.load_policy([REPO / "policies"], NOW)
    rendered = [m.obj for m in compile_jobs(policy)[0]]
    meta = {
        "name": "x",
        "namespace": "pretrain",
        "labels": {"kueue.x-k8s.io/queue-name": "pretraining"},
        "annotations": {"scheduling.k8s.io/group-min-member": "2"},
    }
    return [*rendered, *({**obj, "metadata": meta} for obj, _ in KINDS.values())]


def paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths(item, (*path, i))


def mutate(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice([p for p in paths(doc) if p])
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        if isinstance(parent, dict) and rng.random() < 0.15:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(VALUES))
    return doc


class Hang(Exception):
    pass


def _hang(signum: int, frame: FrameType | None) -> None:
    raise Hang(f"no answer within {HANG_SECONDS} s")


def answer(text: str, policy: Any) -> str:
    """`explained`, or `refused` with a located message; anything else fails the test."""
    try:
        found = run.explain_all(policy, run.manifests(text, "m.yaml"))
    except WorkloadError as exc:
        assert LOCATED.match(str(exc)), str(exc)
        return "refused"
    assert found and all(e.verdict for e in found)
    return "explained"


def test_wrong_types_and_values_are_answered_or_refused_never_a_crash() -> None:
    policy = run.load_policy([REPO / "policies"], NOW)
    rng = random.Random(SEED)
    base = seeds()
    outcomes: Counter[str] = Counter()
    previous = signal.signal(signal.SIGALRM, _hang)
    try:
        for i in range(MUTANTS):
            text = fastyaml.dump(mutate(rng.choice(base), rng), sort_keys=False)
            signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
            try:
                outcomes[answer(text, policy)] += 1
            except BaseException as exc:
                raise AssertionError(f"mutant {i}: {type(exc).__name__}: {exc}\n{text}") from exc
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert sum(outcomes.values()) == MUTANTS
    # Both sides are exercised: mutants that still read, and refusals.
    assert outcomes["explained"] > MUTANTS // 20 and outcomes["refused"] > MUTANTS // 5, outcomes


def test_mutants_through_the_cli_exit_with_an_answer_or_a_usage_error(tmp_path: Path) -> None:
    """The same mutants end as exit 0, 1 or 2 through the command (never 3)."""
    rng = random.Random(SEED + 1)
    base = seeds()
    codes: Counter[int] = Counter()
    for i in range(12):
        manifest = tmp_path / f"m{i}.yaml"
        manifest.write_text(yaml.safe_dump(mutate(rng.choice(base), rng), sort_keys=False))
        args = ["explain", "--policy", str(REPO / "policies"), "--now", NOW.isoformat()]
        result = CliRunner().invoke(cli.main, [*args, "-f", str(manifest)])
        assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
        if result.exit_code == 2:
            where = re.escape(str(manifest))
            assert re.match(rf"hetgitops explain: {where}:\d+:\d+: ", result.stderr)
        codes[result.exit_code] += 1
    assert codes[2], codes
