"""Thin CLI: options -> api call -> formatter -> exit code. No policy logic lives here."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hetgitops import __version__, api
from hetgitops.loading import KINDS

if TYPE_CHECKING:
    from hetgitops.manifests import TreeDiff

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

EXIT_CODES_HELP = """\b
Exit codes:
  0  clean (warnings allowed unless --strict)
  1  findings: errors (or warnings with --strict)
  2  usage error (bad option or argument)
  3  internal error (a bug in hetgitops: please report it)"""


def _parse_date(ctx: click.Context, param: click.Parameter, value: str | None) -> dt.date:
    if value is None:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)") from None


def _paths(paths: tuple[Path, ...]) -> list[Path]:
    return list(paths) or [Path("policies")]


def _guarded(run: Callable[[], int]) -> int:
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


def _echo_report(report: str) -> None:
    """Print a report; a reader that went away (`| head`) is not an internal error."""
    try:
        click.echo(report, nl=False)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would complain again when flushing stdout at exit; point it at nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="hetgitops")
def main() -> None:
    """Manage a heterogeneous GPU Kubernetes fleet from one declarative policy."""


def _formats() -> list[str]:
    from hetgitops.reporting import FORMATTERS

    return list(FORMATTERS)


def _formats_help() -> str:
    from hetgitops.reporting import DESCRIPTIONS

    width = max(map(len, DESCRIPTIONS)) + 2
    lines = [f"  {name:{width}}{summary}" for name, summary in DESCRIPTIONS.items()]
    return "\b\nFormats:\n" + "\n".join(lines)


@main.command(epilog=EXIT_CODES_HELP + "\n\n" + _formats_help())
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(_formats()),
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@click.option(
    "--now",
    callback=_parse_date,
    metavar="DATE",
    help="Today's date for expiry checks (YYYY-MM-DD); default: today.",
)
@click.option(
    "--crd-dir",
    "crd_dirs",
    multiple=True,
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Also check output against CRDs in DIR.",
)
def validate(
    paths: tuple[Path, ...],
    output_format: str,
    strict: bool,
    now: dt.date,
    crd_dirs: tuple[Path, ...],
) -> None:
    """Check policy files (default: policies/) and the manifests they compile to."""
    from hetgitops.reporting import FORMATTERS

    def run() -> int:
        result = api.validate(_paths(paths), api.Options(now=now, crd_dirs=crd_dirs))
        _echo_report(FORMATTERS[output_format](result))
        return EXIT_FINDINGS if result.failed(strict=strict) else EXIT_OK

    sys.exit(_guarded(run))


@main.command()
@click.argument("kind", required=False, type=click.Choice([*KINDS, "all"], case_sensitive=False))
def schema(kind: str | None) -> None:
    """Print the JSON Schema of a policy KIND (default: the dispatching policy schema)."""
    from hetgitops import schema as schemas

    raw = schemas.raw_schemas()
    body: Any
    if kind is None:
        body = raw["policy.schema.json"]
    elif kind.lower() == "all":
        body = raw
    else:
        canonical = next(k for k in KINDS if k.lower() == kind.lower())
        body = raw[schemas.schema_file(canonical)]
    click.echo(json.dumps(body, indent=2))


@main.command()
def rules() -> None:
    """List every rule id with its default severity and documentation."""
    from hetgitops.loading import LOAD_RULES
    from hetgitops.reporting.catalog import STAGE_RULES, known_rules

    for rule in known_rules(set(LOAD_RULES) | set(STAGE_RULES)):
        click.echo(f"{rule.id:32} {rule.severity.label:8} {rule.summary}")


def _target_choices() -> list[str]:
    from hetgitops.compilers import COMPILERS

    return sorted(COMPILERS)


@main.command(
    epilog="""\b
Exit codes:
  0  rendered (warnings go to stderr); with --check: DIR is up to date
  1  the policy has errors (nothing is emitted), the render would be empty,
     or with --check: DIR is stale (files listed on stderr)
  2  usage error (bad option or argument)
  3  internal error (a bug in hetgitops: please report it)

