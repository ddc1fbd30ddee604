"""`hetgitops diff` against real Git repositories built in temporary folders: refs, the working
tree, renamed and deleted policy files, the merge-base default, and the exit-code contract."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hetgitops.cli import main as cli
from tests.diff.scenarios import BUNDLED, SCENARIOS, apply_edits

NOW = "2026-09-01"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [*GIT, "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    shutil.copytree(BUNDLED, root / "policies")
    commit(root, "bundled fleet")
    monkeypatch.chdir(root)
    return root


def diff(*args: str) -> Result:
    return CliRunner().invoke(cli.main, ["diff", "--now", NOW, *args])


def edit(repo: Path, scenario: str) -> None:
    apply_edits(repo / "policies", SCENARIOS[scenario])


def test_branch_against_main_shows_the_quota_cut(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "cut")
    edit(repo, "quota-cut")
    commit(repo, "cut pretraining")
    result = diff("--base", "main", "--head", "cut", "--format", "json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert [
        (q["team"], q["before"]["cards"], q["after"]["cards"]) for q in report["impact"]["quotas"]
    ] == [("pretraining", 80, 64)]
    assert report["base"]["label"].startswith("main (")


def test_working_tree_is_the_default_head_and_is_left_untouched(repo: Path) -> None:
    edit(repo, "quota-cut")
    status = git(repo, "status", "--porcelain")
    text = (repo / "policies/teams/training.yaml").read_text()
    result = diff("--base", "HEAD")
    assert result.exit_code == 1, result.output
    assert "pretraining / a800-train (a800-80gb): nominal whole 80 -> 64; reach whole 92 -> 76" in (
        result.output
    )
    assert git(repo, "status", "--porcelain") == status
    assert (repo / "policies/teams/training.yaml").read_text() == text


def test_renamed_policy_file_changes_nothing_rendered(repo: Path) -> None:
    git(repo, "mv", "policies/teams/training.yaml", "policies/teams/train.yaml")
    commit(repo, "rename")
    result = diff("--base", "HEAD~1", "--head", "HEAD")
    assert result.exit_code == 0, result.output
    assert "no change in the rendered output" in result.output


def test_deleted_policy_file_removes_its_team(repo: Path) -> None:
    edit(repo, "new-team")
    commit(repo, "add speech")
    git(repo, "rm", "-q", "policies/teams/speech.yaml")
    commit(repo, "drop speech")
    result = diff("--base", "HEAD~1", "--head", "HEAD", "--format", "json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert {
        "topic": "team",
        "subject": "speech",
        "before": "present",
        "after": "removed",
        "flag": "removal",
    } in report["impact"]["changes"]
    # The team's ClusterQueue lingers while it has admitted work; its Namespace is never pruned;
    # its Volcano Queue's prune can be refused under a running gang (Volcano 1.15, issue 38).
    assert [h["rule"] for h in report["hazards"]] == [
        "clusterqueue-removed",
        "namespace-removed",
        "volcano-queue-pruned",
    ]
    assert {h["location"]["file"] for h in report["hazards"]} == {"policies/teams/speech.yaml"}


def test_default_base_is_the_merge_base_with_origin(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    # main moves on upstream after the branch forked: that change must not show in the PR diff.
    apply_edits(repo / "policies", SCENARIOS["pool-expiry"])
    commit(repo, "l40s expires")
    git(clone, "fetch", "-q", "origin")
    git(clone, "checkout", "-q", "-b", "feature")
    apply_edits(clone / "policies", SCENARIOS["cohort-change"])
    commit(clone, "move data-preprocessing")
    monkeypatch.chdir(clone)
    result = diff("--format", "json")
    report = json.loads(result.output)
    subjects = [c["subject"] for c in report["impact"]["changes"]]
    assert subjects == ["team data-preprocessing"], result.output
    fork = git(clone, "merge-base", "HEAD", "origin/main").strip()
    assert fork[:12] in report["base"]["label"]


def test_unknown_ref_is_a_usage_error_naming_it(repo: Path) -> None:
    result = diff("--base", "no-such-branch")
    assert result.exit_code == 2
    assert "unknown Git ref 'no-such-branch'" in result.output


def test_outside_a_git_repository_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "plain"
    (outside / "policies").mkdir(parents=True)  # a policy folder, just not in a Git repository
    monkeypatch.chdir(outside)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    result = diff()
    assert result.exit_code == 2 and "not inside a Git repository" in result.output


def test_base_dir_needs_head_dir(repo: Path) -> None:
    assert diff("--base-dir", "policies").exit_code == 2


def test_same_folder_twice_is_no_change(repo: Path) -> None:
    result = diff("--base-dir", "policies", "--head-dir", "policies")
    assert result.exit_code == 0 and "no change in the rendered output" in result.output


def test_exit_code_on_risk_fails_only_flagged_changes(repo: Path) -> None:
    edit(repo, "cohort-change")
    assert diff("--base", "HEAD").exit_code == 1
    assert diff("--base", "HEAD", "--exit-code-on", "risk").exit_code == 0
    git(repo, "checkout", "-q", "--", ".")
    edit(repo, "pool-expiry")
    assert diff("--base", "HEAD", "--exit-code-on", "risk").exit_code == 1


def test_invalid_head_is_findings_and_exit_1_with_github_annotations(repo: Path) -> None:
    edit(repo, "invalid-policy")
    result = diff("--base", "HEAD", "--format", "github")
    assert result.exit_code == 1
    assert (
        "::error file=policies/teams/training.yaml,line=10,col=33,title=quota-exceeds-capacity::"
        in result.output
    )


def test_ignore_leaves_objects_out(repo: Path) -> None:
    edit(repo, "cohort-change")
    result = diff("--base", "HEAD", "--ignore", "ClusterQueue")
    assert result.exit_code == 0 and "~ ClusterQueue" not in result.output


def test_missing_git_is_an_environment_fault(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-tools"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = diff("--base", "HEAD")
    assert result.exit_code == 4 and "git is not installed" in result.output


def test_the_repository_is_the_policy_paths_not_the_working_directory(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from another repository (or none), `diff PATH` reads PATH's history."""
    edit(repo, "quota-cut")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q", "-b", "other")
    monkeypatch.chdir(elsewhere)
    result = diff("../repo/policies", "--base", "HEAD")
    assert result.exit_code == 1, result.output
    assert "pretraining / a800-train (a800-80gb): nominal whole 80 -> 64" in result.output


