"""`hetgitops jobs`: a job template per eligible (team, workload profile, card type), as a YAML
stream or a tree; examples for teams to submit, never part of `render`'s tree."""

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
    crd_dir_option,
    emit,
    guarded,
    note,
    output_dir_option,
    policy_paths,
    refuse_unsafe_output,
)


@click.command(
    epilog="""\b
Exit codes:
  0  rendered (warnings go to stderr)
  1  the policy or a template has errors (nothing is emitted), or no job template
     is eligible for the chosen profiles and teams
  2  usage error (bad option or argument, unknown --profile or --team, unsafe --output)
  3  internal error (a bug in hetgitops: please report it)
  4  environment error (disk full, read-only or unwritable DIR, closed stdout,
     a file name too long for the file system); nothing partial counts as done

\b
Job templates are examples for teams to submit: they are never part of `render`'s tree.
stdout carries only the YAML stream; diagnostics go to stderr."""
)
@EXISTING_PATHS_ARGUMENT
@output_dir_option(
    "Write <profile>/<team>/<card>.yaml to DIR instead of stdout. DIR is replaced as a "
    "whole, atomically; the same safety rules as render --output apply.",
)
@click.option("--profile", "profiles", multiple=True, metavar="NAME", help="Only this profile.")
@click.option("--team", "teams", multiple=True, metavar="NAME", help="Only this team.")
@click.option(
    "--templates",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    metavar="DIR",
    help="Use the templates in DIR (same file names as the bundled ones; any it lacks come "
    "from the bundled set).",
)
@click.option(
    "--scheduler",
    type=click.Choice(["kueue", "volcano", "koordinator"]),
    default=None,
    help="Who queues the jobs (Volcano Jobs always go to Volcano). Default: kueue when the "
    "Fleet renders it, else koordinator, else volcano.",
)
@NOW_OPTION
@crd_dir_option("Also check the jobs against CRDs in DIR (JobSet, PyTorchJob, Volcano, LWS).")
def jobs(
    paths: tuple[Path, ...],
    output: Path | None,
    profiles: tuple[str, ...],
    teams: tuple[str, ...],
    templates: Path | None,
    scheduler: str | None,
    now: dt.date,
    crd_dirs: tuple[Path, ...],
) -> None:
    """Render a job template per eligible (team, workload profile, card type)."""

    def run() -> int:
        options = api.Options(now=now, crd_dirs=crd_dirs)
        inputs = policy_paths(paths)
        sources = [*inputs, *([templates] if templates else [])]
        if output is not None:
            refuse_unsafe_output(output, sources)
        try:
            result = api.jobs(
                inputs,
                options,
                profiles=profiles,
                teams=teams,
                templates=templates,
                scheduler=scheduler,
            )
        except api.SelectionError as exc:
            raise click.UsageError(str(exc)) from None
        return _emit_jobs(result, output, sources)

    sys.exit(guarded(run))


def _emit_jobs(result: api.Result, output: Path | None, inputs: list[Path]) -> int:
    from hetgitops.compilers.jobs.render import stream, tree
    from hetgitops.output.writer import write_tree
    from hetgitops.reporting import FORMATTERS

    if result.diagnostics:
        emit(FORMATTERS["text"](result), err=True)
    if result.failed():
        note("hetgitops: there are errors; no job template was rendered")
        return EXIT_FINDINGS
    if not result.manifests:
        note(
            "hetgitops: no job templates: no chosen team holds quota on a card type that a "
            "chosen profile can run on"
        )
        return EXIT_FINDINGS
    if output is None:
        emit(stream(result.manifests))
    else:
        write_tree(tree(result.manifests), output, inputs=inputs)
    return EXIT_OK
