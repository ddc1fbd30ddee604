"""`hetgitops schema`: the JSON Schema of a policy kind, for editors and tooling."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from hetgitops.cli.common import guarded, printed
from hetgitops.load.documents import KINDS


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
    sys.exit(guarded(lambda: printed(json.dumps(body, indent=2) + "\n")))
