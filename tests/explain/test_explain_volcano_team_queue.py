"""explain of a Volcano Job submitted to a team queue (`volcano.layout: team`, which binds no
pool): the gang is placed on the team's pool its selector names, not looked up as pool ""."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from hetgitops.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def test_a_volcano_job_of_a_team_queue_is_explained(tmp_path: Path) -> None:
    policy = tmp_path / "policy"
    shutil.copytree(REPO / "policies", policy)
    teams = policy / "teams" / "training.yaml"
    old = "volcano: {weight: 4}"
    teams.write_text(teams.read_text().replace(old, "volcano: {layout: team, queueName: all}"))
    out = tmp_path / "jobs"
    args = ["jobs", str(policy), "--scheduler", "volcano", "--team", "pretraining", "-o", str(out)]
    assert CliRunner().invoke(main, args).exit_code in (0, 1)
    job = out / "ascend-pretrain" / "pretraining" / "ascend-910b.yaml"
    assert "batch.volcano.sh" in job.read_text()
    run = CliRunner().invoke(main, ["explain", str(policy), "-f", str(job)])
    assert run.exit_code == 0, run.output
    assert "verdict: admitted" in run.output
    assert "queue all capability huawei.com/Ascend910: 8" in run.output