def test_outside_a_repository_the_hint_names_diffs_folder_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "plain"
    shutil.copytree(BUNDLED, outside / "policies")
    monkeypatch.chdir(outside)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    result = diff("policies")
    assert result.exit_code == 2
    assert "to compare two folders use --base-dir DIR --head-dir DIR" in result.output


def test_an_invalid_head_still_shows_the_quota_and_cost_it_asks_for(repo: Path) -> None:
    """A quota above capacity fails validation; the reviewer still sees 80 -> 800 and its cost."""
    edit(repo, "invalid-policy")
    result = diff("--base", "HEAD")
    assert result.exit_code == 1
    assert "a side fails validation" in result.output
    assert "pretraining / a800-train (a800-80gb): nominal whole 80 -> 800" in result.output
    assert "pretraining: 105,704 -> 946,664 USD" in result.output
    report = json.loads(diff("--base", "HEAD", "--format", "json").output)
    assert [q["after"]["cards"] for q in report["impact"]["quotas"]] == [800]


def test_a_head_that_drops_documents_shows_no_quota_table(repo: Path) -> None:
    """A schema error drops its document: a table would show its quotas as removed."""
    teams = repo / "policies/teams/training.yaml"
    teams.write_text(teams.read_text().replace("cards: 80,", "cards: eighty,", 1))
    result = diff("--base", "HEAD", "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.output)["impact"]["quotas"] == []


def test_the_guide_says_diff_exits_1_on_a_change(repo: Path) -> None:
    """As `kubectl diff`: a shell `&&` after it runs only when nothing changed."""
    edit(repo, "quota-cut")
    assert diff("policies", "--base", "main").exit_code == 1
    guide = (Path(__file__).parents[2] / "docs/getting-started.md").read_text()
    assert "exits 1 when the output changes" in guide
