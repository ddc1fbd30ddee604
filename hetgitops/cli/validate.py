"""`hetgitops validate`, `schema` and `rules`: the policy checks and their documentation."""

from __future__ import annotations

import datetime as dt
import errno
import json
import sys
from pathlib import Path
from typing import Any

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
    emit,
    format_option,
    guarded,
    policy_paths,
)
from hetgitops.load.documents import KINDS


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


@click.command()
@click.argument("kind", required=False, type=click.Choice([*KINDS, "all"], case_sensitive=False))
def schema(kind: str | None) -> None:
    """Print the JSON Schema of a policy KIND (default: the dispatching policy schema)."""
    from hetgitops.model import schema as schemas

    raw = schemas.raw_schemas()
    body: Any
    if kind is None:
        body = raw["policy.schema.json"]
    elif kind.lower() == "all":
        body = raw
    else:
        body = schemas.kind_schema(next(k for k in KINDS if k.lower() == kind.lower()))
    sys.exit(guarded(lambda: _printed(json.dumps(body, indent=2) + "\n")))


@click.command()
@click.argument("rule", required=False)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: a list of rules (one object with RULE), each with id, severity, stage, "
    "summary, why, fails, passes and fix, for tooling.",
)
def rules(rule: str | None, output_format: str) -> None:
    """List every rule id with its default severity and summary; with RULE, print that rule's
    full documentation (severity, stage, why, example, how to fix)."""
    # diff and drift sit above reporting: importing them registers their ids too.
    from hetgitops.reporting.catalog import all_rules, as_json, full_text

    found = {info.id: info for info in all_rules()}
    if output_format == "json" and (rule is None or rule in found):
        body: Any = as_json(found[rule]) if rule else [as_json(i) for i in found.values()]
        sys.exit(guarded(lambda: _printed(json.dumps(body, indent=2) + "\n")))
    if rule is None:
        text = "".join(f"{i.id:32} {i.severity.label:8} {i.summary}\n" for i in found.values())
        sys.exit(guarded(lambda: _printed(text)))
    if rule not in found:
        import difflib

        close = difflib.get_close_matches(rule, list(found), n=5, cutoff=0.6)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise click.BadParameter(f"no rule {rule!r}.{hint} (`hetgitops rules` lists them)")
    sys.exit(guarded(lambda: _printed(full_text(found[rule]))))


def _printed(text: str) -> int:
    emit(text)
    return EXIT_OK
