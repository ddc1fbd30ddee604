"""explain of a Volcano Job submitted to a team queue (`volcano.layout: team`, which binds no
pool): the gang is placed on the team's pool its selector names, not looked up as pool ""."""

from __future__ import annotations

from pathlib import Path

import bundled
from click.testing import CliRunner

from hetgitops.cli.main import main


def test_a_volcano_job_of_a_team_queue_is_explained(tmp_path: Path) -> None:
    policy, out = bundled.volcano_team_jobs(tmp_path)
    job = out / "ascend-pretrain" / "pretraining" / "ascend-910b.yaml"
    assert "batch.volcano.sh" in job.read_text()
    run = CliRunner().invoke(main, ["explain", str(policy), "-f", str(job)])
    assert run.exit_code == 0, run.output
    assert "verdict: admitted" in run.output
    assert "queue all capability huawei.com/Ascend910: 8" in run.output