\b
stdout carries only the YAML stream (for Argo CD's generate); diagnostics go to stderr.
An empty render is refused: with pruning on, Argo CD would delete everything."""
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Write <target>/<kind>-<name>.yaml plus kustomization.yaml to DIR instead of "
    "stdout. DIR is replaced as a whole, atomically.",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    type=click.Choice(_target_choices()),
    help="Render only this target (repeatable); default: the Fleet's targets.",
)
@click.option(
    "--now",
    callback=_parse_date,
    metavar="DATE",
    help="Today's date for expiry checks (YYYY-MM-DD); default: today.",
)
@click.option(
    "--crd-dir",
    "crd_dirs",
    multiple=True,
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Also check output against CRDs in DIR.",
)
@click.option(
    "--check",
    is_flag=True,
    help="With --output: write nothing, exit 1 if DIR differs from the render (for CI/Flux).",
)
def render(
    paths: tuple[Path, ...],
    output: Path | None,
    targets: tuple[str, ...],
    now: dt.date,
    crd_dirs: tuple[Path, ...],
    check: bool,
) -> None:
    """Compile policy files (default: policies/) to Kubernetes manifests."""
    if check and output is None:
        raise click.UsageError("--check compares with an output tree: give --output DIR")

    def run() -> int:
        options = api.Options(now=now, targets=targets or None, crd_dirs=crd_dirs)
        result = api.render(_paths(paths), options)
        return _emit_render(result, output, check=check)

    sys.exit(_guarded(run))


def _emit_render(result: api.Result, output: Path | None, *, check: bool) -> int:
    from hetgitops.manifests import compare_tree, stream, tree, write_tree
    from hetgitops.reporting import FORMATTERS

    if result.diagnostics:
        click.echo(FORMATTERS["text"](result), nl=False, err=True)
    if result.failed():
        click.echo("hetgitops: the policy has errors; nothing was rendered", err=True)
        return EXIT_FINDINGS
    if not any(m.applied for m in result.manifests):
        click.echo(
            "hetgitops: refusing to emit an empty render (a GitOps controller that prunes "
            "would delete every object); check the Fleet's targets",
            err=True,
        )
        return EXIT_FINDINGS
    if output is None:
        click.echo(stream(result.manifests), nl=False)
        return EXIT_OK
    files = tree(result.manifests)
    if not check:
        write_tree(files, output)
        return EXIT_OK
    return _report_tree_diff(compare_tree(files, output), output)


def _report_tree_diff(diff: TreeDiff, output: Path) -> int:
    for label, paths in (("stale", diff.stale), ("missing", diff.missing), ("extra", diff.extra)):
        for path in paths:
            click.echo(f"{output / path}: {label}", err=True)
    if diff:
        click.echo(f"hetgitops: {output} is out of date; run hetgitops render --output", err=True)
        return EXIT_FINDINGS
    return EXIT_OK


@main.command(
    epilog="""\b
Exit codes:
  0  rendered (warnings go to stderr)
  1  the policy or a template has errors (nothing is emitted), or no job template
     is eligible for the chosen profiles and teams
  2  usage error (bad option or argument, unknown --profile or --team)
  3  internal error (a bug in hetgitops: please report it)

\b
Job templates are examples for teams to submit: they are never part of `render`'s tree.
stdout carries only the YAML stream; diagnostics go to stderr."""
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Write <profile>/<team>-<card>.yaml to DIR instead of stdout. DIR is replaced as a "
    "whole, atomically.",
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
    "--now",
    callback=_parse_date,
    metavar="DATE",
    help="Today's date for expiry checks (YYYY-MM-DD); default: today.",
)
@click.option(
    "--crd-dir",
    "crd_dirs",
    multiple=True,
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Also check the jobs against CRDs in DIR (JobSet, PyTorchJob, Volcano, LWS).",
)
def jobs(
    paths: tuple[Path, ...],
    output: Path | None,
    profiles: tuple[str, ...],
    teams: tuple[str, ...],
    templates: Path | None,
    now: dt.date,
    crd_dirs: tuple[Path, ...],
) -> None:
    """Render a job template per eligible (team, workload profile, card type)."""

    def run() -> int:
        options = api.Options(now=now, crd_dirs=crd_dirs)
        try:
            result = api.jobs(
                _paths(paths), options, profiles=profiles, teams=teams, templates=templates
            )
        except api.SelectionError as exc:
            raise click.UsageError(str(exc)) from None
        return _emit_jobs(result, output)

    sys.exit(_guarded(run))


def _emit_jobs(result: api.Result, output: Path | None) -> int:
    from hetgitops.compilers.jobs import stream, tree
    from hetgitops.manifests import write_tree
    from hetgitops.reporting import FORMATTERS

    if result.diagnostics:
        click.echo(FORMATTERS["text"](result), nl=False, err=True)
    if result.failed():
        click.echo("hetgitops: there are errors; no job template was rendered", err=True)
        return EXIT_FINDINGS
    if not result.manifests:
        click.echo(
            "hetgitops: no job templates: no chosen team holds quota on a card type that a "
            "chosen profile can run on",
            err=True,
        )
        return EXIT_FINDINGS
    if output is None:
        _echo_report(stream(result.manifests))
    else:
        write_tree(tree(result.manifests), output)
    return EXIT_OK
