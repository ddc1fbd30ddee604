"""Thin CLI: options -> api call -> formatter -> exit code. No policy logic lives here."""

from __future__ import annotations

import datetime as dt
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from hetgitops import __version__, api
from hetgitops.loading import KINDS

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
    """Turn any unexpected exception into exit 3 with a one-line hint instead of a traceback."""
    try:
        return run()
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except Exception as exc:  # noqa: BLE001 - last line of defence, by design
        click.echo(f"hetgitops: internal error: {type(exc).__name__}: {exc}", err=True)
        click.echo("please report this at the hetgitops issue tracker, with the input that "
                   "caused it", err=True)
        if "HETGITOPS_DEBUG" in __import__("os").environ:
            traceback.print_exc()
        return EXIT_INTERNAL


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="hetgitops")
def main() -> None:
    """Manage a heterogeneous GPU Kubernetes fleet from one declarative policy."""


def _formats() -> list[str]:
    from hetgitops.reporting import FORMATTERS

    return list(FORMATTERS)


@main.command(epilog=EXIT_CODES_HELP + """

\b
Formats:
  text    file:line:col: severity[rule]: message (like a compiler)
  json    {"diagnostics": [...], "summary": {...}}
  github  ::error file=...,line=...,col=...:: workflow annotations
  sarif   SARIF 2.1.0 for code-scanning upload
  junit   JUnit XML, one test case per rule
  markdown  a table for pull-request comments""")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "output_format", type=click.Choice(_formats()), default="text",
              show_default=True, help="Report format.")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@click.option("--now", callback=_parse_date, metavar="DATE",
              help="Today's date for expiry checks (YYYY-MM-DD); default: today.")
@click.option("--crd-dir", "crd_dirs", multiple=True, type=click.Path(path_type=Path,
              exists=True, file_okay=False), help="Also check output against CRDs in DIR.")
def validate(paths: tuple[Path, ...], output_format: str, strict: bool, now: dt.date,
             crd_dirs: tuple[Path, ...]) -> None:
    """Check policy files (default: policies/) and the manifests they compile to."""
    from hetgitops.reporting import FORMATTERS

    def run() -> int:
        result = api.validate(_paths(paths), api.Options(now=now, crd_dirs=crd_dirs))
        click.echo(FORMATTERS[output_format](result), nl=False)
        return EXIT_FINDINGS if result.failed(strict=strict) else EXIT_OK

    sys.exit(_guarded(run))


@main.command()
@click.argument("kind", required=False, type=click.Choice([*KINDS, "all"],
                                                          case_sensitive=False))
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
    from hetgitops.checks import RULES

    for rule_id, registered in sorted(RULES.items()):
        summary = registered.doc.splitlines()[0] if registered.doc else ""
        click.echo(f"{rule_id:32} {registered.severity.label:8} {summary}")
