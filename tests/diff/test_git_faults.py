"""`hetgitops diff` against Git repositories that are odd or damaged: symlinks and submodules
in the policy tree, a shallow clone without a merge-base, a blob missing from the object store.
Each of these used to give a wrong answer with exit 0 or a crash (issue 23 items 1, 2, 9)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.diff.scenarios import BUNDLED, SCENARIOS, apply_edits
from tests.diff.test_git_cli import commit, diff, git

TRAINING = "policies/teams/training.yaml"
CUT = "pretraining / a800-train (a800-80gb): nominal whole 80 -> 64"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    shutil.copytree(BUNDLED, root / "policies")
    commit(root, "bundled fleet")
    monkeypatch.chdir(root)
    return root


def introduced(output: str) -> list[dict[str, Any]]:
    findings: list[dict[str, Any]] = json.loads(output)["findings"]["introduced"]
    return [f for f in findings if f["rule"] == "unreadable-at-ref"]


def cut(folder: Path) -> None:
    """The quota-cut scenario applied to a policy folder laid out like policies/."""
    apply_edits(folder, SCENARIOS["quota-cut"])


def quotas(output: str) -> list[tuple[str, int, int]]:
    report = json.loads(output)
    return [
        (q["team"], q["before"]["cards"], q["after"]["cards"]) for q in report["impact"]["quotas"]
    ]


# -- item 1: symlinks are followed inside the tree, as validate follows them on disk --------------


def test_a_quota_cut_inside_a_symlinked_team_file_shows(repo: Path) -> None:
    common = repo / "common"
    common.mkdir()
    (repo / TRAINING).rename(common / "training.yaml")
    (repo / TRAINING).symlink_to("../../common/training.yaml")
    commit(repo, "teams file shared through a link")
    cut(common.parent / "policies")  # writes through the link into common/training.yaml
    assert "cards: 64" in (common / "training.yaml").read_text()
    result = diff("--base", "HEAD")  # the working tree: what the GitHub Action runs
    assert result.exit_code == 1 and CUT in result.output, result.output
    commit(repo, "cut")
    result = diff("--base", "HEAD~1", "--head", "HEAD", "--format", "json")
    assert result.exit_code == 1, result.output
    assert quotas(result.output) == [("pretraining", 80, 64)]


def test_a_symlinked_path_is_resolved_at_each_ref(repo: Path) -> None:
    (repo / "policies").rename(repo / "p1")
    shutil.copytree(repo / "p1", repo / "p2")
    cut(repo / "p2")
    (repo / "policies").symlink_to("p1")
    commit(repo, "two fleets, policies -> p1")
    (repo / "policies").unlink()
    (repo / "policies").symlink_to("p2")
    commit(repo, "policies -> p2")
    result = diff("--base", "HEAD~1", "--head", "HEAD", "--format", "json", "policies")
    assert result.exit_code == 1, result.output
    assert quotas(result.output) == [("pretraining", 80, 64)]
    # the names are those a reviewer opens: through the link, as on disk
    report = json.loads(result.output)
    assert report["base"]["label"].startswith("HEAD~1 (")


def test_a_link_out_of_the_repository_is_refused_where_it_is(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text((repo / TRAINING).read_text())
    (repo / TRAINING).unlink()
    (repo / TRAINING).symlink_to(outside)
    (repo / "policies/teams/up.yaml").symlink_to("../../../outside.yaml")
    commit(repo, "links that leave the repository")
    result = diff("--base", "HEAD~1", "--head", "HEAD", "--format", "json")
    assert result.exit_code == 1, result.output
    found = [(f["location"]["file"], f["message"]) for f in introduced(result.output)]
    assert found == [
        (TRAINING, f"the symlink cannot be followed: it points at the absolute path {outside}, "
         "outside the repository"),
        ("policies/teams/up.yaml",
         "the symlink cannot be followed: it leads out of the repository"),
    ]  # fmt: skip


def test_a_dangling_policy_link_and_a_link_loop_are_reported(repo: Path) -> None:
    (repo / "policies/teams/gone.yaml").symlink_to("nowhere.yaml")
    (repo / "policies/teams/loop").symlink_to("../teams")
    commit(repo, "odd links")
    result = diff("--base", "HEAD~1", "--head", "HEAD", "--format", "json")
    assert result.exit_code == 1, result.output
    messages = [(f["location"]["file"], f["message"]) for f in introduced(result.output)]
    assert [file for file, _ in messages] == ["policies/teams/gone.yaml", "policies/teams/loop"]
    assert "loop" in messages[1][1]


# -- item 1: a submodule is read from its own clone, or refused with a located finding ----------


def submodule_repo(tmp_path: Path, repo: Path) -> Path:
    teams = tmp_path / "teams-repo"
    shutil.copytree(repo / "policies/teams", teams)
    git(teams, "init", "-q", "-b", "main")
    commit(teams, "teams")
    git(repo, "rm", "-r", "-q", "policies/teams")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(teams),
        "policies/teams")  # fmt: skip
    commit(repo, "teams as a submodule")
    return teams


def test_a_submodule_is_read_at_each_ref(repo: Path, tmp_path: Path) -> None:
    submodule_repo(tmp_path, repo)
    cut(repo / "policies")
    commit(repo / "policies/teams", "cut")
    commit(repo, "bump teams")
    result = diff("--base", "HEAD~1", "--head", "HEAD", "--format", "json")
    assert result.exit_code == 1, result.output
    assert quotas(result.output) == [("pretraining", 80, 64)]
    assert json.loads(result.output)["base"]["valid"]


def test_a_submodule_not_checked_out_is_refused_not_dropped(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    submodule_repo(tmp_path, repo)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))  # no --recurse-submodules
    monkeypatch.chdir(clone)
    result = diff("--base", "HEAD~1", "--head", "HEAD", "--format", "json")
    assert result.exit_code == 1, result.output
    (finding,) = introduced(result.output)
    assert (finding["rule"], finding["location"]["file"]) == ("unreadable-at-ref", "policies/teams")
    assert "submodule" in finding["message"]


# -- item 2: no merge-base is a usage error, never HEAD against itself ---------------------------


def test_a_shallow_clone_without_a_merge_base_is_a_usage_error(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    cut(repo / "policies")
    commit(repo, "cut pretraining")
    git(repo, "checkout", "-q", "main")
    apply_edits(repo / "policies", SCENARIOS["pool-expiry"])
    commit(repo, "main moves on")
    clone = tmp_path / "clone"
    url = f"file://{repo}"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature", url, str(clone))
    git(clone, "fetch", "-q", "--depth", "1", "origin", "main:refs/remotes/origin/main")
    monkeypatch.chdir(clone)
    result = diff()
    assert result.exit_code == 2, result.output
    assert "no merge-base between HEAD and origin/main (this clone is shallow)" in result.output
    assert "--base" in result.output and "fetch-depth: 0" in result.output
    assert diff("--base", "origin/main").exit_code == 1  # the way out the message names


# -- item 9: a blob missing from the object store is the environment's fault ---------------------


def test_a_blob_missing_at_the_base_ref_is_exit_4(repo: Path) -> None:
    cut(repo / "policies")
    commit(repo, "cut")
    oid = git(repo, "rev-parse", f"HEAD~1:{TRAINING}").strip()
    os.remove(repo / ".git/objects" / oid[:2] / oid[2:])
    result = diff("--base", "HEAD~1", "--head", "HEAD")
    assert result.exit_code == 4, result.output
    assert f"the Git object {oid} (a file at HEAD~1) is missing" in result.output
