"""CLI command `drift`: options -> hetgitops.drift -> formatter -> exit code."""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path

import click

from hetgitops.cli.common import (
    EXISTING_PATHS_ARGUMENT,
    EXIT_ENVIRONMENT,
    EXIT_FINDINGS,
    EXIT_OK,
    echo_report,
    guarded,
    policy_paths,
)

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> dt.timedelta:
    match = _DURATION.match(value)
    if not value or match is None:
        raise click.BadParameter(f"{value!r} is not a duration such as 30m, 2h or 1h30m")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)


@click.command(
    epilog="""\b
Exit codes:
  0  no drift
  1  drift: findings about objects, fields or nodes (or the policy has errors)
  2  usage error (bad option or argument)
  3  internal error (a bug in hetgitops: please report it)
  4  environment error: the cluster is unreachable, rejects the credentials, or
     they may not list CRDs or nodes (or, with server-dry-run, may not patch)

\b
The issue that asked for this command proposed exit 3 for an unreachable or
forbidden cluster; hetgitops keeps 3 for its own bugs (every command does), so
those are exit 4.

\b
Read-only mode issues one LIST per kind in use (label selector
app.kubernetes.io/managed-by=hetgitops,<domain>/fleet=<cluster>), one LIST of
the CRDs and one of the nodes; never a GET per object. `hetgitops render
--target drift-rbac` gives the ClusterRole it needs. Secret data and
credentials are never printed."""
)
@EXISTING_PATHS_ARGUMENT
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).",
)
@click.option("--context", help="Kubeconfig context (default: the current context).")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "markdown", "github"]),
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option(
    "--manager",
    "managers",
    multiple=True,
    metavar="NAME",
    help="Field manager that applies the rendered tree (repeatable); its fields that the "
    "policy no longer declares are reported as removed. Default: argocd-controller "
    "(Argo CD), kustomize-controller (Flux) and hetgitops.",
)
@click.option(
    "--mode",
    type=click.Choice(["read-only", "server-dry-run"]),
    default="read-only",
    show_default=True,
    help="server-dry-run: ask the API server what a server-side apply as field manager "
    "hetgitops would change (needs patch permission).",
)
@click.option(
    "--mig-pending-timeout",
    default="30m",
    show_default=True,
    callback=_duration,
    metavar="DURATION",
    help="Report nodes whose MIG re-partition has been pending longer than this.",
)
def drift(
    paths: tuple[Path, ...],
    kubeconfig: Path | None,
    context: str | None,
    output_format: str,
    managers: tuple[str, ...],
    mode: str,
    mig_pending_timeout: dt.timedelta,
) -> None:
    """Compare the live cluster with the policy (default: policies/): missing, changed and
    orphaned objects, who changed what and when, and the fleet's nodes."""
    from hetgitops.drift.dryrun import DryRunForbidden
    from hetgitops.drift.engine import DEFAULT_MANAGERS, DriftOptions, EnvironmentFault
    from hetgitops.drift.engine import drift as run_drift
    from hetgitops.drift.report import render

    options = DriftOptions(
        kubeconfig=kubeconfig,
        context=context,
        managers=managers or DEFAULT_MANAGERS,
        mode=mode,
        mig_pending_timeout=mig_pending_timeout,
    )

    def run() -> int:
        try:
            found = run_drift(policy_paths(paths), options)
        except (EnvironmentFault, DryRunForbidden) as exc:
            click.echo(f"hetgitops: {exc}", err=True)
            return EXIT_ENVIRONMENT
        echo_report(render(found, output_format))
        return EXIT_FINDINGS if found.drifted else EXIT_OK

    sys.exit(guarded(run))
