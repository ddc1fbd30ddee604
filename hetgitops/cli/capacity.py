"""`hetgitops capacity`: who really gets what (thin: logic in capacity/)."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from hetgitops.model.policy import Policy

from hetgitops.cli.common import (
    EXIT_CODES_HELP,
    EXIT_ENVIRONMENT,
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
@click.option(
    "--without",
    "without",
    multiple=True,
    metavar="NODES|POOL",
    help="Maintenance plan: what remains with these nodes out (comma-separated or repeated: a "
    "pool, a node, a node pattern like 'gpu-a800-*', rack=NAME, zone=NAME): capacity left, "
    "teams short, borrowing that ends, MIG layouts to drain, the cordon/taint sequence. "
    "Formats text, json, markdown.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, dir_okay=False),
    help="With --without: also read the live cluster (read-only: one LIST each of Workloads, "
    "Pods and batch Jobs), list the admitted Workloads with pods on those nodes and say, in "
    "Kueue's order, which are re-admitted, which preempt whom to come back, which stay pending.",
)
@click.option("--context", metavar="CONTEXT", help="Kubeconfig context (implies --kubeconfig).")
@NOW_OPTION
def capacity(
    paths: tuple[Path, ...],
    output_format: str,
    without: tuple[str, ...],
    kubeconfig: Path | None,
    context: str | None,
    now: dt.date,
) -> None:
    """Who really gets what: per team, pool and resource the nominal quota, what it may
    borrow, lends, keeps guaranteed and can reach (whole GPUs, MIG profiles and time-sliced
    replicas apart, normalized units beside them); monthly cost against budget; per card
    type commitment against capacity. Time-boxed quota grants in force on --now count.

    With --without NODES|POOL: a maintenance plan for taking those nodes out."""
    from hetgitops.capacity import formats
    from hetgitops.capacity import run as report
    from hetgitops.explain import run
    from hetgitops.plan.maintenance import split

    selectors = split(without)
    if (kubeconfig or context) and not selectors:
        raise click.UsageError("--kubeconfig/--context need --without NODES|POOL")
    if selectors and output_format not in ("text", "json", "markdown"):
        raise click.UsageError("--without prints text, json or markdown")

    def go() -> int:
        try:
            policy = run.load_policy(policy_paths(paths), now)
        except run.PolicyError as failed:
            from hetgitops.reporting import failure

            echo_report(failure.render(failed.result, output_format))
            return EXIT_FINDINGS
        if selectors:
            return _maintenance(policy, selectors, output_format, now, kubeconfig, context)
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


def _maintenance(
    policy: Policy,
    selectors: tuple[str, ...],
    output_format: str,
    now: dt.date,
    kubeconfig: Path | None,
    context: str | None,
) -> int:
    from hetgitops.capacity import maintenance, maintenance_formats
    from hetgitops.capacity.maintenance_live import LiveUnavailable
    from hetgitops.explain.preemption_maintenance import Readmit

    try:
        plan = maintenance.run(
            policy,
            selectors,
            today=now,
            read_live=bool(kubeconfig or context),
            kubeconfig=kubeconfig,
            context=context,
            preemption=Readmit(),
        )
    except maintenance.UnknownNodes as exc:
        raise click.UsageError(str(exc)) from None
    except LiveUnavailable as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_ENVIRONMENT
    echo_report(maintenance_formats.FORMATS[output_format](plan))
    return EXIT_OK
