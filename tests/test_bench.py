"""bench/fleetgen.py: every generated fleet is clean (no error, no warning) at several shapes,
and the same spec gives the same bytes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from pathlib import Path

import pytest

from bench.fleetgen import SMALL, FleetSpec, generate, write_policy
from hetgitops import api
from hetgitops.diagnostics import Severity

SHAPES = {
    "small": SMALL,
    "flat-cohorts": dataclasses.replace(SMALL, cohort_depth=0),
    "deep-cohorts": dataclasses.replace(SMALL, cohort_depth=4, cohort_fanout=2),
    "no-sharing": dataclasses.replace(SMALL, mig_every=0, timeslice_every=0, isolated_every=0),
    "many-teams": FleetSpec(nodes=600, pools=6, teams=90, cards=3, quotas_per_team=3),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_generated_fleet_is_clean(shape: str, tmp_path: Path) -> None:
    folder = write_policy(SHAPES[shape], tmp_path / "policy")
    options = api.Options(now=dt.date(2026, 9, 1))
    result = api.render([folder], options)
    problems = [d for d in result.diagnostics if d.severity >= Severity.WARNING]
    assert problems == []
    assert result.manifests
    jobs = api.jobs([folder], options)
    loud = [d for d in jobs.diagnostics if d.severity >= Severity.WARNING]
    assert [d for d in loud if d.rule != "koordinator-namespace-pinning"] == []
    assert jobs.manifests


def test_generation_is_deterministic_and_scales_teams() -> None:
    assert generate(SMALL) == generate(SMALL)
    big = generate(SMALL.scaled(2))
    teams = sum(len(docs) for name, docs in big.items() if name.startswith("teams/"))
    assert teams == SMALL.teams * 2


def test_guard_flags_only_ratios_beyond_the_margin(tmp_path: Path) -> None:
    from bench import run

    baseline = tmp_path / "baseline.json"
    baseline.write_text(
        json.dumps({"ratios": {"large": {"validate": 2.0, "render": 3.0, "jobs": 1.0}}})
    )
    report = {
        "fleets": {
            "large": {"commands": {"validate": {"user_ratio": 2.9}, "render": {"user_ratio": 4.6}}}
        }
    }
    assert run.guard(report, baseline, 1.5) == [
        "large render: 4.6 x the reference (user CPU), baseline 3.0 (limit 4.5)",
        "large jobs: not measured",
    ]


def test_guard_judges_the_commands_asked_for(tmp_path: Path) -> None:
    """The CI guard asks for some commands; the baseline's other entries (the newer cases,
    measured by the bench but not in the guard) are not "not measured"."""
    from bench import run

    baseline = tmp_path / "baseline.json"
    ratios = {"validate": 2.0, "explain-preempt": 9.0, "jobs": 1.0}
    baseline.write_text(json.dumps({"ratios": {"large": ratios}}))
    report = {"fleets": {"large": {"commands": {"validate": {"user_ratio": 3.1}}}}}
    assert run.guard(report, baseline, 1.5, ["validate", "jobs"]) == [
        "large validate: 3.1 x the reference (user CPU), baseline 2.0 (limit 3.0)",
        "large jobs: not measured",
    ]


def test_baseline_refresh_keeps_the_commands_not_measured(tmp_path: Path) -> None:
    from bench import run

    path = tmp_path / "baseline.json"
    machine = {"cpus": 2, "loadavg": [0.1, 0.1, 0.1]}

    def report(date: str, ratios: dict[str, float]) -> dict[str, object]:
        commands = {c: {"user_ratio": r} for c, r in ratios.items()}
        return {
            "date": date,
            "machine_before": machine,
            "fleets": {"large": {"commands": commands}},
        }

    run.write_baseline(report("d1", {"validate": 1.5, "jobs": 2.4}), path)
    run.write_baseline(report("d2", {"jobs-ray": 5.0, "jobs": 2.5}), path)
    written = json.loads(path.read_text())
    assert written["ratios"] == {"large": {"validate": 1.5, "jobs": 2.5, "jobs-ray": 5.0}}
    assert written["measured"] == "d1"
    assert written["refreshed"] == [
        {"measured": "d2", "machine": machine, "commands": ["jobs", "jobs-ray"]}
    ]


@pytest.mark.slow  # whole bench processes
def test_runner_reports_whole_process_figures(tmp_path: Path) -> None:
    from bench import run

    out = tmp_path / "report.json"
    argv = ["--fleets", "bundled", "--repeat", "1", "--commands", "validate,render"]
    assert run.main([*argv, "--no-throughput", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    fleet = report["fleets"]["bundled"]
    assert fleet["files"] > 50
    for command in ("validate", "render"):
        figures = fleet["commands"][command]
        assert figures["exit"] == [0]
        assert figures["wall"]["median"] >= figures["cpu"]["min"] * 0.5 > 0
        assert figures["rss_mb"] > 10 and figures["ratio"] > 0
    assert fleet["reference"]["cpu"]["median"] > 0


def test_targets_and_scaling_judge_ratios() -> None:
    from bench import run

    def figures(cpu: float, ratio: float, rss: float = 80.0) -> dict[str, object]:
        return {"cpu": {"median": cpu}, "ratio": ratio, "rss_mb": rss}

    large = {"validate": figures(1.0, 1.7), "render": figures(2.0, 3.0), "diff": figures(3.2, 5)}
    goals = run.targets(large)
    assert goals["validate"] == {"ratio_to": "reference", "ratio": 1.7, "limit": 1.8, "met": True}
    assert goals["diff"] == {"ratio_to": "render", "ratio": 1.6, "limit": 1.5, "met": False}
    fleets = {
        "large": {"commands": large},
        "10x": {"commands": {"validate": figures(9.0, 1.7), "render": figures(21.0, 3, 600)}},
    }
    grown = run.scaling(fleets)["10x"]
    assert grown["cpu_growth"] == {"validate": 9.0, "render": 10.5}
    assert (grown["within_bound"], grown["rss_within_limit"]) == (False, False)


def test_newer_fleet_adds_ray_and_koordinator_and_leaves_the_fleet_alone() -> None:
    """The bench's existing cases read the fleet as it was (byte for byte: no Ray image, no Ray
    profile, no koordinator target); the newer commands' fleet adds all three."""
    from bench.newcases import newer

    old, new = generate(SMALL), generate(newer(SMALL))
    assert {n for n in new if new[n] != old[n]} == {"fleet.yaml", "cards.yaml", "profiles.yaml"}
    assert "koordinator" not in old["fleet.yaml"][0]["spec"]["targets"]
    assert "koordinator" in new["fleet.yaml"][0]["spec"]["targets"]
    frameworks = {p["spec"]["framework"] for p in new["profiles.yaml"]}
    assert {"rayjob", "raycluster", "rayservice"} <= frameworks
    assert not {"rayjob", "raycluster", "rayservice"} & {
        p["spec"]["framework"] for p in old["profiles.yaml"]
    }


