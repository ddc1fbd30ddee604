"""pre-commit, run for real: the scaffold's hooks and the published .pre-commit-hooks.yaml."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.integrations.conftest import REPO, git, run


def _lower_a_quota(repo: Path) -> None:
    teams = repo / "policies" / "teams.yaml"
    teams.write_text(teams.read_text().replace("cards: 16", "cards: 8"))
    git(repo, "add", "-A")


def test_scaffold_hooks_pass_then_catch_a_stale_render(scaffold_repo: Path) -> None:
    clean = run(["pre-commit", "run", "--all-files"], scaffold_repo)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "hetgitops validate" in clean.stdout and "Passed" in clean.stdout
    _lower_a_quota(scaffold_repo)
    stale = run(["pre-commit", "run", "--all-files"], scaffold_repo)
    assert stale.returncode == 1
    assert "hetgitops render --check" in stale.stdout and "Failed" in stale.stdout
    # The failure says exactly what to run; running it makes the hook pass again.
    assert "hetgitops render policies --output rendered" in stale.stdout
    fix = run(["hetgitops", "render", "policies", "--output", "rendered"], scaffold_repo)
    assert fix.returncode == 0, fix.stderr
    git(scaffold_repo, "add", "-A")
    assert run(["pre-commit", "run", "--all-files"], scaffold_repo).returncode == 0


def test_published_hooks_are_a_valid_manifest() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["hetgitops-validate", "hetgitops-render-check"]
    for hook in hooks:
        # The policy is read whole: file names from pre-commit would narrow it wrongly.
        assert hook["pass_filenames"] is False and hook["language"] == "python"
    # pre-commit's own schema check of a hooks manifest.
    from pre_commit.clientlib import load_manifest

    assert [h["id"] for h in load_manifest(str(REPO / ".pre-commit-hooks.yaml"))] == [
        "hetgitops-validate",
        "hetgitops-render-check",
    ]


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("HETGITOPS_SLOW"),
    reason="installs hetgitops into a fresh venv via pre-commit (minutes); HETGITOPS_SLOW=1",
)
def test_try_repo_installs_and_runs_the_published_hooks(scaffold_repo: Path) -> None:
    """`pre-commit try-repo` on this checkout, the way a user tries hooks before pinning them:
    pre-commit clones the repo, pip-installs it (language: python) and runs each hook."""
    ok = run(["pre-commit", "try-repo", str(REPO), "--all-files"], scaffold_repo, timeout=1200)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count("Passed") == 2
    _lower_a_quota(scaffold_repo)
    stale = run(
        ["pre-commit", "try-repo", str(REPO), "hetgitops-render-check", "--all-files"],
        scaffold_repo,
        timeout=1200,
    )
    assert stale.returncode == 1, stale.stdout
    assert "hetgitops render policies --output rendered" in stale.stdout
