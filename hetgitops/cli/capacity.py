"""`hetgitops capacity`: who really gets what (thin: logic in capacity/)."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import click

from hetgitops.cli.common import (
    EXIT_CODES_HELP,
    EXIT_FINDINGS,
    EXIT_OK,
    NOW_OPTION,
    echo_report,
    guarded,
    policy_paths,
)


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "csv", "markdown", "html"]),
    default="text",
    show_default=True,
    help="Report format.",
)
@NOW_OPTION
def capacity(paths: tuple[Path, ...], output_format: str, now: dt.date) -> None:
    """Who really gets what: per team, pool and resource the nominal quota, what it may
    borrow, lends, keeps guaranteed and can reach (whole GPUs, MIG profiles and time-sliced
    replicas apart, normalized units beside them); monthly cost against budget; per card
    type commitment against capacity."""
    from hetgitops.capacity import formats
    from hetgitops.capacity import run as report
    from hetgitops.explain import run

    def go() -> int:
        try:
            policy = run.load_policy(policy_paths(paths), now)
        except run.PolicyError as failed:
            from hetgitops.reporting import failure

            echo_report(failure.render(failed.result, output_format))
            return EXIT_FINDINGS
        built = report.capacity_report(policy, now)
        if output_format == "html":
            from hetgitops.capacity import html

            try:
                echo_report(html.render_html(built))
            except html.ChartLibraryMissing as exc:
                raise click.ClickException(str(exc)) from None
        else:
            echo_report(formats.FORMATS[output_format](built))
        return EXIT_OK

    sys.exit(guarded(go))
