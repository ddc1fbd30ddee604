"""Aggregate findings list every contributing location and are reported where a reader can act
(issue 7, item 8): at the pool's capacity by default, at a changed contributor when the changed
lines are known (`validate --changed-since REF`, the GitHub Action)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetgitops import api
from hetgitops.cli import main as cli
from hetgitops.diagnostics import Diagnostic
from hetgitops.load.changed import changed_values, parse_unified
from hetgitops.load.documents import load_sources

REPO = Path(__file__).resolve().parents[1]
NOW = dt.date(2026, 12, 1)
TEAMS = Path("teams") / "training.yaml"
POOLS = Path("pools") / "training.yaml"
# finetune-vision's A800 quota: 80 + 24 + 24 = the pool's 16 x 8 cards; 32 oversubscribes it.
VISION_A800 = "    - {pool: a800-train, cards: 24, borrowingLimit: 8}"
RAISED = "    - {pool: a800-train, cards: 32, borrowingLimit: 8}"


@pytest.fixture
def oversubscribed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled policies (cwd = its parent) with one team's quota raised."""
    copy = tmp_path / "policies"
    shutil.copytree(REPO / "policies", copy)
    monkeypatch.chdir(tmp_path)
    return copy


def raise_quota(policies: Path) -> None:
    teams = policies / TEAMS
    text = teams.read_text(encoding="utf-8")
    assert text.count(VISION_A800) == 1
    teams.write_text(text.replace(VISION_A800, RAISED), encoding="utf-8")


def where(policies: Path, file: Path, snippet: str) -> str:
    """`policies/<file>:line:col` of the `^` in `snippet` (which occurs once)."""
    text = (policies / file).read_text(encoding="utf-8")
    plain = snippet.replace("^", "")
    assert text.count(plain) == 1, plain
    offset = text.index(plain) + snippet.index("^")
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"policies/{file.as_posix()}:{line}:{column}"


def over_capacity(options: api.Options) -> Diagnostic:
    result = api.validate([Path("policies")], options)
    (found,) = [d for d in result.diagnostics if d.rule == "quota-exceeds-capacity"]
    return found


def test_the_finding_lists_every_contributor_and_the_pool(oversubscribed: Path) -> None:
    raise_quota(oversubscribed)
    found = over_capacity(api.Options(now=NOW))
    pool = where(oversubscribed, POOLS, '  nodes:\n    ^- {names: "gpu-a800-[001:004]"')
    # Teams in name order, after the pool.
    assert [(str(r.span), r.message) for r in found.related] == [
        (pool, "pool 'a800-train' offers 128 nvidia.com/gpu on 16 node(s)"),
        (
            where(oversubscribed, TEAMS, "{pool: a800-train, cards: ^24, borrowingLimit: 16}"),
            "team 'finetune-nlp' claims 24 nvidia.com/gpu",
        ),
        (
            where(oversubscribed, TEAMS, "{pool: a800-train, cards: ^32"),
            "team 'finetune-vision' claims 32 nvidia.com/gpu",
        ),
        (
            where(oversubscribed, TEAMS, "{pool: a800-train, cards: ^80"),
            "team 'pretraining' claims 80 nvidia.com/gpu",
        ),
    ]
    # Without knowing the change: at the pool's capacity, the one total every claim meets.
    assert str(found.span) == pool


def test_with_changed_lines_the_changed_quota_is_the_primary(oversubscribed: Path) -> None:
    raise_quota(oversubscribed)
    raised = where(oversubscribed, TEAMS, "{pool: a800-train, cards: ^32")
    line = int(raised.split(":")[1])
    changed = {f"policies/{TEAMS.as_posix()}": frozenset({line})}
    found = over_capacity(api.Options(now=NOW, changed=changed))
    assert str(found.span) == raised
    assert found.path == "spec.quotas[0].cards"
    assert len(found.related) == 4  # still every contributor, the pool included


def test_a_change_elsewhere_keeps_the_default(oversubscribed: Path) -> None:
    raise_quota(oversubscribed)
    changed = {"policies/fleet.yaml": frozenset({1, 2, 3})}
    found = over_capacity(api.Options(now=NOW, changed=changed))
    assert str(found.span).startswith(f"policies/{POOLS.as_posix()}:")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_validate_changed_since_puts_the_annotation_in_the_diff(oversubscribed: Path) -> None:
    # A real repository: commit the bundled fleet, raise one quota, validate like the Action.
    root = oversubscribed.parent
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    raise_quota(oversubscribed)
    raised = where(oversubscribed, TEAMS, "{pool: a800-train, cards: ^32")
    file, line, column = raised.split(":")
    runner = CliRunner()
    args = ["validate", "policies", "--now", "2026-12-01", "--format"]
    github = runner.invoke(cli.main, [*args, "github", "--changed-since", "HEAD"])
    assert github.exit_code == 1, github.output
    (annotation,) = [a for a in github.stdout.splitlines() if "quota-exceeds-capacity" in a]
    assert annotation.startswith(f"::error file={file},line={line},col={column},")
    assert "%0Anote: policies/pools/training.yaml:" in annotation
    sarif = json.loads(runner.invoke(cli.main, [*args, "sarif", "--changed-since", "HEAD"]).stdout)
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "quota-exceeds-capacity"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == int(line)
    assert len(result["relatedLocations"]) == 4
    plain = runner.invoke(cli.main, [*args, "github"])
    assert f"file={file},line={line}," not in plain.stdout


def test_changed_since_an_unknown_ref_is_a_usage_error(oversubscribed: Path) -> None:
    git(oversubscribed.parent, "init", "-q")
    result = CliRunner().invoke(
        cli.main, ["validate", "policies", "--changed-since", "no-such-ref"]
    )
    assert result.exit_code == 2
    assert "--changed-since" in result.output


