"""Policy symlinks on disk are followed only inside the Git repository holding the policy, as
the Git side of `diff` follows them: a link to an absolute path outside it (or one leading
out with `..`) used to be read by validate, render and diff's working-tree side, and the
outside file's apiVersion/kind was echoed into the report (a PR comment) (issue 33 item 17)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hetgitops.cli import main as cli
from tests.diff.scenarios import BUNDLED
from tests.diff.test_git_cli import NOW, commit, git

TRAINING = "policies/teams/training.yaml"
UP = "policies/teams/up.yaml"
SHARED = "policies/shared"
SECRET = "apiVersion: secret.example.com/v9\nkind: TopSecretCredential\nmetadata: {name: s3cr3t}\n"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    shutil.copytree(BUNDLED, root / "policies")
    commit(root, "bundled fleet")
    monkeypatch.chdir(root)
    return root


def _links_out(repo: Path, outside: Path) -> None:
    """An absolute file link, a relative one leading out, and a folder link out."""
    (outside / "secrets").mkdir(parents=True)
    (outside / "secret.yaml").write_text(SECRET, encoding="utf-8")
    (outside / "secrets" / "key.yaml").write_text(SECRET, encoding="utf-8")
    (repo / TRAINING).unlink()
    (repo / TRAINING).symlink_to(outside / "secret.yaml")
    (repo / UP).symlink_to("../../../outside/secret.yaml")
    (repo / SHARED).symlink_to(outside / "secrets", target_is_directory=True)


def _refusals(outside: Path) -> list[tuple[str, str]]:
    """Where and what the Git side of diff says of the same links (tests/diff/test_git_faults)."""
    return [
        (SHARED, "the symlink cannot be followed: it points at the absolute path "
         f"{outside / 'secrets'}, outside the repository"),
        (TRAINING, "the symlink cannot be followed: it points at the absolute path "
         f"{outside / 'secret.yaml'}, outside the repository"),
        (UP, "the symlink cannot be followed: it leads out of the repository"),
    ]  # fmt: skip


def test_validate_refuses_links_out_of_the_repository(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _links_out(repo, outside)
    result = CliRunner().invoke(cli.main, ["validate", "policies", "--format", "json"])
    assert result.exit_code == 1, result.output
    assert "TopSecret" not in result.output and "s3cr3t" not in result.output
    refused = [
        (d["file"], d["message"])
        for d in json.loads(result.output)["diagnostics"]
        if d["rule"] == "io-error"
    ]
    assert sorted(refused) == _refusals(outside)


def test_the_working_tree_side_of_diff_refuses_them_as_the_git_side_does(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    _links_out(repo, outside)
    on_disk = CliRunner().invoke(
        cli.main, ["diff", "--now", NOW, "--base", "HEAD", "--format", "json"]
    )
    assert on_disk.exit_code == 1, on_disk.output
    assert "TopSecret" not in on_disk.output and "s3cr3t" not in on_disk.output
    commit(repo, "links out")
    at_ref = CliRunner().invoke(
        cli.main, ["diff", "--now", NOW, "--base", "HEAD~1", "--head", "HEAD", "--format", "json"]
    )
    assert at_ref.exit_code == 1, at_ref.output
    expected = _refusals(outside)
    assert _messages(json.loads(at_ref.output), "unreadable-at-ref") == expected
    assert _messages(json.loads(on_disk.output), "io-error") == expected


def _messages(report: dict[str, Any], rule: str) -> list[tuple[str, str]]:
    introduced = report["findings"]["introduced"]
    return sorted((f["location"]["file"], f["message"]) for f in introduced if f["rule"] == rule)


def test_links_inside_the_repository_are_still_followed(repo: Path) -> None:
    common = repo / "common"
    common.mkdir()
    (repo / TRAINING).rename(common / "training.yaml")
    (repo / TRAINING).symlink_to(common / "training.yaml")  # absolute, but inside
    (repo / "extra").mkdir()
    (repo / "policies/teams/others.yaml").rename(repo / "extra/others.yaml")
    (repo / "policies/more").symlink_to("../extra", target_is_directory=True)
    result = CliRunner().invoke(cli.main, ["validate", "policies"])
    assert result.exit_code == 0, result.output
