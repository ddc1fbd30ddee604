"""Kueue and Volcano mean the same quota: for every team x pool x resource of the bundled fleet
and the golden scenarios, the rendered Volcano queue's deserved / capability / guarantee equal
what the rendered Kueue objects allow, or a `volcano-kueue-mismatch` finding says why not.

The Kueue side is computed here from the rendered ClusterQueues and Cohorts alone (not from
hetgitops' plan), as Kueue would: ceiling = nominal + min(borrowingLimit, what the other
ClusterQueues of the cohort tree lend of that flavor and resource)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from hetgitops import api
from hetgitops.diagnostics import Diagnostic
from hetgitops.model import quantities

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "cases" / "render"
SCENARIOS = ["bundled", *sorted(p.parent.name for p in CASES.glob("*/policy"))]
Objects = dict[tuple[str, str], dict[str, Any]]


def _policy(scenario: str | Path) -> Path:
    """A scenario's folder; a Path is a policy folder already (tests/generated passes one)."""
    if isinstance(scenario, Path):
        return scenario
    return REPO / "policies" if scenario == "bundled" else CASES / scenario / "policy"


def _root(cohorts: Objects, name: str) -> str:
    seen = {name}
    while (parent := cohorts.get(("Cohort", name), {}).get("spec", {}).get("parentName")) and (
        parent not in seen
    ):
        seen.add(parent)
        name = parent
    return name


