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
    EXIT_USAGE,
    echo_report,
    guarded,
    note,
    policy_paths,
)
from hetgitops.drift.report import FORMATS

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> dt.timedelta:
    match = _DURATION.match(value)
    if not value or match is None:
        raise click.BadParameter(f"{value!r} is not a duration such as 30m, 2h or 1h30m")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)


def _contexts(values: tuple[str, ...]) -> tuple[str | None, dict[str, str]]:
    """(the plain context, {cluster: context}) from the --context values."""
    plain = [v for v in values if "=" not in v]
    if len(plain) > 1:
        raise click.BadParameter(
            f"{len(plain)} contexts without CLUSTER=: give one, or CLUSTER=CONTEXT per cluster",
            param_hint="--context",
        )
    by_cluster: dict[str, str] = {}
    for value in values:
        if "=" not in value:
            continue
        name, _, context = value.partition("=")
        if not name or not context:
            raise click.BadParameter(f"{value!r} is not CLUSTER=CONTEXT", param_hint="--context")
        if name in by_cluster:
            raise click.BadParameter(f"cluster {name!r} given twice", param_hint="--context")
        by_cluster[name] = context
    if plain and by_cluster:
        raise click.BadParameter(
            "mixes a plain CONTEXT with CLUSTER=CONTEXT", param_hint="--context"
        )
    return (plain[0] if plain else None), by_cluster


@click.command(
    epilog="""\b
Exit codes:
  0  no drift
  1  drift: findings about objects, fields or nodes (or the policy has errors)
  2  usage error (bad option or argument; a Cluster of a multi-cluster policy
     without --context CLUSTER=CONTEXT, or a context for an unknown cluster)
  3  internal error (a bug in hetgitops: please report it)
  4  environment error: the cluster is unreachable, rejects the credentials, or
     they may not list CRDs or nodes (or, with server-dry-run, may not patch)

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
@click.option(
    "--context",
    "contexts",
    multiple=True,
    metavar="[CLUSTER=]CONTEXT",
    help="Kubeconfig context (default: the current context). A multi-cluster policy needs one "
    "CLUSTER=CONTEXT per Cluster document (repeatable); each cluster is read with its own.",
)
@click.option(
    "--skip-cluster",
    "skip",
    multiple=True,
    metavar="CLUSTER",
    help="Multi-cluster policies: leave this cluster out (repeatable); it is reported as not "
    "checked (warning drift-cluster-not-checked), never skipped in silence.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(list(FORMATS)),
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
@click.option(
    "--timeout",
    default="5m",
    show_default=True,
    callback=_duration,
    metavar="DURATION",
    help="Give up (exit 4) when reading the cluster(s) takes longer than this in all: every "
    "request and credential plugin together, however slowly a server answers.",
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Text report: list every node under its pool's finding (one finding per pool names "
    "the nodes as ranges; the JSON report always lists them as `details`).",
)
def drift(
    paths: tuple[Path, ...],
    kubeconfig: Path | None,
    contexts: tuple[str, ...],
    skip: tuple[str, ...],
    output_format: str,
    managers: tuple[str, ...],
    mode: str,
    mig_pending_timeout: dt.timedelta,
    timeout: dt.timedelta,
    verbose: bool,
) -> None:
    """Compare the live cluster with the policy (default: policies/): missing, changed and
    orphaned objects, who changed what and when, and the fleet's nodes. A multi-cluster
    policy is read cluster by cluster (--context CLUSTER=CONTEXT each) and every finding
    names its cluster."""
    from hetgitops.drift.dryrun import DryRunForbidden
    from hetgitops.drift.report import render
    from hetgitops.drift.run import (
        DEFAULT_MANAGERS,
        DriftOptions,
        EnvironmentFault,
        UsageProblem,
    )
    from hetgitops.drift.run import drift as run_drift
    from hetgitops.live.client import insecure_warning

    context, by_cluster = _contexts(contexts)
    options = DriftOptions(
        kubeconfig=kubeconfig,
        context=context,
        contexts=by_cluster,
        skip=skip,
        managers=managers or DEFAULT_MANAGERS,
        mode=mode,
        mig_pending_timeout=mig_pending_timeout,
        timeout=timeout.total_seconds(),
    )

    def run() -> int:
        try:
            found = run_drift(policy_paths(paths), options)
        except UsageProblem as exc:
            click.echo(f"hetgitops drift: {exc}", err=True)
            return EXIT_USAGE
        except (EnvironmentFault, DryRunForbidden) as exc:
            click.echo(f"hetgitops: {exc}", err=True)
            return EXIT_ENVIRONMENT
        for read in found.reads:
            if read.insecure:
                note(insecure_warning(read.server))
        echo_report(render(found, output_format, verbose=verbose))
        return EXIT_FINDINGS if found.drifted else EXIT_OK

    sys.exit(guarded(run))
