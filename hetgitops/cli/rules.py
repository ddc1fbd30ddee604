"""`hetgitops rules`: every rule id with its severity and summary, or one rule's documentation."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from hetgitops.cli.common import guarded, printed


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
    # import (adopt), diff and drift sit above reporting, and only diff loads load.git_tree:
    # importing them registers their ids too.
    import hetgitops.adopt.findings
    import hetgitops.diff.hazards
    import hetgitops.drift.findings
    import hetgitops.load.git_tree  # noqa: F401
    from hetgitops.reporting.catalog import all_rules, as_json, full_text

    found = {info.id: info for info in all_rules()}
    if output_format == "json" and (rule is None or rule in found):
        body: Any = as_json(found[rule]) if rule else [as_json(i) for i in found.values()]
        sys.exit(guarded(lambda: printed(json.dumps(body, indent=2) + "\n")))
    if rule is None:
        text = "".join(f"{i.id:32} {i.severity.label:8} {i.summary}\n" for i in found.values())
        sys.exit(guarded(lambda: printed(text)))
    if rule not in found:
        import difflib

        close = difflib.get_close_matches(rule, list(found), n=5, cutoff=0.6)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise click.BadParameter(f"no rule {rule!r}.{hint} (`hetgitops rules` lists them)")
    sys.exit(guarded(lambda: printed(full_text(found[rule]))))
