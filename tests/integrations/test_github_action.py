"""The composite action's shell steps, run the way a GitHub runner runs them: `bash --noprofile
--norc -eo pipefail` per step, `env:` from the inputs, `$GITHUB_OUTPUT` carried between steps,
in a real Git repository with a pull-request branch. Steps that call other actions
(setup-python, upload-sarif) or the GitHub API (the comment upsert) are not run here; their
inputs (the SARIF file, the comment body) are checked instead."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integrations.conftest import REPO, git, tool_env

ACTION = yaml.safe_load((REPO / "action.yml").read_text())
STEPS: list[dict[str, Any]] = ACTION["runs"]["steps"]
NOT_RUN_HERE = {"Install hetgitops (the release this action belongs to)",
                "Post or update the PR comment"}  # fmt: skip


@dataclass
class Runner:
    repo: Path
    inputs: dict[str, str]
    event: Mapping[str, Any]
    temp: Path
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)

    def value(self, expression: str) -> str:
        """The few expression forms the action uses, resolved like the runner would."""
        name = expression.strip()
        if name.startswith("inputs."):
            key = name.removeprefix("inputs.")
            return self.inputs.get(key, str(ACTION["inputs"][key].get("default", "")))
        if name.startswith("steps."):
            step, _, output = name.removeprefix("steps.").partition(".outputs.")
            return self.outputs.get(step, {}).get(output, "")
        lookups: dict[str, str] = {
            "github.event_name": str(self.event["name"]),
            "github.event.pull_request.base.sha": str(self.event.get("base", "")),
            "github.event.pull_request.number": "7",
            "github.repository": "example/gpu-policy",
            "github.action_path": str(REPO),
            "github.token": "not-used",
            "runner.temp": str(self.temp),
        }
        return lookups[name]

    def expand(self, text: str) -> str:
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: self.value(m.group(1)), text)

    def condition(self, text: str | None) -> bool:
        """`if:` expressions of the action, evaluated the way GitHub does."""
        if text is None:
            return True
        inner = text.strip().removeprefix("${{").removesuffix("}}").strip()
        checks: dict[str, Callable[[], bool]] = {
            "always()": lambda: True,
            "inputs.rendered != ''": lambda: self.value("inputs.rendered") != "",
            "github.event_name == 'pull_request' && inputs.comment == 'true'": lambda: (
                self.event["name"] == "pull_request" and self.value("inputs.comment") == "true"
            ),
            "steps.diff.outputs.body != '' && github.event.pull_request.head.repo.full_name"
            " == github.repository": lambda: self.value("steps.diff.outputs.body") != "",
            "always() && inputs.sarif == 'true' && steps.validate.outputs.exit-code != ''": (
                lambda: (
                    self.value("inputs.sarif") == "true"
                    and self.value("steps.validate.outputs.exit-code") != ""
                )
            ),
        }
        return checks[inner]()  # a KeyError means the action grew an `if` this test must learn

    def run(self) -> int:
        """Every step in order; returns the job's exit code (the first failing step's)."""
        for step in STEPS:
            if "uses" in step or step["name"] in NOT_RUN_HERE or not self.condition(step.get("if")):
                continue
            code = self._shell(step)
            if code != 0:
                return code
        return 0

    def _shell(self, step: Mapping[str, Any]) -> int:
        output = self.temp / f"output-{step.get('id', 'step')}"
        output.write_text("")
        env = {key: self.expand(str(value)) for key, value in step.get("env", {}).items()}
        env |= {"GITHUB_OUTPUT": str(output), "RUNNER_TEMP": str(self.temp),
                "GITHUB_STEP_SUMMARY": str(self.temp / "summary.md")}  # fmt: skip
        script = self.temp / "step.sh"
        script.write_text(step["run"])
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.repo, env=tool_env(env), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        self.logs[step.get("id", step["name"])] = done.stdout + done.stderr
        if "id" in step:
            pairs = (line.partition("=") for line in output.read_text().splitlines())
            self.outputs[step["id"]] = {key: value for key, _, value in pairs}
        return done.returncode


def _pull_request(repo: Path, change: Callable[[Path], None]) -> str:
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    git(repo, "checkout", "-q", "-b", "change")
    change(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return base


def _cut_quota(repo: Path) -> None:
    teams = repo / "policies" / "teams.yaml"
    teams.write_text(teams.read_text().replace("cards: 16", "cards: 8"))


def _rerender(repo: Path) -> None:
    subprocess.run(
        ["hetgitops", "render", "policies", "--output", "rendered"],
        cwd=repo, env=tool_env(), check=True, capture_output=True,
    )  # fmt: skip


INPUTS = {"policy": "policies", "rendered": "rendered", "now": "2026-09-01"}


@pytest.mark.slow  # runs the action's steps in a Git repository
def test_clean_pull_request_passes_and_leaves_one_comment_body(
    scaffold_repo: Path, tmp_path: Path
) -> None:
    base = _pull_request(scaffold_repo, lambda r: (_cut_quota(r), _rerender(r)))
    runner = Runner(scaffold_repo, INPUTS, {"name": "pull_request", "base": base}, tmp_path)
    assert runner.run() == 0, runner.logs
    assert runner.outputs["validate"]["exit-code"] == "0"
    assert runner.outputs["render-check"]["exit-code"] == "0"
    assert runner.outputs["diff"]["exit-code"] == "1"  # the policy changed: reported, not failed
    body = Path(runner.outputs["diff"]["body"]).read_text()
    assert body.startswith("<!-- hetgitops-diff -->\n") and body.count("hetgitops-diff -->") == 1
    # Per resource since 84f438d: nominal and reach in whole GPUs, then card-equivalents.
    row = "| ml | h100-80gb | h100-80gb | whole 16 → 8 | whole 16 → 8 | 16 → 8 (-8, -50.0%) |"
    assert row in body
    sarif = json.loads((tmp_path / "hetgitops.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"] == []
    assert "### hetgitops validate" in (tmp_path / "summary.md").read_text()


@pytest.mark.slow  # runs the action's steps in a Git repository
def test_policy_error_fails_the_job_with_annotations_and_sarif(
    scaffold_repo: Path, tmp_path: Path
) -> None:
    def break_it(repo: Path) -> None:
        teams = repo / "policies" / "teams.yaml"
        teams.write_text(teams.read_text().replace("pool: h100-80gb", "pool: h100"))

    base = _pull_request(scaffold_repo, break_it)
    runner = Runner(scaffold_repo, INPUTS, {"name": "pull_request", "base": base}, tmp_path)
    assert runner.run() == 1
    assert runner.outputs["validate"]["exit-code"] == "1"
    assert re.search(r"^::error file=policies/teams\.yaml,line=\d+,", runner.logs["validate"], re.M)
    results = json.loads((tmp_path / "hetgitops.sarif").read_text())["runs"][0]["results"]
    assert results and results[0]["level"] == "error"
    assert "diff" in runner.outputs  # the comment is still prepared for the reviewer


@pytest.mark.slow  # runs the action's steps in a Git repository
def test_an_oversubscribed_pool_is_annotated_on_the_changed_quota_line(
    scaffold_repo: Path, tmp_path: Path
) -> None:
    # The pool's total is defined in pools.yaml, outside this PR's diff; the annotation goes to
    # the quota line the PR raised, with a note per contributor (issue 7, item 8).
    def oversubscribe(repo: Path) -> None:
        teams = repo / "policies" / "teams.yaml"
        teams.write_text(teams.read_text().replace("cards: 16", "cards: 99"))

    base = _pull_request(scaffold_repo, oversubscribe)
    line = (
        (scaffold_repo / "policies" / "teams.yaml").read_text().splitlines().index("    cards: 99")
    )
    runner = Runner(scaffold_repo, INPUTS, {"name": "pull_request", "base": base}, tmp_path)
    assert runner.run() == 1
    (annotation,) = [
        a for a in runner.logs["validate"].splitlines() if "title=quota-exceeds-capacity" in a
    ]
    assert annotation.startswith(f"::error file=policies/teams.yaml,line={line + 1},")
    assert "%0Anote: policies/pools.yaml:" in annotation


@pytest.mark.slow  # runs the action's steps in a Git repository
def test_stale_render_fails_the_job_and_names_the_fix(scaffold_repo: Path, tmp_path: Path) -> None:
    base = _pull_request(scaffold_repo, _cut_quota)  # policy changed, render not re-made
    runner = Runner(scaffold_repo, INPUTS, {"name": "pull_request", "base": base}, tmp_path)
    assert runner.run() == 1
    assert runner.outputs["validate"]["exit-code"] == "0"
    assert runner.outputs["render-check"]["exit-code"] == "1"
    assert "hetgitops render policies --output rendered" in runner.logs["render-check"]


@pytest.mark.slow  # runs the action's steps in a Git repository
@pytest.mark.parametrize(("fail_on", "expected"), [("never", 0), ("change", 1)])
def test_fail_on_diff_decides_whether_a_change_fails(
    scaffold_repo: Path, tmp_path: Path, fail_on: str, expected: int
) -> None:
    base = _pull_request(scaffold_repo, lambda r: (_cut_quota(r), _rerender(r)))
    inputs = {**INPUTS, "fail-on-diff": fail_on}
    runner = Runner(scaffold_repo, inputs, {"name": "pull_request", "base": base}, tmp_path)
    assert runner.run() == expected


def test_push_runs_no_diff(scaffold_repo: Path, tmp_path: Path) -> None:
    runner = Runner(scaffold_repo, INPUTS, {"name": "push"}, tmp_path)
    assert runner.run() == 0
    assert "diff" not in runner.outputs


def test_no_step_hides_a_failure() -> None:
    for step in STEPS:
        assert "|| true" not in step.get("run", ""), step["name"]
        assert "continue-on-error" not in step, step["name"]


def test_scaffold_workflow_calls_this_action_with_known_inputs(scaffold_repo: Path) -> None:
    workflow = yaml.safe_load((scaffold_repo / ".github/workflows/hetgitops.yml").read_text())
    steps = workflow["jobs"]["policy"]["steps"]
    (ours,) = [s for s in steps if str(s.get("uses", "")).startswith("hetgitops/hetgitops@")]
    assert set(ours["with"]) <= set(ACTION["inputs"])
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # diff needs the base commit
    assert {"pull-requests", "security-events"} <= set(workflow["permissions"])


def test_example_workflow_is_the_one_init_writes() -> None:
    from hetgitops.scaffold.repo import WORKFLOW

    assert (REPO / "integrations/github/hetgitops.yml").read_text() == WORKFLOW