def _entries(cq: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(flavor, resource) -> the quota entry."""
    return {
        (flavor["name"], entry["name"]): entry
        for group in cq["spec"].get("resourceGroups", [])
        for flavor in group["flavors"]
        for entry in flavor["resources"]
    }


def _qty(value: Any) -> int:
    return int(quantities.value_of(value))


def _cohort_of(cq: dict[str, Any]) -> str | None:
    """v1beta2's `cohortName`, v1beta1's `cohort`."""
    found = cq["spec"].get("cohortName") or cq["spec"].get("cohort")
    return str(found) if found else None


def _kueue_ceilings(objs: Objects) -> dict[tuple[str, str, str], tuple[int, int, int]]:
    """(team, flavor, resource) -> (nominal, ceiling, kept = never lent)."""
    cqs = {name: o for (kind, name), o in objs.items() if kind == "ClusterQueue"}
    lent: dict[tuple[str, str, str], int] = {}
    for cq in cqs.values():
        cohort = _cohort_of(cq)
        for (flavor, resource), e in _entries(cq).items():
            if cohort:
                key = (_root(objs, cohort), flavor, resource)
                lend = _qty(e.get("lendingLimit", e["nominalQuota"]))
                lent[key] = lent.get(key, 0) + min(lend, _qty(e["nominalQuota"]))
    found = {}
    for name, cq in cqs.items():
        cohort = _cohort_of(cq)
        for (flavor, resource), e in _entries(cq).items():
            nominal = _qty(e["nominalQuota"])
            if not cohort:
                found[name, flavor, resource] = (nominal, nominal, nominal)
                continue
            own_lend = min(_qty(e.get("lendingLimit", e["nominalQuota"])), nominal)
            others = lent[_root(objs, cohort), flavor, resource] - own_lend
            limit = _qty(e["borrowingLimit"]) if "borrowingLimit" in e else others
            found[name, flavor, resource] = (
                nominal,
                nominal + min(limit, others),
                nominal - own_lend,
            )
    return found


def _render(scenario: str | Path) -> tuple[Objects, list[Diagnostic]]:
    result = api.render([_policy(scenario)], api.Options(check_output=False))
    assert not result.failed()
    objs = {(m.kind, m.name): dict(m.obj) for m in result.manifests if m.applied}
    return objs, result.diagnostics


def _pool(flavor: str) -> str:
    stem, _, digest = flavor.rpartition("-")
    return stem if len(digest) == 8 else flavor


def _renders_both(scenario: str | Path) -> bool:
    """The Fleet's targets hold kueue and volcano (a scenario without both has no twins)."""
    fleets = [
        doc
        for path in sorted(_policy(scenario).rglob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and doc.get("kind") == "Fleet"
    ]
    return any({"kueue", "volcano"} <= set(f["spec"].get("targets", [])) for f in fleets)


# Only scenarios that render both: a skip per other scenario said nothing about this machine.
TWINS = [s for s in SCENARIOS if _renders_both(s)]


@pytest.mark.parametrize("scenario", TWINS)
def test_volcano_and_kueue_ceilings_agree(scenario: str) -> None:
    check_volcano_twin(scenario)


def check_volcano_twin(scenario: str | Path) -> None:
    """The Volcano twin of one scenario (or policy folder); tests/generated runs it too."""
    objs, diagnostics = _render(scenario)
    queues = {name: o["spec"] for (kind, name), o in objs.items() if kind == "Queue"}
    assert queues and any(kind == "ClusterQueue" for kind, _ in objs), scenario
    explained = {d.message for d in diagnostics if d.rule == "volcano-kueue-mismatch"}
    checked = 0
    summed: dict[tuple[str, str], list[Decimal]] = {}  # a team queue's: the sums over pools
    for (team, flavor, resource), (nominal, ceiling, kept) in _kueue_ceilings(objs).items():
        spec = queues.get(f"{team}-{_pool(flavor)}") or queues[_team_queue(objs, team)]
        if f"{team}-{_pool(flavor)}" not in queues:  # `volcano.layout: team`
            sums = summed.setdefault((team, resource), [Decimal(0)] * 3)
            summed[(team, resource)] = [
                a + b for a, b in zip(sums, (nominal, ceiling, kept), strict=True)
            ]
            continue
        if resource in ("cpu", "memory"):
            if resource not in spec["capability"] and resource not in spec["deserved"]:
                continue  # `volcano.resources: accelerators`: Volcano bounds no cpu or memory
            # the ceiling only: cpu/memory kept and nominal round per card-equivalent
            assert _qty(spec["capability"][resource]) == ceiling, (scenario, team, resource)
            continue
        volcano = (
            _qty(spec["deserved"].get(resource, 0)),
            _qty(spec["capability"].get(resource, 0)),
            _qty(spec.get("guarantee", {}).get("resource", {}).get(resource, 0)),
        )
        checked += 1
        if volcano == (nominal, ceiling, kept):
            continue
        said = [m for m in explained if f"'{team}" in m and resource in m]
        assert said, (scenario, team, flavor, resource, volcano, (nominal, ceiling, kept))
    for (team, resource), (nominal, ceiling, kept) in summed.items():
        spec = queues[_team_queue(objs, team)]
        if resource in ("cpu", "memory") and resource not in spec.get("deserved", {}):
            continue  # accelerators only; the ceilings of cpu/memory round per pool
        if resource in ("cpu", "memory"):
            continue
        volcano = (
            _qty(spec.get("deserved", {}).get(resource, 0)),
            _qty(spec["capability"].get(resource, 0)),
            _qty(spec.get("guarantee", {}).get("resource", {}).get(resource, 0)),
        )
        checked += 1
        if volcano == (nominal, ceiling, kept):
            continue
        said = [m for m in explained if f"'{team}" in m and resource in m]
        assert said, (scenario, team, resource, volcano, (nominal, ceiling, kept))
    assert checked


def _team_queue(objs: Objects, team: str) -> str:
    """The one Queue of a `volcano.layout: team` team: its team label and no pool label."""
    found = [
        name
        for (kind, name), o in objs.items()
        if kind == "Queue"
        and o["metadata"].get("labels", {}).get("hetgitops.io/team") == team
        and "hetgitops.io/pool" not in o["metadata"].get("labels", {})
    ]
    assert len(found) == 1, (team, found)
    return found[0]


def _edited(tmp_path: Path, edit: Callable[[str], str]) -> list[Diagnostic]:
    import shutil

    policy = tmp_path / "policy"
    shutil.copytree(REPO / "policies", policy)
    teams = policy / "teams" / "training.yaml"
    teams.write_text(edit(teams.read_text()))
    result = api.validate([policy], api.Options(check_output=False))
    return [d for d in result.diagnostics if d.rule == "volcano-kueue-mismatch"]


def test_a_guarantee_kueue_would_lend_is_reported(tmp_path: Path) -> None:
    found = _edited(
        tmp_path,
        lambda t: t.replace("volcano: {weight: 4}", "volcano: {weight: 4, guaranteePercent: 90}"),
    )
    # a800: 90% of 80 = 72 > the 64 Kueue keeps; a100 (lends everything): 7 > 0.
    assert [(d.span.line, d.path) for d in found] == [
        (found[0].span.line, "spec.volcano.guaranteePercent")
    ] * 2
    assert any("72 nvidia.com/gpu in pool 'a800-train'" in d.message for d in found)


def test_guarantees_on_other_pools_of_the_same_name_are_reported(tmp_path: Path) -> None:
    # Keep all of finetune-nlp's A800s: 24 more nvidia.com/gpu guaranteed cluster-wide is
    # still fine; keeping every NVIDIA card of every training team is not.
    found = _edited(
        tmp_path,
        lambda t: t.replace(
            "volcano: {weight: 4}", "volcano: {weight: 4, guaranteePercent: 100}"
        ).replace(
            "{pool: a800-train, cards: 24, borrowingLimit: 16}",
            "{pool: a800-train, cards: 24, borrowingLimit: 16, lendingLimit: 0}",
        ),
    )
    assert found  # the floor findings at least
    assert all(d.span.file.endswith("training.yaml") for d in found)


def test_a_shared_name_shortfall_lists_the_guarantees_that_cause_it(tmp_path: Path) -> None:
    # Every team keeps all its cards (guaranteePercent 100): Volcano's guarantees then cover
    # the cluster's nvidia.com/gpu, and a queue that Kueue lets borrow is cut short by all the
    # others; the finding has a note at each of them (an aggregate finding).
    import re
    import shutil

    policy = tmp_path / "policy"
    shutil.copytree(REPO / "policies", policy)
    for teams in (policy / "teams").glob("*.yaml"):
        text = teams.read_text().replace("  volcano: {weight: 4}\n", "")
        keep_all = r"\n  volcano: {guaranteePercent: 100}\1"
        teams.write_text(re.sub(r"(\n  namespaces:)", keep_all, text))
    result = api.validate([policy], api.Options(check_output=False))
    short = [d for d in result.diagnostics if "can reach only" in d.message]
    assert short
    for d in short:
        assert d.related and all(" guarantees " in r.message for r in d.related)
        assert str(d.span) not in {str(r.span) for r in d.related}  # the others, not itself


def test_the_twin_check_runs_on_every_scenario_with_both_targets() -> None:
    """It skipped 8 of 11 scenarios (no machine lacks a scenario): now each runs or is left out."""
    assert {"bundled", "isolated-pool", "no-mig"} <= set(TWINS)
    assert "volcano-only" not in TWINS and "kueue-only" not in TWINS


# Koordinator, the third twin: every team x pool x resource of every scenario that renders
# Kueue, rendered again with the `koordinator` target beside it.
KUEUE_SCENARIOS = [
    s
    for s in SCENARIOS
    if any(
        "kueue" in doc["spec"].get("targets", ["kueue"])
        for path in sorted(_policy(s).rglob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and doc.get("kind") == "Fleet"
    )
]
TEAM_LABEL, POOL_LABEL = "/team", "/pool"
LENT = "quota.scheduling.koordinator.sh/allow-lent-resource"


def _label(obj: dict[str, Any], suffix: str) -> str | None:
    labels = obj["metadata"].get("labels", {})
    return next((v for k, v in labels.items() if k.endswith(suffix) and "hetgitops" in k), None)


def _with_koordinator(scenario: str | Path) -> tuple[Objects, list[Diagnostic]]:
    options = api.Options(check_output=False, targets=("core", "kueue", "koordinator"))
    result = api.render([_policy(scenario)], options)
    assert not result.failed(), scenario
    objs = {(m.kind, m.name): dict(m.obj) for m in result.manifests if m.applied}
    return objs, result.diagnostics


@pytest.mark.parametrize("scenario", KUEUE_SCENARIOS)
def test_koordinator_and_kueue_ceilings_agree(scenario: str) -> None:
    check_koordinator_twin(scenario)


def check_koordinator_twin(scenario: str | Path) -> None:
    """min = nominal, max = Kueue's ceiling, allow-lent-resource = Kueue lends any of it;
    every leaf carries every resource key of its tree (min and max alike)."""
    objs, diagnostics = _with_koordinator(scenario)
    leaves = {
        (_label(o, TEAM_LABEL), _label(o, POOL_LABEL)): o["spec"]
        for (kind, _), o in objs.items()
        if kind == "ElasticQuota" and _label(o, TEAM_LABEL)
    }
    lends = {
        (_label(o, TEAM_LABEL), _label(o, POOL_LABEL)): o["metadata"]["labels"][LENT] == "true"
        for (kind, _), o in objs.items()
        if kind == "ElasticQuota" and _label(o, TEAM_LABEL)
    }
    explained = {d.message for d in diagnostics if d.rule == "volcano-kueue-mismatch"}
    keep: dict[tuple[str, str], bool] = {}
    checked = 0
    for (team, flavor, resource), (nominal, ceiling, kept) in _kueue_ceilings(objs).items():
        key = (team, _pool(flavor))
        spec = leaves[key]
        assert set(spec["min"]) == set(spec["max"]), (scenario, key)
        if resource not in spec["max"]:
            # A resource of another pool's flavor in the ClusterQueue's group: 0 there.
            assert (nominal, ceiling) == (0, 0), (scenario, key, resource)
            continue
        if resource in ("cpu", "memory"):
            assert _qty(spec["max"][resource]) == ceiling, (scenario, key, resource)
            continue
        if resource in spec["min"]:
            keep[key] = keep.get(key, False) or kept < nominal
        checked += 1
        found = (_qty(spec["min"][resource]), _qty(spec["max"][resource]))
        if found == (nominal, ceiling):
            continue
        said = [m for m in explained if f"'{team}" in m and resource in m]
        assert said, (scenario, key, resource, found, (nominal, ceiling))
    assert checked
    assert {k: lends[k] for k in keep} == keep, scenario


def test_the_koordinator_twin_runs_on_the_bundled_fleet() -> None:
    assert {"bundled", "kueue-only", "isolated-pool"} <= set(KUEUE_SCENARIOS)
