"""Helpers for tests that run hetgitops the way another tool does (pre-commit, Argo CD, CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetgitops.cli.main import main

REPO = Path(__file__).resolve().parents[2]
# The venv's bin folder: `hetgitops` and `pre-commit` as a user's shell finds them.
BIN = Path(sys.executable).parent


def tool_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.update(extra or {})
    return env


def run(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), cwd=cwd, env=tool_env(env), capture_output=True, text=True, timeout=timeout
    )


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=hetgitops-test", "-c", "user.email=test@hetgitops.invalid"]
    subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def scaffold_repo(tmp_path: Path) -> Path:
    """A freshly `hetgitops init`-ed policy repository, committed to git."""
    repo = tmp_path / "policy-repo"
    result = CliRunner().invoke(
        main, ["init", str(repo), "--cluster", "demo", "--card", "h100-80gb", "--no-interactive"]
    )
    assert result.exit_code == 0, result.output
    # What init's note asks first: real node names for the placeholders (node-name-placeholder).
    pools = repo / "policies" / "pools.yaml"
    pools.write_text(pools.read_text().replace("replace-me-h100-80gb-", "gpu-h100-"))
    rendered = CliRunner().invoke(
        main, ["render", str(repo / "policies"), "--output", str(repo / "rendered")]
    )
    assert rendered.exit_code == 0, rendered.output
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "GPU fleet policy")
    return repo