def test_unified_diff_lines() -> None:
    text = (
        "diff --git a/p/t.yaml b/p/t.yaml\n--- a/p/t.yaml\n+++ b/p/t.yaml\n"
        "@@ -3 +3 @@\n-a\n+b\n@@ -10,2 +10,0 @@\n-x\n-y\n@@ -20,0 +19,3 @@\n+1\n+2\n+3\n"
        "diff --git a/gone.yaml b/gone.yaml\n--- a/gone.yaml\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n"
    )
    assert parse_unified(text) == {"p/t.yaml": frozenset({3, 10, 11, 19, 20, 21})}


def test_budget_lists_the_budget_and_every_priced_quota(oversubscribed: Path) -> None:
    teams = oversubscribed / TEAMS
    text = teams.read_text(encoding="utf-8")
    teams.write_text(text.replace("budget: {monthly: 40000", "budget: {monthly: 4000"), "utf-8")
    result = api.validate([Path("policies")], api.Options(now=NOW))
    (found,) = [d for d in result.diagnostics if d.rule == "budget-exceeded"]
    assert str(found.span) == where(oversubscribed, TEAMS, "budget: {monthly: ^4000")
    assert [r.message.split(" costs")[0] for r in found.related] == [
        "the budget: 4,000.00 USD a month",
        "pool 'a800-train'",
        "pool 'l40s-infer'",
    ]


def test_diff_sides_mark_the_values_that_changed() -> None:
    # `hetgitops diff` knows both sides: the lines of the values that differ, by kind and name
    # (line shifts elsewhere do not count), every line of a new document.
    base = load_sources([("t.yaml", TEAM.format(cards=8, extra="").encode())]).documents
    head_text = "# a comment that shifts every line\n" + TEAM.format(cards=12, extra="")
    head = load_sources([("t.yaml", head_text.encode())]).documents
    assert changed_values(base, head) == {"t.yaml": frozenset({9})}
    grown = load_sources([("t.yaml", TEAM.format(cards=8, extra=EXTRA).encode())]).documents
    assert changed_values(base, grown) == {
        "t.yaml": frozenset({8, 9})
    }  # the list (at its first item) and the new entry


TEAM = (
    "apiVersion: hetgitops.io/v1alpha1\nkind: Team\nmetadata:\n  name: ml\nspec:\n"
    "  namespaces: [ml]\n  quotas:\n    - {{pool: a, cards: {cards}}}\n{extra}  tiers: [t]\n"
)
EXTRA = "    - {pool: b, cards: 1}\n"


EXPIRED = REPO / "tests" / "cases" / "invalid" / "expired-pool"


def test_a_quota_added_to_an_expired_pool_gets_the_finding(monkeypatch) -> None:
    # pool-expired lists the date and every holder; a change that adds the holding quota
    # moves the finding there (finetune's v100-legacy entry is teams.yaml line 9).
    monkeypatch.chdir(EXPIRED)
    plain = api.validate([Path("policy")], api.Options(now=NOW)).diagnostics
    (expired,) = [d for d in plain if d.rule == "pool-expired"]
    assert str(expired.span) == "policy/pools.yaml:11:12"
    assert [str(r.span) for r in expired.related] == [
        "policy/pools.yaml:11:12",
        "policy/teams.yaml:9:14",
    ]
    options = api.Options(now=NOW, changed={"policy/teams.yaml": frozenset({9})})
    focused = api.validate([Path("policy")], options).diagnostics
    (expired,) = [d for d in focused if d.rule == "pool-expired"]
    assert (str(expired.span), expired.path) == ("policy/teams.yaml:9:14", "spec.quotas[1].pool")


def test_focus_leaves_findings_without_contributors_alone() -> None:
    from hetgitops.diagnostics import Related, Severity, Span

    duplicate = Diagnostic(
        rule="cohort-duplicate", severity=Severity.ERROR, message="m", span=Span("f.yaml", 5, 1),
        related=(Related(Span("f.yaml", 2, 1), "first declared here"),),
    )  # fmt: skip
    assert duplicate.focus(lambda span: span.line == 2) is duplicate


def test_changed_since_finds_the_repository_from_the_policy_path(
    oversubscribed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Git history is the policy's, whatever the working directory is (none, or another
    repository): the annotation still lands on the changed line, named from the cwd."""
    root = oversubscribed.parent
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    raise_quota(oversubscribed)
    raised = where(oversubscribed, TEAMS, "{pool: a800-train, cards: ^32")
    _, line, column = raised.split(":")
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q", "-b", "other")  # another repository, without the policy
    monkeypatch.chdir(elsewhere)
    policy = os.path.relpath(oversubscribed, elsewhere)
    args = ["validate", policy, "--now", "2026-12-01", "--format", "github"]
    result = CliRunner().invoke(cli.main, [*args, "--changed-since", "HEAD"])
    assert result.exit_code == 1, result.output
    (annotation,) = [a for a in result.stdout.splitlines() if "quota-exceeds-capacity" in a]
    file = Path(policy, TEAMS).as_posix()
    assert annotation.startswith(f"::error file={file},line={line},col={column},")


def test_changed_since_outside_a_repository_names_its_own_option(
    oversubscribed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`validate` has no --base-dir: the error must not send the user to it."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(oversubscribed.parent.parent))
    result = CliRunner().invoke(cli.main, ["validate", "policies", "--changed-since", "HEAD"])
    assert result.exit_code == 2
    assert "not inside a Git repository" in result.output
    assert "--base-dir" not in result.output
    assert "--changed-since reads the policy's Git history" in result.output