def test_newer_fleet_is_clean_and_renders_ray_templates(tmp_path: Path) -> None:
    from bench.newcases import newer

    folder = write_policy(newer(SMALL), tmp_path / "policy")
    options = api.Options(now=dt.date(2026, 9, 1))
    result = api.render([folder], options)
    # The newer fleet renders kueue beside koordinator with teams in several pools: the pinning
    # warning is true of it (checks/koordinator_pinning.py) and the bench keeps that shape.
    loud = [d for d in result.diagnostics if d.severity >= Severity.WARNING]
    assert [d for d in loud if d.rule != "koordinator-namespace-pinning"] == []
    assert any(m.obj.get("kind") == "ElasticQuota" for m in result.manifests)
    jobs = api.jobs([folder], options)
    loud = [d for d in jobs.diagnostics if d.severity >= Severity.WARNING]
    assert [d for d in loud if d.rule != "koordinator-namespace-pinning"] == []
    kinds = {m.obj.get("kind") for m in jobs.manifests}
    assert {"RayJob", "RayCluster", "RayService"} <= kinds


def test_running_workloads_fill_every_team_to_its_limits(tmp_path: Path) -> None:
    """The preempt case's usage file follows its schema and holds, per team and pool, the
    nominal quota plus the borrowing limit: the next job of any team must preempt or wait."""
    import jsonschema

    from bench.newcases import newer, running_workloads
    from hetgitops.explain.preemption_input import usage_schema

    folder = write_policy(newer(SMALL), tmp_path / "policy")
    usage = running_workloads(folder)
    jsonschema.Draft202012Validator(usage_schema()).validate(usage)
    held: dict[tuple[str, str], int] = {}
    for w in usage["workloads"]:
        key = (w["clusterQueue"], w["pool"])
        held[key] = held.get(key, 0) + w["usage"]["nvidia.com/gpu"]
    teams = [d for name, docs in generate(newer(SMALL)).items() for d in docs if "teams/" in name]
    expected = {
        (t["metadata"]["name"], q["pool"]): q["cards"] + q.get("borrowingLimit", 0)
        for t in teams
        for q in t["spec"]["quotas"]
    }
    assert held == expected
    assert len({w["name"] for w in usage["workloads"]}) == len(usage["workloads"])


@pytest.mark.slow  # whole hetgitops processes
def test_newer_cases_run_and_do_real_work(tmp_path: Path) -> None:
    """Each newer case's command line, on the small fleet: it runs to its expected exit and
    answers many requests (explain), removes many nodes (capacity --without), writes Ray
    templates (jobs)."""
    import subprocess

    from bench import newcases, run

    policy = write_policy(SMALL, tmp_path / "policy")
    argvs = newcases.argvs(run.hetgitops, SMALL, policy, tmp_path, newcases.NEW_COMMANDS, run.NOW)
    assert sorted(argvs) == sorted(newcases.NEW_COMMANDS)

    def out(case: str, code: int) -> str:
        done = subprocess.run(argvs[case], capture_output=True, text=True, check=False)
        assert done.returncode == code, done.stderr
        return done.stdout

    assert out("explain-f", 0).count("verdict: admitted") >= 50
    koordinator = out("explain-koordinator", 0)
    assert koordinator.count("Koordinator: quota ") >= 50
    preempt = out("explain-preempt", 1)  # some requests wait: no preemption helps them
    assert "Kueue preempts" in preempt and "no preemption admits it" in preempt
    without = re.match(
        r"Without zone=zone-0 zone=zone-1: (\d+) node\(s\)", out("capacity-without", 0)
    )
    assert without and int(without[1]) > SMALL.nodes // 3
    out("jobs-ray", 0)
    assert {p.name for p in (tmp_path / "jobs-ray").iterdir()} >= {"ray-rlhf", "ray-train"}
