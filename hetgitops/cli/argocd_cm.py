"""`hetgitops argocd-cm`: Argo CD resource customizations for the kinds a policy renders.

Named `argocd_cm` because a hyphen cannot be in a module's name."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import click

from hetgitops import api
from hetgitops.cli.common import (
    EXISTING_PATHS_ARGUMENT,
    EXIT_FINDINGS,
    EXIT_OK,
    NOW_OPTION,
    echo_report,
    guarded,
    policy_paths,
)


@click.command(
    "argocd-cm",
    epilog="""\b
Exit codes:
  0  printed
  1  the policy has errors (nothing is printed)
  2  usage error
  3  internal error (a bug in hetgitops: please report it)

\b
Merge the printed ConfigMap into Argo CD's argocd-cm, for example as a kustomize patch of
the Argo CD install (see integrations/argocd/). Argo CD then shows a Kueue ClusterQueue,
LocalQueue, ResourceFlavor and a Volcano Queue with their real health, and compares quotas as
Kubernetes quantities (12000m equals 12).""",
)
@EXISTING_PATHS_ARGUMENT
@click.option("--namespace", default="argocd", show_default=True, help="Argo CD's namespace.")
@NOW_OPTION
def argocd_cm(paths: tuple[Path, ...], namespace: str, now: dt.date) -> None:
    """Print an argocd-cm ConfigMap with health checks and diff rules for the rendered kinds."""
    from hetgitops.compilers.argocd_config import argocd_cm as build
    from hetgitops.output.manifests import to_yaml
    from hetgitops.reporting import FORMATTERS

    def run() -> int:
        result = api.render(policy_paths(paths), api.Options(now=now, check_output=False))
        if result.failed():
            click.echo(FORMATTERS["text"](result), nl=False, err=True)
            return EXIT_FINDINGS
        echo_report("---\n" + to_yaml(build(result.manifests, namespace=namespace)))
        return EXIT_OK

    sys.exit(guarded(run))
