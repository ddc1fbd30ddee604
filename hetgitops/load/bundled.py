"""Load stage, the bundled fleet's component versions (policies/fleet.yaml `spec.versions`): the
versions hetgitops is tested against, which `import` writes into an adopted fleet and `init`
into a new one. Read once per process through the one YAML reader (`yamlread`): an import sweep
asks for them once per cluster, and re-parsing the file each time was a third of its CPU."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

from hetgitops.load.resources import data_dir
from hetgitops.load.yamlbuild import Parsed
from hetgitops.load.yamlread import read_documents


@functools.cache
def bundled_versions() -> Mapping[str, str]:
    """Component -> version of the bundled Fleet (read-only: one copy per process)."""
    path = data_dir("policies") / "fleet.yaml"
    for item in read_documents(str(path), path.read_text("utf-8")):
        if not isinstance(item, Parsed):
            # The package's own file: a problem here is a broken install or a bug (exit 3).
            raise RuntimeError(f"{path}: {item.message}")
        doc = item.data
        if isinstance(doc, dict) and doc.get("kind") == "Fleet":
            versions = doc["spec"]["versions"]
            return MappingProxyType({str(k): str(v) for k, v in versions.items()})
    raise RuntimeError(f"{path}: no Fleet document")
