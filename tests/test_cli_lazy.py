"""The CLI loads a command's module when that command runs (issue 20 item 5: importing every
command up front cost `explain` more than its own work), and `--help` still lists them all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from hetgitops.cli import main as cli

REPO = Path(__file__).resolve().parents[1]

# Modules only other commands need: validate's checks and reporters, the jobs compiler
# (Jinja2), diff, drift, import. (The target compilers, Grafana's SDK among them, load with
# the compile stage explain reads its flavors from.)
HEAVY = (
    "hetgitops.checks",
    "hetgitops.reporting",
    "hetgitops.compilers.jobs.render",
    "jinja2",
    "hetgitops.diff",
    "hetgitops.drift",
    "hetgitops.adopt",
)

PROBE = """
import json, sys
from hetgitops.cli.main import main
try:
    main(sys.argv[1:], prog_name="hetgitops")
except SystemExit:
    pass
heavy = %r
loaded = [m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)]
print(json.dumps(sorted(loaded)), file=sys.stderr)
"""


def _loaded(*args: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (heavy,), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    return list(json.loads(done.stderr.strip().splitlines()[-1]))


def test_explain_imports_none_of_the_other_commands_modules() -> None:
    loaded = _loaded("explain", "--team", "finetune-nlp", "--card", "h100-80gb", "--gpus", "8")
    assert loaded == []


def test_capacity_imports_neither_diff_nor_drift_nor_import() -> None:
    """capacity prices quotas with validate's budget check, so it loads the checks."""
    loaded = _loaded("capacity", "policies", "--now", "2026-12-01")
    assert [m for m in loaded if m.split(".")[1] in {"diff", "drift", "adopt"}] == []


def test_validate_imports_neither_importlib_metadata_nor_resources() -> None:
    """~15 ms of every run (email, csv, zipfile...) for a version string shown in a rare note
    and a folder that is the package's own (issue 24)."""
    loaded = _loaded(
        "validate",
        "policies",
        "--now",
        "2026-12-01",
        heavy=("importlib.metadata", "importlib.resources"),
    )
    assert loaded == []


def test_help_lists_every_command_with_its_one_line_help() -> None:
    text = CliRunner().invoke(cli.main, ["--help"], prog_name="hetgitops").output
    commands = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    names = [line.split()[0] for line in commands]
    assert names == sorted(cli.COMMANDS)
    ctx = click.Context(cli.main)
    for line in commands:
        name, summary = line.split(None, 1)
        command = cli.main.get_command(ctx, name)
        assert command is not None
        assert summary == command.get_short_help_str(limit=len(summary))
        assert summary.rstrip(".")


def test_every_lazy_entry_names_its_command() -> None:
    ctx = click.Context(cli.main)
    for name in cli.COMMANDS:
        command = cli.main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name


def test_an_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli.main, ["explian"])
    assert result.exit_code == 2
    assert "No such command 'explian'" in result.output


def test_diff_of_two_folders_loads_no_kubernetes_client() -> None:
    """The live blast radius (diff/blast.py, the Kubernetes client) loads with --kubeconfig."""
    loaded = _loaded("diff", "--base-dir", "policies", "--head-dir", "policies")
    assert "hetgitops.diff.run" in loaded
    assert "hetgitops.diff.blast" not in loaded
