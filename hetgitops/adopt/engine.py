"""Adopt stage: objects -> policy files -> render -> round-trip findings, in one call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hetgitops import api
from hetgitops.adopt import roundtrip
from hetgitops.adopt.infer import infer
from hetgitops.adopt.sources import Read
from hetgitops.adopt.write import policy_files
from hetgitops.diagnostics import Diagnostic
from hetgitops.load.resources import data_dir


@dataclass
class ImportResult:
    files: dict[str, str]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    rendered: api.Result | None = None
    requests: int = 0


def catalogue() -> dict[str, Mapping[str, Any]]:
    """The bundled card types (the CardType documents of the example fleet)."""
    found: dict[str, Mapping[str, Any]] = {}
    for path in sorted(data_dir("policies").glob("cards/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text("utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "CardType":
                found[str(doc["metadata"]["name"])] = doc
    return found


def bundled_versions() -> dict[str, str]:
    text = (data_dir("policies") / "fleet.yaml").read_text("utf-8")
    fleet = next(d for d in yaml.safe_load_all(text) if d and d.get("kind") == "Fleet")
    return {str(k): str(v) for k, v in fleet["spec"]["versions"].items()}


def import_objects(read: Read, output: Path, *, cluster: str) -> ImportResult:
    """The policy files for `read`'s objects (named under `output`, not yet written) and the
    findings: what could not be read, what is not translated, and the round trip's."""
    inferred = infer(read.objects, catalogue(), cluster=cluster, versions=bundled_versions())
    files = policy_files(inferred)
    result = ImportResult(files, [*read.diagnostics, *inferred.diagnostics], requests=read.requests)
    sources = [(str(output / name), text.encode()) for name, text in files.items()]
    rendered = api.validate_sources(sources, api.Options(check_output=False))
    result.rendered = rendered
    result.diagnostics.extend(rendered.diagnostics)
    if not rendered.failed():
        result.diagnostics.extend(roundtrip.check(read.objects, rendered.manifests))
    return result
