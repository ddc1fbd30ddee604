"""Adopt stage: objects -> policy files -> render -> round-trip findings, in one call."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hetgitops import api
from hetgitops.adopt import namespaces, roundtrip
from hetgitops.adopt.creates import first_sync_creates
from hetgitops.adopt.infer import infer
from hetgitops.adopt.quota_caps import keep_caps
from hetgitops.adopt.sources import Read
from hetgitops.adopt.write import policy_files
from hetgitops.diagnostics import Diagnostic
from hetgitops.load.bundled import bundled_versions
from hetgitops.model.catalogue import card_types

# What infer says of an object it leaves out: the round trip does not say it again.
_NAMED = ("import-object-not-adopted", "import-kind-not-imported")


@dataclass
class ImportResult:
    files: dict[str, str]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    rendered: api.Result | None = None
    requests: int = 0


def _rendered(files: dict[str, str], output: Path) -> api.Result:
    sources = [(str(output / name), text.encode()) for name, text in files.items()]
    return api.validate_sources(sources, api.Options(check_output=False))


def import_objects(read: Read, output: Path, *, cluster: str) -> ImportResult:
    """The policy files for `read`'s objects (named under `output`, not yet written) and the
    findings: what could not be read, what is not translated, and the round trip's. Nothing
    read is an error and no files: an empty policy is never a successful import."""
    nothing = read.nothing_read()
    if nothing is not None:
        found = [*read.diagnostics, nothing]
        return ImportResult({}, found, api.Result(diagnostics=list(found)), read.requests)
    inferred = infer(read.objects, card_types(), cluster=cluster, versions=dict(bundled_versions()))
    files = policy_files(inferred)
    result = ImportResult(files, [*read.diagnostics, *inferred.diagnostics], requests=read.requests)
    rendered = _rendered(files, output)
    if rendered.policy is not None and keep_caps(inferred, rendered.policy):
        files = result.files = policy_files(inferred)  # the reach is known now: render again
        rendered = _rendered(files, output)
    result.rendered = rendered
    result.diagnostics.extend(rendered.diagnostics)
    if not rendered.failed():
        reported = {d.span for d in inferred.diagnostics if d.rule in _NAMED}
        blind = roundtrip.without_nodes(read.objects)
        cause = None if blind is None else blind.cause
        result.diagnostics.extend(
            d.because(cause)
            for d in roundtrip.check(read.objects, rendered.manifests, reported=reported)
        )
        result.diagnostics.extend(namespaces.unrendered_labels(read.objects, rendered.manifests))
        result.diagnostics.extend(first_sync_creates(read.objects, rendered.manifests))
        if blind is not None:
            result.diagnostics.append(blind)
    return result
