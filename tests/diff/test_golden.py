"""Golden reports of `hetgitops diff` for typical changes of the bundled fleet (text,
Markdown, JSON), the JSON checked against schemas/diff.schema.json.

`pytest --update-golden` rewrites tests/cases/diff/<scenario>/expected/ as a whole; review it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import golden
import jsonschema
import pytest

from hetgitops import api
from hetgitops.diff.formats import FORMATTERS
from hetgitops.diff.run import DiffResult, compare
from hetgitops.load.git_source import read_folder
from tests.diff.scenarios import REPO, SCENARIOS, Edit, build

CASES = REPO / "tests" / "cases" / "diff"
NOW = dt.date(2026, 9, 1)
FILES = {"text": "diff.txt", "markdown": "diff.md", "json": "diff.json"}
SCHEMA = json.loads((REPO / "schemas" / "diff.schema.json").read_text("utf-8"))


def run_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> DiffResult:
    return run_edits(tmp_path, monkeypatch, SCENARIOS[name])


def run_edits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edits: list[Edit]) -> DiffResult:
    build(tmp_path, edits)
    monkeypatch.chdir(tmp_path)  # locations read base/... and head/..., not a temp path
    base = read_folder([Path("base")], "base")
    head = read_folder([Path("head")], "head")
    return compare(base, head, api.Options(now=NOW))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_diff_matches_golden(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, update_golden: bool
) -> None:
    result = run_scenario(tmp_path, monkeypatch, name)
    outputs = {FILES[fmt]: FORMATTERS[fmt](result) for fmt in FILES}
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(outputs["diff.json"]))
    golden.check_tree(outputs, CASES / name / "expected", update_golden)


# What each golden case must show, so a regenerated golden cannot silently lose it.
EXPECTED_FLAGS = {
    "team-removed": {
        "namespace-removed: Namespace dataproc",
        "clusterqueue-removed: ClusterQueue data-preprocessing",
        "removal: team data-preprocessing",
    },
    "mig-repartition": {"mig-mode-flip: Pool h100-infer", "drain: Node gpu-h100-001"},
    "tier-demotion": {"demotion: tier training", "demotion: team-tiers data-preprocessing"},
    "pool-expiry": {"expiry: expiry pool l40s-infer"},
    "invalid-policy": {"invalid: a side fails validation"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_FLAGS))
def test_scenario_raises_its_flags(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_scenario(tmp_path, monkeypatch, name)
    assert EXPECTED_FLAGS[name] <= set(result.risks)


def test_quota_cut_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_scenario(tmp_path, monkeypatch, "quota-cut")
    (row,) = result.impact.quotas
    assert (row.team, row.pool, row.card_type) == ("pretraining", "a800-train", "a800-80gb")
    assert row.before and row.after
    assert (row.before.cards, row.after.cards) == (80, 64)
    # Reach: nominal + what the rest of the cohort tree lends, capped by borrowingLimit 32.
    assert (row.before.reach, row.after.reach) == (92, 76)
    assert [(r.resource, r.nominal, r.reach) for r in row.after.resources] == [
        ("nvidia.com/gpu", 64, 76)
    ]
    (cost,) = result.impact.costs
    assert round(cost.before or 0) == 80 * 1.6 * 730 + 8 * 0.9 * 730 + 8 * 1.2 * 730


def test_invalid_side_reports_findings_and_no_object_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_scenario(tmp_path, monkeypatch, "invalid-policy")
    assert result.invalid and result.changed and result.objects == []
    rules = {(d.rule, d.span.file, d.span.line) for d in result.introduced}
    assert ("quota-exceeds-capacity", "head/teams/training.yaml", 10) in rules


def test_mig_drain_lists_nodes_and_gpu_indices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_scenario(tmp_path, monkeypatch, "mig-repartition")
    assert [d.node for d in result.drains] == [f"gpu-h100-00{i}" for i in range(1, 7)]
    assert all(d.gpus == (4,) and d.mode_flip for d in result.drains)


def test_reach_is_per_resource_never_whole_gpus_plus_mig_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20: online-inference lending 4 H100s instead of 8 leaves finetune-nlp at most 12
    whole H100s (was 16), whatever MIG slices it may borrow; diff said reach 27.14 -> 23.14."""
    edit = ("teams/others.yaml", "      lendingLimit: 8", "      lendingLimit: 4")
    result = run_edits(tmp_path, monkeypatch, [edit])
    row = next(
        r for r in result.impact.quotas if (r.team, r.pool) == ("finetune-nlp", "h100-infer")
    )
    assert row.before and row.after
    before = {r.label: (r.nominal, r.reach) for r in row.before.resources}
    after = {r.label: (r.nominal, r.reach) for r in row.after.resources}
    assert (before["whole"], after["whole"]) == ((8, 16), (8, 12))
    assert after["mig 1g.10gb"] == (0, 42)
    text = FORMATTERS["text"](result)
    assert (
        "finetune-nlp / h100-infer (h100-80gb): nominal whole 8 -> 8; reach whole 16 -> 12," in text
    )
    # The pull-request comment's summary too: quota and reach per resource, card-equivalents
    # only beside them and named so (it had unlabelled Before / After card columns).
    markdown = FORMATTERS["markdown"](result)
    assert "| Before | After |" not in markdown
    assert (
        "| finetune-nlp | h100-80gb | h100-infer | whole 8 → 8 | whole 16 → 12, mig 1g.10gb "
        "42 → 42, mig 3g.40gb 12 → 12 | 8 → 8 (0, 0.0%) |"
    ) in markdown
    assert "Card-equivalents (Δ, Δ%)" in markdown


def test_a_migstrategy_flip_alone_is_refused_where_a_node_mixes_profiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19: flipping migStrategy alone had no flag. On the bundled fleet (1g and 3g
    slices beside whole GPUs on each H100 node) single cannot express the layout, so the head
    fails validation where the layout is written and nothing reaches a sync; the quota rows
    name the slices single would sell as nvidia.com/gpu."""
    edit = ("fleet.yaml", "migStrategy: mixed", "migStrategy: single")
    result = run_edits(tmp_path, monkeypatch, [edit])
    assert result.invalid and result.objects == []
    spans = {(d.rule, d.span.file, d.span.line) for d in result.introduced}
    assert ("mig-strategy-single-mixed", "head/pools/inference.yaml", 14) in spans
    row = next(r for r in result.impact.quotas if (r.team, r.pool) == ("research", "h100-infer"))
    assert row.after
    after = {r.label: r.nominal for r in row.after.resources}
    assert after == {"mig 1g.10gb/3g.40gb as nvidia.com/gpu": 28}
