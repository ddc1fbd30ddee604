"""Generated policies (tests/generated/policygen.py) through validate, render, the import round
trip, the Kueue == Volcano == Koordinator twins and key-order independence. The quick loop runs
a few seeds of each; the `slow` sweeps run the counts issue 32 asks for."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from adopt.test_import import _as_cluster, _names
from checks.test_twins import check_koordinator_twin, check_volcano_twin
from click.testing import CliRunner

from generated.policygen import dump, generate, write_policy
from hetgitops import api
from hetgitops.adopt import sources
from hetgitops.adopt.run import import_objects
from hetgitops.cli.main import main

QUICK = list(range(10))
SLOW = list(range(10, 110))
ROUND_TRIP_SLOW = list(range(10, 60))
# What the round trip may report on a generated fleet: the constructs import cannot read back
# yet, each an error finding located at the written policy, as (object kind, field fragment).
# None: the five classes seeds 0-109 found (pciDeviceIds, a MIG pool's percentage with only
# whole-card quotas, an isolated pool of cohort-less teams, MIG-only quotas lending unlike
# amounts, limits under migStrategy single) were fixed in import (tests/generated/test_found.py).
CANNOT_READ_BACK: tuple[tuple[str, str], ...] = ()


def _can_not_read_back(message: str) -> bool:
    kind = message.split(" ")[0]
    return any(kind == k and fragment in message for k, fragment in CANNOT_READ_BACK)


def _seeds(quick: list[int], slow: list[int]) -> list[Any]:
    return [*quick, *(pytest.param(s, marks=pytest.mark.slow) for s in slow)]


def test_a_seed_gives_the_same_bytes_and_seeds_differ() -> None:
    texts = [{n: dump(d) for n, d in generate(s).items()} for s in (3, 3, 4)]
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]


def test_generation_is_fast() -> None:
    started = time.process_time()
    for seed in range(20):
        generate(seed)
    assert (time.process_time() - started) / 20 < 0.5


def test_the_sweep_covers_the_language() -> None:
    """Over the quick seeds' and the slow sweep's policies, every construct the generator is
    meant to reach appears (a generator bug that lost one would otherwise pass unnoticed)."""
    seen: set[str] = set()
    for seed in range(60):
        seen |= _constructs(generate(seed))
    assert seen >= {
        "vendor:nvidia", "vendor:amd", "vendor:huawei", "vendor:cambricon", "mig:single",
        "mig:mixed", "mig+whole", "timeSlicing", "mps", "topology", "no-topology",
        "cohort-depth:1", "cohort-depth:2", "cohort-depth:3", "borrowingLimit", "lendingLimit",
        "hostLimits", "cpuPerCard", "migBorrowingLimits",
        "isolated", "tainted", "fairSharing", "preemption", "target:volcano",
        "target:koordinator", "kueue-only", "migProfile", "normalized", "renameByDefault",
        "topology:required", "target:monitoring", "target:drift-rbac", "flavorNodeTaints",
        "volcano:team", "volcano:accelerators", "namespaceLabels",
        "namespaceSelector", "namespaceQuota.accelerators", "workloadDescription",
        "coveredResources", "limitsCoverAll",
        *(f"framework:{f}" for f in ("job", "jobset", "pytorchjob", "volcano-job",
                                      "leaderworkerset", "deployment", "rayjob", "raycluster",
                                      "rayservice")),
    }  # fmt: skip


def _constructs(docs: dict[str, list[dict[str, Any]]]) -> set[str]:
    fleet = docs["fleet.yaml"][0]["spec"]
    out = {f"vendor:{c['spec']['vendor']}" for c in docs["cards.yaml"]}
    out |= {f"target:{t}" for t in fleet["targets"]}
    out.add("kueue-only" if "volcano" not in fleet["targets"] else "both")
    out.add("topology" if "topology" in fleet else "no-topology")
    parents = {c["name"]: c.get("parent") for c in fleet["cohorts"]}
    out.add(f"cohort-depth:{max(_depth(parents, c) for c in parents)}")
    out |= {"fairSharing"} if fleet["kueue"]["configuration"]["fairSharing"] else set()
    for pool in docs["pools.yaml"]:
        spec = pool["spec"]
        if "mig" in spec:
            out.add(f"mig:{fleet['gpuOperator']['migStrategy']}")
            used = {g for d in spec["mig"]["devices"] if d["gpus"] != "all" for g in d["gpus"]}
            if used and len(used) < spec["cardsPerNode"]:
                out.add("mig+whole")
        out |= {k for k in ("timeSlicing", "mps", "isolated") if k in spec}
        out |= {"renameByDefault"} if spec.get("timeSlicing", {}).get("renameByDefault") else set()
        out |= {"tainted"} if "taints" in spec and not spec.get("isolated") else set()
        out |= {"flavorNodeTaints"} if spec.get("kueue", {}).get("flavorNodeTaints") else set()
    for team in docs["teams.yaml"]:
        out |= {"preemption"} if "preemption" in team["spec"] else set()
        out |= {"namespaceLabels"} if "namespaceLabels" in team["spec"] else set()
        out |= (
            {"namespaceSelector"} if "namespaceSelector" in team["spec"].get("kueue", {}) else set()
        )
        quota = team["spec"].get("namespaceQuota", {})
        out |= {"namespaceQuota.accelerators"} if "accelerators" in quota else set()
        keys = ("borrowingLimit", "lendingLimit", "normalized", "hostLimits", "cpuPerCard",
                "migBorrowingLimits", "limitsCoverAll")  # fmt: skip
        kueue = team["spec"].get("kueue", {})
        out |= {"coveredResources"} if "coveredResources" in kueue else set()
        out |= {k for q in team["spec"]["quotas"] for k in keys if k in q}
        volcano = team["spec"].get("volcano", {})
        out |= {f"volcano:{volcano[k]}" for k in ("layout", "resources") if k in volcano}
    for tier in docs["tiers.yaml"]:
        out |= {"workloadDescription"} if "workloadDescription" in tier["spec"] else set()
    for profile in docs["profiles.yaml"]:
        out.add(f"framework:{profile['spec']['framework']}")
        out |= {"migProfile"} if "migProfile" in profile["spec"]["requirements"] else set()
        out |= {f"topology:{k}" for k in profile["spec"].get("topology", {})}
    return out


def _depth(parents: dict[str, str | None], name: str) -> int:
    depth = 1
    while (name := parents[name] or "") in parents:
        depth += 1
    return depth


@pytest.mark.parametrize("seed", _seeds(QUICK, SLOW))
def test_a_generated_policy_validates_and_renders(seed: int, tmp_path: Path) -> None:
    """0 errors from validate; render --output exits 0 (the output checks pass)."""
    policy = write_policy(seed, tmp_path / "policy")
    errors = [d for d in api.validate([policy]).diagnostics if d.severity.name == "ERROR"]
    assert errors == [], (seed, [f"{d.rule}: {d.message} ({d.span})" for d in errors])
    run = CliRunner().invoke(main, ["render", str(policy), "--output", str(tmp_path / "out")])
    assert run.exit_code == 0, (seed, run.output)
    assert any((tmp_path / "out").rglob("*.yaml"))


@pytest.mark.parametrize("seed", _seeds(QUICK[:3], ROUND_TRIP_SLOW))
def test_render_import_render_of_a_generated_policy(seed: int, tmp_path: Path) -> None:
    """The same objects come back, or a located import finding names what cannot be read back
    (CANNOT_READ_BACK lists the constructs allowed to)."""
    policy = write_policy(seed, tmp_path / "policy")
    first = api.render([policy])
    assert not first.failed() and first.manifests
    # Helm values (koordinator, gpu-operator) are no cluster objects: the cluster has none.
    objects = [o for o in _as_cluster(first) if isinstance(o.get("kind"), str)]
    text = "---\n".join(yaml.safe_dump(obj) for obj in objects)
    read = sources.Read()
    sources.from_text("rendered.yaml", text, read)
    result = import_objects(read, tmp_path / "imported", cluster="lab")
    assert result.rendered is not None and not result.rendered.failed(), (
        seed,
        [
            f"{d.rule}: {d.message}"
            for d in result.rendered.diagnostics
            if d.severity.name == "ERROR"
        ]
        if result.rendered
        else None,
    )
    before, after = _names(first.manifests), _names(result.rendered.manifests)
    assert before <= after, (seed, sorted(before - after))
    assert {kind for kind, _, _ in after - before} <= {"PriorityClass", "WorkloadPriorityClass"}
    findings = [
        d for d in result.diagnostics if d.rule.startswith("import-") and d.severity.name == "ERROR"
    ]
    unexpected = [
        f"{d.rule}: {d.message}"
        for d in findings
        if not (d.rule == "import-field-changes" and _can_not_read_back(d.message))
    ]
    assert unexpected == [], seed
    for d in findings:
        assert d.span.file.startswith(str(tmp_path)), (seed, d.rule, d.span)


def _has(seed: int, target: str) -> bool:
    return target in generate(seed)["fleet.yaml"][0]["spec"]["targets"]


@pytest.mark.parametrize("seed", _seeds(QUICK[:4], SLOW[:60]))
def test_kueue_volcano_and_koordinator_twins_of_a_generated_policy(
    seed: int, tmp_path: Path
) -> None:
    """The twin tests of tests/checks/test_twins.py on generated policies: Volcano (when the
    fleet renders it) and Koordinator (always, rendered beside Kueue)."""
    policy = write_policy(seed, tmp_path / "policy")
    if _has(seed, "volcano"):
        check_volcano_twin(policy)
    check_koordinator_twin(policy)


def _shuffled(value: Any, r: random.Random) -> Any:
    if isinstance(value, dict):
        keys = list(value)
        r.shuffle(keys)
        return {k: _shuffled(value[k], r) for k in keys}
    if isinstance(value, list):
        return [_shuffled(v, r) for v in value]
    return value


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("seed", _seeds(QUICK[:3], SLOW[:40]))
def test_output_does_not_depend_on_the_key_order_of_the_input(seed: int, tmp_path: Path) -> None:
    policy = write_policy(seed, tmp_path / "policy")
    shuffled = tmp_path / "shuffled"
    shuffled.mkdir()
    r = random.Random(seed)
    for name, docs in generate(seed).items():
        (shuffled / name).write_text(dump([_shuffled(d, r) for d in docs]))
    assert (shuffled / "fleet.yaml").read_text() != (policy / "fleet.yaml").read_text()
    outputs = []
    for folder in (policy, shuffled):
        out = tmp_path / f"out-{folder.name}"
        run = CliRunner().invoke(main, ["render", str(folder), "--output", str(out)])
        assert run.exit_code == 0, (seed, run.output)
        outputs.append(_tree(out))
    assert outputs[0] == outputs[1], seed
