"""`hetgitops capacity` on the bundled fleet: per-resource numbers (whole GPUs, MIG profiles and
replicas apart), costs against budgets, commitment per card type, every format."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hetgitops.capacity.formats import FORMATS
from hetgitops.capacity.run import capacity_report
from hetgitops.cli import main as cli
from hetgitops.explain import run
from hetgitops.plan.quota_plan import reach

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)


@pytest.fixture(scope="module")
def report() -> Any:
    return capacity_report(run.load_policy([REPO / "policies"], NOW))


def row(report: Any, team: str, pool: str, resource: str) -> Any:
    return next(r for r in report.rows if (r.team, r.pool, r.resource) == (team, pool, resource))


def test_whole_h100s_and_each_mig_profile_are_separate_rows(report: Any) -> None:
    whole = row(report, "finetune-nlp", "h100-infer", "nvidia.com/gpu")
    assert (whole.kind, whole.nominal, whole.borrowable, whole.reach) == ("whole", 8, 8, 16)
    assert (whole.lendable, whole.guaranteed) == (4, 4)  # lending.maxPercent 50
    slices = row(report, "finetune-nlp", "h100-infer", "nvidia.com/mig-1g.10gb")
    assert (slices.label, slices.nominal, slices.reach) == ("mig 1g.10gb", 0, 42)
    assert float(slices.weight) == pytest.approx(1 / 7)


def test_time_sliced_replicas_are_labelled_with_their_share(report: Any) -> None:
    replicas = row(report, "research", "rtx4090-dev", "nvidia.com/gpu")
    assert replicas.label == "replica 1/4"
    assert replicas.nominal == 32 and replicas.normalized(32) is not None


def test_every_reach_is_kueues_potential_available(report: Any) -> None:
    policy = run.load_policy([REPO / "policies"], NOW)
    for r in report.rows:
        most = reach(policy).most(policy.teams[r.team], policy.pools[r.pool], r.resource)
        assert r.reach == most and r.nominal + r.borrowable == r.reach
        assert r.guaranteed + r.lendable == r.nominal


def test_costs_and_card_commitment(report: Any) -> None:
    cost = next(c for c in report.costs if c.team == "pretraining")
    assert cost.monthly == round(80 * 1.6 * 730 + 8 * 0.9 * 730 + 8 * 1.2 * 730, 2)
    assert cost.budget == 120000
    h100 = next(c for c in report.cards if c.card_type == "h100-80gb")
    assert h100.capacity == 48
    assert dict(h100.by_team)["finetune-nlp"] == 8


def test_csv_has_one_row_per_team_pool_resource(report: Any) -> None:
    rows = list(csv.DictReader(io.StringIO(FORMATS["csv"](report))))
    assert len(rows) == len(report.rows)
    first = rows[0]
    assert set(first) >= {
        "team",
        "pool",
        "resource",
        "kind",
        "nominal",
        "reach",
        "nominal_normalized",
    }


@pytest.mark.parametrize("output_format", ["text", "json", "csv", "markdown"])
def test_cli_formats_are_deterministic(output_format: str) -> None:
    args = ["capacity", str(REPO / "policies"), "--now", NOW.isoformat(), "--format", output_format]
    first = CliRunner().invoke(cli.main, args)
    assert first.exit_code == 0, first.output
    assert first.output == CliRunner().invoke(cli.main, args).output
    if output_format == "json":
        body = json.loads(first.output)
        assert {t["team"] for t in body["costs"]} == set(
            run.load_policy([REPO / "policies"], NOW).teams
        )
    if output_format == "text":
        assert "replica 1/4" in first.output and "mig 3g.40gb" in first.output


def test_slices_under_migstrategy_single_are_named_with_the_resource_they_are_sold_as(
    tmp_path: Path,
) -> None:
    # Under migStrategy single the device plugin advertises a MIG pool's slices as
    # nvidia.com/gpu; the row must say which slices, and that they are not the mixed-strategy
    # resource of the same profile (it read "mig None").
    policy_dir = tmp_path / "policies"
    shutil.copytree(REPO / "policies", policy_dir)
    fleet = policy_dir / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace("migStrategy: mixed", "migStrategy: single"))
    flipped = capacity_report(run.load_policy([policy_dir], NOW))
    slices = row(flipped, "research", "h100-infer", "nvidia.com/gpu")
    assert (slices.kind, slices.profile) == ("mig", "1g.10gb/3g.40gb")
    assert slices.label == "mig 1g.10gb/3g.40gb as nvidia.com/gpu"


SCRIPT_TEAM = (
    'apiVersion: hetgitops.io/v1alpha1\nkind: Team\nmetadata: {name: "<script>alert(1)</script>"}\n'
)


@pytest.mark.parametrize(
    ("command", "output_format"),
    [("capacity", f) for f in ("json", "csv", "markdown", "html")]
    + [("explain", f) for f in ("json", "markdown")],
)
def test_a_policy_that_does_not_load_is_reported_in_the_requested_format(
    command: str, output_format: str, tmp_path: Path
) -> None:
    """Issue 33 item 14: the findings come out in --format (never raw text, never unescaped
    policy text in HTML), exit 1."""
    broken = tmp_path / "team.yaml"
    broken.write_text(SCRIPT_TEAM)
    args = (
        ["--policy", str(broken), "--team", "t", "--gpus", "1"]
        if command == "explain"
        else [str(broken)]
    )
    result = CliRunner().invoke(cli.main, [command, *args, "--format", output_format])
    assert result.exit_code == 1, result.output
    out = result.stdout
    if output_format == "json":
        rules = [(d["rule"], d["line"], d["column"]) for d in json.loads(out)["diagnostics"]]
        assert ("schema", 3, 18) in rules
    elif output_format == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert ("schema", "3", "18") in [(r["rule"], r["line"], r["column"]) for r in rows]
    elif output_format == "html":
        assert out.startswith("<!DOCTYPE html>") and "<script" not in out
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    else:
        assert out.startswith("### ") and "| Location | Rule |" in out


def test_csv_has_the_cost_and_budget_the_text_format_has(report: Any) -> None:
    # The text and markdown formats show each team's monthly cost against its budget; the CSV
    # (the format a spreadsheet reads) had only the quota columns.
    rows = list(csv.DictReader(io.StringIO(FORMATS["csv"](report))))
    cost = next(c for c in report.costs if c.team == "pretraining")
    mine = [r for r in rows if r["team"] == "pretraining"]
    assert mine and all(r["team_monthly_cost"] == f"{cost.monthly:.2f}" for r in mine)
    assert {(r["currency"], r["team_budget"]) for r in mine} == {(cost.currency, "120000.00")}
    assert mine[0]["team_headroom"] == f"{cost.budget - cost.monthly:.2f}"
