"""The GitLab CI example's script, run as a GitLab shell runner runs it (all `script` lines in
one bash with `set -eo pipefail`), in a real Git repository with a merge-request branch. The
install line (`before_script`) is not run: hetgitops is already installed here."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from tests.integrations.conftest import REPO, git, tool_env

JOB = yaml.safe_load((REPO / "integrations/gitlab/.gitlab-ci.yml").read_text())["hetgitops"]


def _run_job(repo: Path, base: str | None) -> int:
    script = "\n".join(["set -eo pipefail", *JOB["script"]])
    env = {key: str(value) for key, value in JOB["variables"].items()}
    if base:
        env["CI_MERGE_REQUEST_DIFF_BASE_SHA"] = base
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", script],
        cwd=repo, env=tool_env(env), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done.returncode


def _branch(repo: Path, old: str, new: str, *, rerender: bool) -> str:
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    git(repo, "checkout", "-q", "-b", "mr")
    teams = repo / "policies" / "teams.yaml"
    teams.write_text(teams.read_text().replace(old, new))
    if rerender:
        subprocess.run(["hetgitops", "render", "policies", "--output", "rendered"], cwd=repo,
                       env=tool_env(), check=True, capture_output=True)  # fmt: skip
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mr")
    return base


def test_clean_merge_request_passes_with_reports(scaffold_repo: Path) -> None:
    base = _branch(scaffold_repo, "cards: 16", "cards: 8", rerender=True)
    assert _run_job(scaffold_repo, base) == 0
    assert json.loads((scaffold_repo / "gl-code-quality-report.json").read_text()) == []
    assert "<testsuite" in (scaffold_repo / "hetgitops-junit.xml").read_text()
    assert "| ml | h100-80gb |" in (scaffold_repo / "hetgitops-diff.md").read_text()


def test_findings_fail_the_job_after_writing_every_report(scaffold_repo: Path) -> None:
    base = _branch(scaffold_repo, "pool: h100-80gb", "pool: h100", rerender=False)
    assert _run_job(scaffold_repo, base) == 1
    issues = json.loads((scaffold_repo / "gl-code-quality-report.json").read_text())
    assert issues and issues[0]["location"]["path"] == "policies/teams.yaml"
    assert "<failure" in (scaffold_repo / "hetgitops-junit.xml").read_text()
    assert (scaffold_repo / "hetgitops-diff.md").is_file()


def test_an_oversubscribed_pool_is_reported_on_the_changed_quota_line(
    scaffold_repo: Path,
) -> None:
    base = _branch(scaffold_repo, "cards: 16", "cards: 99", rerender=False)
    assert _run_job(scaffold_repo, base) == 1
    issues = json.loads((scaffold_repo / "gl-code-quality-report.json").read_text())
    (total,) = [i for i in issues if i["check_name"] == "hetgitops/quota-exceeds-capacity"]
    line = (
        (scaffold_repo / "policies" / "teams.yaml").read_text().splitlines().index("    cards: 99")
    )
    assert total["location"] == {"path": "policies/teams.yaml", "lines": {"begin": line + 1}}
    assert [o["path"] for o in total["other_locations"]] == ["policies/pools.yaml"]


def test_stale_render_fails_the_job(scaffold_repo: Path) -> None:
    base = _branch(scaffold_repo, "cards: 16", "cards: 8", rerender=False)
    assert _run_job(scaffold_repo, base) == 1
