"""Benchmark of `hetgitops validate`: the bundled policies and a large synthetic fleet.

Usage (from the repository root, with hetgitops importable):

    python bench/bench_validate.py                 # bundled + synthetic, 5 warm repeats
    python bench/bench_validate.py --repeat 10     # more warm repeats (the median is shown)
    python bench/bench_validate.py --keep /tmp/big # also keep the synthetic policy there

The synthetic fleet has 50 card types, 200 pools of 100 nodes each (20,000 nodes written as
ranges such as `p007-n[001:100]`), 100 teams with two quotas each, 3 tiers and 4 workload
profiles, spread over about 40 files; it is valid, so every stage runs, output checks included.

Columns, in seconds: `import` is importing hetgitops.api; `cold` is the first `api.validate()`
of a fresh process (it builds the JSON Schema validators and the output-schema caches); `warm`
is the median of later calls. Then the warm stages one by one: `load` (read + YAML + source
maps), `schema`, `model` (build the Policy), `checks` (semantic rules), `compile`, `output`
(Kubernetes/CRD schema checks of the manifests). This is a benchmark, not a test: it asserts
nothing and prints a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
NOW = "2026-09-01"
HEADER = {"apiVersion": "hetgitops.io/v1alpha1"}
CARDS, POOLS, NODES_PER_POOL, TEAMS = 50, 200, 100, 100


def _doc(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {**HEADER, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _fleet() -> list[dict[str, Any]]:
    fleet = _doc(
        "Fleet",
        "synthetic",
        {
            "cluster": "synthetic-prod",
            "versions": {
                "kubernetes": "1.33",
                "kueue": "0.19.2",
                "volcano": "1.15.1",
                "gpuOperator": "26.7.0",
            },
            "cohorts": [
                {"name": "root"},
                *({"name": f"org-{i}", "parent": "root"} for i in range(10)),
            ],
            "defaults": {"cpuPerCard": 8, "memoryPerCard": "64Gi"},
        },
    )
    labels = [
        {"key": f"hetgitops.io/{name}", "from": name}
        for name in ("card-type", "vendor", "pool", "purpose")
    ]
    taxonomy = _doc("LabelTaxonomy", "node-labels", {"labels": labels})
    return [fleet, taxonomy]


def _card(i: int) -> dict[str, Any]:
    return _doc(
        "CardType",
        f"card-{i:02d}",
        {
            "vendor": "nvidia",
            "model": f"Model-{i:02d}",
            "resourceName": "nvidia.com/gpu",
            "productNames": [f"NVIDIA-Model-{i:02d}"],
            "memoryGiB": 80,
            "interconnect": "nvlink",
            "precisions": ["fp32", "bf16"],
            "lifecycle": "production",
            "performance": {
                "coefficient": 1.0 + i / 100,
                "reference": "A100-SXM4-80GB",
                "coefficientSet": "2026.2",
            },
            "cost": {"perCardHour": 1.5},
            "images": {"pytorch": "nvcr.io/nvidia/pytorch:25.08-py3"},
        },
    )


def _pool(i: int) -> dict[str, Any]:
    return _doc(
        "Pool",
        f"pool-{i:03d}",
        {
            "cardType": f"card-{i % CARDS:02d}",
            "purpose": "training",
            "cardsPerNode": 8,
            "nodes": [
                {
                    "names": f"p{i:03d}-n[001:{NODES_PER_POOL:03d}]",
                    "zone": f"zone-{i % 4}",
                    "rack": f"rack-{i:03d}",
                }
            ],
            "lending": {"maxPercent": 50},
        },
    )


def _team(i: int) -> dict[str, Any]:
    quotas = [
        {"pool": f"pool-{(2 * i + k) % POOLS:03d}", "cards": 400, "borrowingLimit": 100}
        for k in range(2)
    ]
    return _doc(
        "Team",
        f"team-{i:03d}",
        {
            "namespaces": [f"team-{i:03d}"],
            "cohort": f"org-{i % 10}",
            "quotas": quotas,
            "tiers": ["training", "dev"],
            "budget": {"monthly": 10_000_000, "currency": "USD"},
        },
    )


def _tiers_and_profiles() -> list[dict[str, Any]]:
    tiers = [
        _doc("PriorityTier", name, {"value": value})
        for name, value in (("online", 100000), ("training", 10000), ("dev", 100))
    ]
    profiles = [
        _doc(
            "WorkloadProfile",
            f"profile-{i}",
            {
                "framework": "job",
                "tier": "training",
                "image": "pytorch",
                "requirements": {"cardsPerNode": 8, "gang": 1 + i, "precisions": ["bf16"]},
            },
        )
        for i in range(4)
    ]
    return tiers + profiles


def write_synthetic(root: Path) -> Path:
    """The synthetic policy as ~40 files under `root/policy`; returns that directory."""
    policy = root / "policy"
    files: dict[str, list[dict[str, Any]]] = {
        "fleet.yaml": _fleet(),
        "cards.yaml": [_card(i) for i in range(CARDS)],
        "tiers.yaml": _tiers_and_profiles(),
    }
    for chunk in range(0, POOLS, 10):
        files[f"pools/pools-{chunk:03d}.yaml"] = [_pool(i) for i in range(chunk, chunk + 10)]
    for chunk in range(0, TEAMS, 5):
        files[f"teams/teams-{chunk:03d}.yaml"] = [_team(i) for i in range(chunk, chunk + 5)]
    for name, docs in files.items():
        path = policy / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return policy


# -- measuring -----------------------------------------------------------------------------------


def cold(policy: Path) -> dict[str, Any]:
    """Import time and the first validate() of a fresh interpreter, measured in a child."""
    code = (
        "import json, sys, time, datetime as dt; from pathlib import Path\n"
        "t = time.perf_counter(); from hetgitops import api; i = time.perf_counter() - t\n"
        f"o = api.Options(now=dt.date.fromisoformat('{NOW}'))\n"
        "t = time.perf_counter(); r = api.validate([Path(sys.argv[1])], o)\n"
        "c = time.perf_counter() - t\n"
        "print(json.dumps({'import': i, 'cold': c, 'findings': len(r.diagnostics),"
        " 'files': len(r.files), 'documents': r.documents, 'manifests': len(r.manifests)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(policy)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    figures: dict[str, Any] = json.loads(out.stdout)
    return figures


def warm_stages(policy: Path, repeat: int) -> dict[str, float]:
    """Median seconds per stage over `repeat` runs, in this (already warmed-up) process."""
    from hetgitops import api, checks, compilers
    from hetgitops.conformance import output_checks
    from hetgitops.load.documents import load_paths
    from hetgitops.model import schema
    from hetgitops.model.building import build_policy

    options = api.Options(now=dt.date.fromisoformat(NOW))
    api.validate([policy], options)  # warm every cache first
    samples: dict[str, list[float]] = {}

    def sample(stage: str, function: Callable[..., Any], *args: Any) -> Any:
        gc.collect()  # a collection triggered by the previous stage's garbage is not this one's
        started = time.perf_counter()
        value = function(*args)
        samples.setdefault(stage, []).append(time.perf_counter() - started)
        return value

    def schema_stage(documents: list[Any]) -> list[Any]:
        return [d for doc in documents for d in schema.check_document(doc)]

    for _ in range(repeat):
        sample("warm", api.validate, [policy], options)
        loaded = sample("load", load_paths, [policy])
        sample("schema", schema_stage, loaded.documents)
        model, _ = sample("model", build_policy, loaded.documents)
        sample("checks", checks.run_checks, model, checks.CheckContext(options.now))
        manifests = sample("compile", compilers.compile_policy, model)
        sample("output", output_checks.check, manifests, model)
    return {stage: statistics.median(values) for stage, values in samples.items()}


COLUMNS = ("import", "cold", "warm", "load", "schema", "model", "checks", "compile", "output")


def report(rows: list[tuple[str, dict[str, Any]]]) -> str:
    head = f"{'policy':10} {'files':>5} {'docs':>5} {'manifests':>9} {'findings':>8}"
    lines = [head + "".join(f" {c:>7}" for c in COLUMNS)]
    for name, row in rows:
        counts = (
            f"{name:10} {row['files']:>5} {row['documents']:>5} {row['manifests']:>9} "
            f"{row['findings']:>8}"
        )
        lines.append(counts + "".join(f" {row[c]:>7.3f}" for c in COLUMNS))
    return "\n".join(lines)


def measure(name: str, policy: Path, repeat: int) -> tuple[str, dict[str, Any]]:
    row = cold(policy)
    row.update(warm_stages(policy, repeat))
    return name, row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="warm runs per stage (median)")
    parser.add_argument("--keep", type=Path, help="copy the synthetic policy to this directory")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    with tempfile.TemporaryDirectory(prefix="hetgitops-bench-") as tmp:
        synthetic = write_synthetic(Path(tmp))
        if args.keep:
            shutil.copytree(synthetic, args.keep, dirs_exist_ok=True)
        rows = [
            measure("bundled", REPO / "policies", args.repeat),
            measure("synthetic", synthetic, args.repeat),
        ]
    print(report(rows))


if __name__ == "__main__":
    main()
