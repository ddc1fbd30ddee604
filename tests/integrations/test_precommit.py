"""pre-commit, run for real: the scaffold's hooks and the published .pre-commit-hooks.yaml."""

from __future__ import annotations

import re
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
def test_try_repo_installs_and_runs_the_published_hooks(scaffold_repo: Path) -> None:
    """`pre-commit try-repo` on this checkout, the way a user tries hooks before pinning them:
    pre-commit clones the repo (with its uncommitted changes), pip-installs it into a fresh
    environment (language: python) and runs each hook. One run on a policy whose committed
    render is stale shows both published entry points working: validate passes, render
    --check fails with the command that fixes it (the passing render check and the fix
    itself are test_scaffold_hooks_pass_then_catch_a_stale_render's). One install, not one
    per hook run: about 25 s of CPU, so it runs by default (issue 22 item 16)."""
    _lower_a_quota(scaffold_repo)
    ran = run(["pre-commit", "try-repo", str(REPO), "--all-files"], scaffold_repo, timeout=1200)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert re.search(r"^hetgitops validate\.+Passed$", ran.stdout, re.M), ran.stdout
    assert re.search(r"^hetgitops render --check\.+Failed$", ran.stdout, re.M), ran.stdout
    assert "hetgitops render policies --output rendered" in ran.stdout
