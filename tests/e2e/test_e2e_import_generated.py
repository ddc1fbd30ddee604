"""E2E, issue 32 item 6: hand-written-style clusters (tests/generated/clustergen.py) created on
the real API server and imported live (GETs only). For every object of a kind import manages,
the written policy's render, server-side dry-run applied as field manager hetgitops, either
changes nothing or a finding located at a file and line names the object; an object the
render leaves out is named too. A policy refused for a missing GPU Operator config is the one
located refusal (`import-config-missing`). (The live objects carry what the API server
defaults, e.g. a ClusterQueue's flavorFungibility, which the generated dump leaves out: the
live import keeps them, so its policy may say more than the offline import of the dump.)

The CI runs a seeded slice; `HETGITOPS_IMPORT_LIVE=FIRST-LAST` runs seeds FIRST..LAST, and
`HETGITOPS_IMPORT_LIVE_REPORT=path` writes a line per object and the totals."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import live_import
import pytest
from harness.controlplane.harness import ControlPlane

from hetgitops.adopt import roundtrip, sources
from hetgitops.adopt.run import import_objects
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.live.client import Cluster
from tests.generated.clustergen import cluster as generated

pytestmark = pytest.mark.e2e

SLICE = "1000-1005"  # the seeds the offline sweep's quick slice reads too
MANAGED = {*roundtrip.COMPARED, "Namespace"}
SYSTEM = {"default", "kube-system", "kube-public", "kube-node-lease"}
_TOTALS: Counter[str] = Counter()
# What a finding says when it announces a change of the object on the first sync.
CHANGES = ("the first sync sets", "the first sync removes")


# Beside the slice (whose 1000 and 1005 cover the fleet's resources in every queue): the first
# seed with borrowing limits on every resource, zero entries included (issue 32 item 5).
EXTRA = (1013,)
# Queue constructs said since issue 32 item 5 whose objects must be KEPT live, not named.
COVERED = ("covered-resources-fleet", "borrowing-limit-all-resources")


def _seeds() -> list[int]:
    chosen = os.environ.get("HETGITOPS_IMPORT_LIVE")
    first, _, last = (chosen or SLICE).partition("-")
    seeds = list(range(int(first), int(last or first) + 1))
    return seeds if chosen else seeds + list(EXTRA)


def _report(line: str) -> None:
    path = os.environ.get("HETGITOPS_IMPORT_LIVE_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


@pytest.fixture(params=_seeds(), ids=lambda seed: f"seed{seed}")
def created(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[int]:
    """The cluster of one seed, created on the real API server; removed afterwards."""
    seed = int(request.param)
    with live_import.seeded(control_plane, seed) as (_, before):
        request.node.stray_namespaces = sorted(before - {f"namespace/{n}" for n in SYSTEM})
        yield seed


def _where(item: sources.Imported) -> str:
    return f"{item.kind} {item.namespace + '/' if item.namespace else ''}{item.name}"


def _named(found: list[Diagnostic], where: str) -> list[Diagnostic]:
    return [
        d for d in found
        if any(d.message.startswith(where + c) or f" {where}{c}" in d.message for c in ": ")
    ]  # fmt: skip


def _unchanged(cluster: Cluster, item: sources.Imported, rendered: dict[str, Any]) -> bool:
    """Whether the server-side dry run of the render leaves `item` as the cluster has it (a
    Namespace: every label it has stays)."""
    after = live_import.dry_run(cluster, rendered)
    if item.kind == "Namespace":
        labels = (item.obj["metadata"].get("labels") or {}).items()
        return labels <= (after["metadata"].get("labels") or {}).items()
    now, was = live_import.compared(item.kind, after, item.obj)
    return bool(now == was)


def test_a_generated_cluster_imported_live_dry_runs_with_no_unnamed_change(
    control_plane: ControlPlane, created: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    seed = created
    read = sources.from_cluster(control_plane.admin_kubeconfig, None)
    assert read.requests <= len(sources.RESOURCES) + 5
    result = import_objects(read, tmp_path / "live", cluster="lab")
    stray = request.node.stray_namespaces
    found = [d for d in result.diagnostics if d.severity > Severity.INFO]
    for d in found:  # at a policy line, or (live) at the object listed from the cluster
        located = d.span.line > 0 or d.span.file.startswith(sources.LIVE_PREFIX)
        assert d.span.file and located, f"seed {seed}: unlocated finding {d}"
        if d.rule == "import-config-missing":  # the cluster itself lacks it: no dump to fix
            assert "--kubeconfig" not in d.hint and "in the cluster" in d.message, d
    assert result.rendered is not None
    rules = {d.rule for d in found}
    if result.rendered.failed():
        # Only a dump without the GPU Operator's config may leave a policy that does not
        # validate, and then the finding names the node whose label points at it.
        assert "import-config-missing" in rules, [str(d) for d in result.rendered.diagnostics]
        _TOTALS["refused"] += 1
        _report(f"seed {seed}: refused, import-config-missing")
        return
    rendered = {
        (m.obj["kind"], m.obj["metadata"].get("namespace", ""), m.obj["metadata"]["name"]): m
        for m in result.rendered.manifests
        if m.applied
    }
    outcomes: Counter[str] = Counter()
    silent: list[str] = []
    said = generated(seed).sayable
    wanted = {where for c in COVERED for where in said.get(c, [])}
    not_kept: list[str] = []
    contradicted: list[str] = []
    cluster = Cluster(control_plane.admin_kubeconfig)
    try:
        for item in read.objects:
            if item.kind not in MANAGED or item.name in ("root", "default", *SYSTEM):
                continue
            if item.kind == "PriorityClass" and item.name.startswith("system-"):
                continue  # the API server's own (system-cluster-critical, ...), never a tier
            where = _where(item)
            if item.kind == "Namespace" and f"namespace/{item.name}" in stray:
                continue
            manifest = rendered.get((item.kind, item.namespace, item.name))
            named = _named(found, where)
            if manifest is None:
                outcome = "named" if named else "outside" if item.kind == "Namespace" else "SILENT"
            else:
                same = _unchanged(cluster, item, manifest.obj)
                # Named and yet unchanged by the dry run: a finding about something else than
                # this sync (a namespace created anew would lack its labels, ...): reported
                # apart, with its rules, so that a finding the server contradicts shows.
                if same and named:
                    outcome = "named, unchanged: " + ",".join(sorted({d.rule for d in named}))
                    claims = [d.message for d in named if any(c in d.message for c in CHANGES)]
                    if claims:  # a finding says the sync changes what the server keeps
                        contradicted.append(f"{where}: {claims}")
                else:
                    outcome = "kept" if same else "named" if named else "SILENT"
            outcomes[outcome] += 1
            _report(f"seed {seed}: {where}: {outcome}")
            if outcome == "SILENT":
                silent.append(where)
            if where in wanted and outcome != "kept":
                not_kept.append(f"{where}: {outcome}")
    finally:
        cluster.close()
    _TOTALS.update(outcomes)
    _TOTALS["clusters"] += 1
    _TOTALS["zero-change clusters"] += not any(o.startswith("named") for o in outcomes)
    _report(f"seed {seed}: {dict(outcomes)}; totals {dict(_TOTALS)}")
    assert outcomes["kept"], f"seed {seed}: no object kept: {dict(outcomes)}"
    assert not silent, f"seed {seed}: changed or dropped with no finding naming it: {silent}"
    assert not not_kept, f"seed {seed}: said by the language, yet not kept live: {not_kept}"
    assert not contradicted, (
        f"seed {seed}: the dry run keeps what a finding says changes: {contradicted}"
    )
