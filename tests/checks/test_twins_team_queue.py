"""volcano-kueue-mismatch on a team queue (`volcano.layout: team`): its written deserved or
capability (as import keeps a hand-written cluster's) against the sum over its pools of what
its Kueue ClusterQueue holds or reaches."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from hetgitops import api
from hetgitops.diagnostics import Diagnostic
from hetgitops.plan.volcano_quota import pool_plans

REPO = Path(__file__).resolve().parents[2]
RULE = "volcano-kueue-mismatch"
OLD = "volcano: {weight: 4}"


def _validate(tmp_path: Path, volcano: str) -> api.Result:
    policy = tmp_path / "policy"
    shutil.copytree(REPO / "policies", policy)
    teams = policy / "teams" / "training.yaml"
    teams.write_text(teams.read_text().replace(OLD, f"volcano: {volcano}", 1))
    return api.validate([policy], api.Options(check_output=False))


def _mismatches(result: api.Result) -> list[Diagnostic]:
    return [d for d in result.diagnostics if d.rule == RULE and "pretraining" in d.message]


def _kueue_sums(result: api.Result, field: str) -> Counter[str]:
    assert result.policy is not None
    total: Counter[str] = Counter()
    for leaf in pool_plans(result.policy):
        if leaf.team.name == "pretraining":
            amounts = getattr(leaf, field).items()
            total.update({r: int(v) for r, v in amounts if r not in ("cpu", "memory")})
    return total


def _spelled(amounts: Counter[str]) -> str:
    return "{" + ", ".join(f"{r}: {n}" for r, n in sorted(amounts.items())) + "}"


def test_a_summed_team_queue_agrees_with_kueue(tmp_path: Path) -> None:
    result = _validate(tmp_path, "{weight: 4, layout: team}")
    assert not result.failed(), result.diagnostics
    assert _mismatches(result) == []


def test_a_written_capability_kueue_does_not_reach_is_reported_where_written(
    tmp_path: Path,
) -> None:
    result = _validate(tmp_path / "a", "{layout: team, capability: {nvidia.com/gpu: 1}}")
    found = _mismatches(result)
    assert [d.path for d in found] == ["spec.volcano.capability"] * len(found)
    reach = _kueue_sums(result, "capability")
    assert {r for r in reach} == {r for d in found for r in reach if f" {r}," in d.message}
    agreeing = _validate(tmp_path / "b", f"{{layout: team, capability: {_spelled(reach)}}}")
    assert _mismatches(agreeing) == []


def test_a_written_deserved_other_than_nominal_is_reported(tmp_path: Path) -> None:
    result = _validate(tmp_path / "a", "{layout: team}")
    nominal = _kueue_sums(result, "deserved")
    fewer = Counter({r: n - 1 for r, n in nominal.items()})
    found = _mismatches(_validate(tmp_path / "b", f"{{layout: team, deserved: {_spelled(fewer)}}}"))
    assert [d.path for d in found] == ["spec.volcano.deserved"] * len(nominal)
    assert all("disagree on 1" in d.message for d in found)
