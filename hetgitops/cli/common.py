"""CLI plumbing shared by every command: exit codes, shared options, error and pipe handling."""

from __future__ import annotations

import datetime as dt
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
# The environment failed, not hetgitops: disk full, read-only folder, closed pipe, cluster
# unreachable or forbidden. Kept apart from 3 so that 3 always means a bug worth reporting.
EXIT_ENVIRONMENT = 4

EXIT_CODES_HELP = """\b
Exit codes:
  0  clean (warnings allowed unless --strict)
  1  findings: errors (or warnings with --strict)
  2  usage error (bad option or argument)
  3  internal error (a bug in hetgitops: please report it)
  4  environment error (disk full, permissions, cluster unreachable or forbidden)"""


def _parse_date(ctx: click.Context, param: click.Parameter, value: str | None) -> dt.date:
    if value is None:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)") from None


# Options shared by the commands that read a policy: one definition, the same help everywhere.
PATHS_ARGUMENT = click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
NOW_OPTION = click.option(
    "--now",
    callback=_parse_date,
    metavar="DATE",
    help="Today's date for expiry checks (YYYY-MM-DD); default: today.",
)


def crd_dir_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--crd-dir",
        "crd_dirs",
        multiple=True,
        type=click.Path(path_type=Path, exists=True, file_okay=False),
        help=help_text,
    )


def policy_paths(paths: tuple[Path, ...]) -> list[Path]:
    return list(paths) or [Path("policies")]


def guarded(run: Callable[[], int]) -> int:
    """Turn any unexpected exception into exit 3 with a one-line hint instead of a traceback
    (set HETGITOPS_DEBUG=1 to see the traceback)."""
    try:
        return run()
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except Exception as exc:  # the last line of defence, by design
        what = (str(exc).splitlines() or [""])[0][:200]
        click.echo(
            f"hetgitops: internal error ({type(exc).__name__}: {what}); this is a bug, please "
            "report it with the input that caused it",
            err=True,
        )
        if os.environ.get("HETGITOPS_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL


def echo_report(report: str) -> None:
    """Print a report; a reader that went away (`| head`) is not an internal error."""
    try:
        click.echo(report, nl=False)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would complain again when flushing stdout at exit; point it at nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
