"""The advice property (issue 32 item 4), as plain code the tests and a by-hand sweep share:
over policygen's policies and requests drawn for each, every job explain does not admit gets
advice; its edits, applied to the policy documents as JSON patches, give a policy `validate`
accepts and on which explain admits the job.

    python tests/explain/advice_loop.py 0-99 20     # seeds 0-99, 20 requests each: the table
"""

from __future__ import annotations

import copy
import datetime as dt
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: tests/ on the path, as pytest puts it
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from generated.policygen import dump, generate
from harness.simcluster.explain_requests import edge_requests
from harness.simcluster.workloads import requests_for

from hetgitops import api
from hetgitops.diagnostics import Severity
from hetgitops.explain import request as requests
from hetgitops.explain import run
from hetgitops.explain.answer import Explanation
from hetgitops.explain.explanation import explain
from hetgitops.explain.workload import Workload, WorkloadError

NOW = dt.date(2026, 12, 1)
Docs = dict[str, list[dict[str, Any]]]


def patched(docs: Docs, patches: list[dict[str, Any]]) -> Docs:
    """The documents with each RFC 6902 `add` / `replace` / `move` applied to the document its
    `kind` and `name` say (a plain reading of RFC 6902, apart from explain's code)."""
    out = copy.deepcopy(docs)
    for patch in patches:
        (doc,) = [
            d
            for ds in out.values()
            for d in ds
            if d["kind"] == patch["kind"] and d["metadata"]["name"] == patch["name"]
        ]
        if patch["op"] == "move":
            held = _take(doc, _parts(patch["from"]))
            _put(doc, _parts(patch["path"]), "add", held)
            continue
        _put(doc, _parts(patch["path"]), patch["op"], copy.deepcopy(patch["value"]))
    return out


def _parts(pointer: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]


def _take(doc: Any, parts: list[str]) -> Any:
    parent = doc
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    last = parts[-1]
    return parent.pop(int(last)) if isinstance(parent, list) else parent.pop(last)


def _put(doc: Any, parts: list[str], op: str, value: Any) -> None:
    parent: Any = doc
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    last = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        assert index <= len(parent) if op == "add" else index < len(parent), parts
        if op == "add":
            parent.insert(index, value)
        else:
            parent[index] = value
    else:
        assert op == "add" or last in parent, parts
        parent[last] = value


def write(docs: Docs, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, documents in docs.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump(documents), encoding="utf-8")
    return folder


@dataclass
class Tally:
    cases: int = 0
    admitted: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    closed: int = 0
    edits: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def workloads(policy: Any, seed: int, count: int) -> Iterator[Workload]:
    for asked in requests_for(policy, seed, count):
        try:
            yield requests.from_request(policy, asked)
        except WorkloadError:
            continue
    for item in edge_requests(policy, seed, max(1, count // 4)):
        yield item.workload


def _edit_kind(patch: dict[str, Any]) -> str:
    path = patch["path"]
    if patch["op"] == "move":
        return "quota entry first"
    if patch["kind"] == "Pool":
        return "add nodes"
    if path.endswith("/borrowingLimit"):
        return "borrowingLimit"
    if path.endswith("/budget/monthly"):
        return "budget"
    if patch["op"] == "add" and path.count("/") == 3:
        return "new quota entry"
    return "quota raise"


def check_case(docs: Docs, workload: Workload, e: Explanation, where: Path, tally: Tally) -> None:
    """One explanation that is not admitted: its advice closes the loop, or says none does."""
    advice = e.advice
    assert advice is not None, "no advice for a job explain does not admit"
    tally.kinds[advice.kind] += 1
    if advice.kind != "edits":
        return
    patches = [edit.patch() for edit in advice.edits]
    tally.edits.update({_edit_kind(p) for p in patches})
    folder = write(patched(docs, patches), where)
    result = api.validate([folder], api.Options(now=NOW))
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    if errors:
        tally.failures.append(f"{workload.name}: validate refuses {errors[0].rule}: {errors[0]}")
        return
    again = explain(run.load_policy([folder], NOW), workload)
    if again.verdict != "admitted":
        tally.failures.append(f"{workload.name}: after {patches}: {again.verdict} {again.message}")
        return
    tally.closed += 1


def sweep(seeds: list[int], count: int, tally: Tally | None = None) -> Tally:
    tally = tally or Tally()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for seed in seeds:
            docs = generate(seed)
            policy = run.load_policy([write(docs, base / f"s{seed}")], NOW)
            for n, workload in enumerate(workloads(policy, seed, count)):
                e = explain(policy, workload)
                if e.verdict == "admitted":
                    tally.admitted += 1
                    continue
                if e.verdict not in ("pending", "unschedulable"):
                    continue
                tally.cases += 1
                before = len(tally.failures)
                check_case(docs, workload, e, base / f"s{seed}-{n}", tally)
                for i in range(before, len(tally.failures)):
                    tally.failures[i] = f"seed {seed}: {tally.failures[i]}"
    return tally


def table(tally: Tally) -> str:
    rows = [
        f"cases (pending or unschedulable): {tally.cases} (admitted: {tally.admitted})",
        "advice: " + ", ".join(f"{k} {n}" for k, n in sorted(tally.kinds.items())),
        "edits used: " + ", ".join(f"{k} {n}" for k, n in sorted(tally.edits.items())),
        f"closed the loop (validate 0 errors, admitted): {tally.closed} of {tally.kinds['edits']}",
        f"failures: {len(tally.failures)}",
        *tally.failures[:40],
    ]
    return "\n".join(rows)


if __name__ == "__main__":
    low, _, high = sys.argv[1].partition("-")
    print(table(sweep(list(range(int(low), int(high or low) + 1)), int(sys.argv[2]))))
