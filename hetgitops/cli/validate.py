"""`hetgitops validate`: the policy checks and the checks of what it compiles to, reported in
one of the reporting formats."""

from __future__ import annotations

import datetime as dt
import errno
import sys
from pathlib import Path

import click

from hetgitops import api
from hetgitops.cli.common import (
    EXISTING_PATHS_ARGUMENT,
    EXIT_CODES_HELP,
    EXIT_FINDINGS,
    EXIT_OK,
    NOW_OPTION,
    crd_dir_option,
    echo_report,
    format_option,
    guarded,
    policy_paths,
)


def _formats() -> list[str]:
    from hetgitops.reporting import FORMATTERS

    return list(FORMATTERS)


def _formats_help() -> str:
    from hetgitops.reporting import DESCRIPTIONS

    width = max(map(len, DESCRIPTIONS)) + 2
    lines = [f"  {name:{width}}{summary}" for name, summary in DESCRIPTIONS.items()]
    return "\b\nFormats:\n" + "\n".join(lines)


@click.command(epilog=EXIT_CODES_HELP + "\n\n" + _formats_help())
@EXISTING_PATHS_ARGUMENT
@format_option(_formats())
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@NOW_OPTION
@crd_dir_option("Also check output against CRDs in DIR.")
@click.option(
    "--changed-since",
    metavar="REF",
    help="Report a total (pool capacity, team budget) at a contributing line changed since "
    "the Git REF (a pull request's base), so annotations land in its diff.",
)
def validate(
    paths: tuple[Path, ...],
    output_format: str,
    strict: bool,
    now: dt.date,
    crd_dirs: tuple[Path, ...],
    changed_since: str | None,
) -> None:
    """Check policy files (default: policies/) and the manifests they compile to."""
    from hetgitops.reporting import FORMATTERS

    def run() -> int:
        policy = policy_paths(paths)
        changed = _changed_lines(changed_since, policy) if changed_since else None
        options = api.Options(now=now, crd_dirs=crd_dirs, changed=changed)
        result = api.validate(policy, options)
        echo_report(FORMATTERS[output_format](result))
        return EXIT_FINDINGS if result.failed(strict=strict) else EXIT_OK

    sys.exit(guarded(run))


def _changed_lines(ref: str, policy: list[Path]) -> dict[str, frozenset[int]]:
    from hetgitops.load import changed, git_source

    try:
        return changed.changed_lines(ref, policy)
    except git_source.GitEnvironmentError as exc:
        raise OSError(errno.ENOENT, str(exc)) from None  # guarded(): exit 4
    except git_source.SourceError as exc:
        raise click.UsageError(f"--changed-since: {exc}") from None
