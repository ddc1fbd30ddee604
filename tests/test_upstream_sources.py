"""The upstream test data (tests/harness/upstream) comes from the pinned Go modules and nothing
else.

A clone with nothing beside it must run every upstream, e2e and sim test: no test may read
../shared (or HETGITOPS_SHARED) for its data. ../shared/upstream, where present, is only a
read-only cross-check of what the modules give.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import upstream
from harness.upstream.sources import SIM_GO, Pin, sources

from hetgitops.conformance import k8s_schemas

pytestmark = pytest.mark.upstream

REPO = Path(__file__).resolve().parents[1]
# Versions ../shared/upstream/*/SOURCES.md records that the pins share (byte-identical files);
# the others differ by version: Volcano v1.15.1 there, v1.14.1 in the sim; LeaderWorkerSet
# v0.10.0 / v0.9.0; PyTorchJob v1.9.4 / v1.9.3; TrainJob v2.3.0 / v2.2.1; GPU Operator
# v26.7.0 / the 2025-09-17 pseudo-version.
SAME_VERSION_AS_SHARED = ("kueue", "nfd", "jobset")
# Projects the pins fetch that ../shared/upstream was assembled without (KubeRay: issue 35).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRDs are megabytes of YAML


def test_no_test_reads_the_shared_folder() -> None:
    """Every reader of upstream data goes through tests/harness/upstream (this file
    cross-checks)."""
    pattern = re.compile(r"HETGITOPS_SHARED|parent / \"shared\"|\"shared\" / \"upstream\"")
    readers = [
        path.relative_to(REPO).as_posix()
        for folder in ("tests", "scripts", "bench")
        for path in sorted((REPO / folder).rglob("*"))
        if path.is_file()
        and (path.suffix == ".py" or path.parent.name == "scripts")
        and path.name != Path(__file__).name
        and "cases" not in path.parts
        and pattern.search(path.read_text(errors="replace"))
    ]
    assert readers == []


def test_every_file_comes_from_its_pinned_module() -> None:
    root = upstream.for_test()
    provenance = json.loads((root / "SOURCES.json").read_text())
    pins = {(s.pin.module, s.pin.version, s.pin.sum) for s in sources()}
    listed = {entry["file"] for entry in provenance}
    assert {(e["module"], e["version"], e["moduleSum"]) for e in provenance} == pins
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*.y*ml")}
    assert on_disk == listed
    for entry in provenance:
        origin = upstream.module_dir(Pin(entry["module"], entry["version"], entry["moduleSum"], ""))
        assert (root / entry["file"]).read_bytes() == (origin / entry["path"]).read_bytes()


def test_sim_components_and_crds_share_their_versions() -> None:
    """Kueue, Volcano and NFD CRDs are those of the binaries the sim builds."""
    by_project = {s.project: s.pin for s in sources()}
    for project, component, module in (
        ("kueue", "kueue", "sigs.k8s.io/kueue"),
        ("volcano", "volcano", "volcano.sh/volcano"),
        ("nfd", "nfd", "sigs.k8s.io/node-feature-discovery"),
    ):
        go_mod = (SIM_GO / component / "go.mod").read_text()
        assert f"\t{module} {by_project[project].version} " in go_mod


@pytest.mark.parametrize("project", ["kueue", "volcano", "nfd", "lws"])
def test_upstream_examples_validate_against_upstream_crds(project: str) -> None:
    """Upstream's own examples pass the CRD -> JSON Schema conversion `--crd-dir` uses.

    The GPU Operator's sample is left out: it relies on the API server applying CRD defaults
    (`spec.operator.defaultRuntime`) and dropping nulls (`validator.plugin:` with only a
    comment) before validation, which k8s_schemas does not do (hetgitops renders no
    ClusterPolicy, so its output never meets this)."""
    root = upstream.for_test()
    validators = _validators(root)
    checked = 0
    for example in sorted((root / project / "examples").iterdir()):
        for doc in yaml.safe_load_all(example.read_text()):
            found = validators.get((str(doc.get("apiVersion")), str(doc.get("kind"))))
            assert found is not None, f"{example.name}: no CRD for {doc.get('kind')}"
            assert list(k8s_schemas.problems(found[0], doc)) == [], example.name
            checked += 1
    assert checked > 0


@functools.cache
def _validators(root: Path) -> dict[tuple[str, str], Any]:
    validators, unreadable = k8s_schemas.crd_validators(tuple(sorted(root.glob("*/crds"))))
    assert unreadable == ()
    return dict(validators)


def _shared_upstream() -> Path:
    """../shared/upstream (or $HETGITOPS_SHARED/upstream): optional, read-only."""
    shared = Path(os.environ.get("HETGITOPS_SHARED", REPO.parent / "shared")) / "upstream"
    if not shared.is_dir():
        pytest.skip(f"no {shared} on this machine to cross-check against (optional)")
    return shared


def _identities(path: Path) -> set[tuple[str, str, tuple[str, ...]]]:
    return {
        (
            crd["spec"]["group"],
            crd["spec"]["names"]["kind"],
            tuple(v["name"] for v in crd["spec"]["versions"] if v.get("served")),
        )
        for crd in yaml.load_all(path.read_text(), Loader=_LOADER)
        if crd and crd.get("kind") == "CustomResourceDefinition"
    }


def test_cross_check_with_the_shared_copy() -> None:
    """Same file names and CRD identities (group, kind, served versions) as ../shared; the
    projects pinned at the same version byte for byte."""
    shared = _shared_upstream()
    root = upstream.for_test()
    for crd in sorted(root.glob("*/crds/*.yaml")):
        relative = crd.relative_to(root)
        if not (shared / relative.parts[0]).is_dir():
            continue  # a project the shared copy never held (Koordinator, KubeRay)
        copy = shared / relative
        assert copy.is_file(), f"{relative} is not in {shared}"
        assert _identities(crd) == _identities(copy), relative
        if relative.parts[0] in SAME_VERSION_AS_SHARED:
            assert crd.read_bytes() == copy.read_bytes(), relative
    theirs = {p.relative_to(shared) for p in shared.glob("*/crds/*.yaml")}
    assert theirs - {p.relative_to(root) for p in root.glob("*/crds/*.yaml")} == set()
