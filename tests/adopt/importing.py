"""What every import test does: read a cluster's objects (text or files), import them, and
look at the policy files, the findings and the render of the written policy. One helper, so
the tests of each source (Kueue, Volcano, GPU Operator, language fields) read the same way."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hetgitops import api
from hetgitops.adopt import sources
from hetgitops.adopt.run import ImportResult, import_objects
from hetgitops.diagnostics import Severity

HERE = Path(__file__).parent


@dataclass
class Imported:
    files: dict[str, str]  # the written policy, by file name
    found: list[str]  # every finding as "rule: message"
    rendered: api.Result  # the written policy, validated and rendered in process
    result: ImportResult


def imported_objects(text: str, *, source: str = "cluster.yaml") -> list[sources.Imported]:
    read = sources.Read()
    sources.from_text(source, text, read)
    return read.objects


def import_text(text: str, out: Path, *, source: str = "cluster.yaml") -> Imported:
    """Import the objects of one YAML or JSON text into a policy named under `out`."""
    read = sources.Read()
    sources.from_text(source, text, read)
    return _done(import_objects(read, out, cluster="lab"))


def import_paths(paths: list[Path], out: Path) -> Imported:
    """Import the objects of files or folders (as `hetgitops import -f`)."""
    return _done(import_objects(sources.from_paths(paths), out, cluster="lab"))


def _done(result: ImportResult) -> Imported:
    assert result.rendered is not None
    # Findings, not the notes for the reviewer (what the first sync creates: see
    # test_import_creates.py); `result` keeps every diagnostic.
    found = [f"{d.rule}: {d.message}" for d in result.diagnostics if d.severity > Severity.INFO]
    return Imported(result.files, found, result.rendered, result)


def rendered_object(result: api.Result, kind: str, name: str) -> dict:  # type: ignore[type-arg]
    return next(
        m.obj
        for m in result.manifests
        if m.obj["kind"] == kind and m.obj["metadata"]["name"] == name
    )
