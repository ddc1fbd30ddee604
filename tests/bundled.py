"""The bundled policy, copied to a test's folder and edited as a user would (one place for the
edits several test modules make: the koordinator target turned on, a team's namespaces
followed by more fields)."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = "targets: [core, kueue, volcano, nodes, gpu-operator]"
WITH_KOORDINATOR = "targets: [core, kueue, volcano, nodes, gpu-operator, koordinator]"


def copy(folder: Path, *, koordinator: bool = False, team_fields: str = "") -> Path:
    """`folder`/policies: the bundled policy, with the koordinator target when asked, and
    `team_fields` (YAML lines under `spec`) added to team finetune-nlp."""
    root = folder / "policies"
    shutil.copytree(REPO / "policies", root)
    if koordinator:
        fleet = root / "fleet.yaml"
        text = fleet.read_text()
        assert TARGETS in text, "the bundled Fleet's targets changed: update tests/bundled.py"
        fleet.write_text(text.replace(TARGETS, WITH_KOORDINATOR))
    if team_fields:
        teams = root / "teams" / "training.yaml"
        anchor = "  namespaces: [ft-nlp]\n"
        text = teams.read_text()
        assert anchor in text, "team finetune-nlp's namespaces changed: update tests/bundled.py"
        teams.write_text(text.replace(anchor, anchor + team_fields))
    return root


TEAM_QUEUE = "volcano: {layout: team, queueName: all}"


def volcano_team_jobs(folder: Path) -> tuple[Path, Path]:
    """(policy, jobs): `folder`/policy, the bundled policy whose pretraining team has one
    Volcano queue `all` across its pools (`volcano.layout: team`), and `folder`/jobs, its
    job templates for Volcano as `hetgitops jobs` writes them."""
    from click.testing import CliRunner

    from hetgitops.cli.main import main

    policy = folder / "policy"
    shutil.copytree(REPO / "policies", policy)
    teams = policy / "teams" / "training.yaml"
    old = "volcano: {weight: 4}"
    text = teams.read_text()
    assert old in text, "team pretraining's volcano field changed: update tests/bundled.py"
    teams.write_text(text.replace(old, TEAM_QUEUE))
    out = folder / "jobs"
    args = ["jobs", str(policy), "--scheduler", "volcano", "--team", "pretraining", "-o", str(out)]
    run = CliRunner().invoke(main, args)
    assert run.exit_code in (0, 1), run.output
    return policy, out
