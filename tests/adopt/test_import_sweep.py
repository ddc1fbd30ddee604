"""The import sweep (issue 32 item 6, offline half): hundreds of hand-written clusters from
tests/generated/clustergen.py, each imported. Every object of a kind import manages either
comes back from the written policy's render as the cluster has it, or a located finding names
it; every construct the policy language cannot say is named; nothing crashes, nothing is
changed or dropped in silence. The full sweep is `slow`; a seeded slice runs in the quick loop."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from hetgitops.adopt import roundtrip
from hetgitops.adopt.sources import Imported as Object
from hetgitops.cli.main import main
from hetgitops.model import quantities
from tests.adopt.importing import Imported, import_text, imported_objects
from tests.generated.clustergen import QUEUE_CONSTRUCTS, cluster

FULL = range(240)
SLICE = range(1000, 1010)
# Outcome of one input object: "kept" (rendered as the cluster has it), "named" (a located
# finding names it: a change the first sync makes, or an object left unmanaged).
MANAGED = {*roundtrip.COMPARED, "Namespace"}
# Sayable constructs that live in a team's namespaces: a team the written policy leaves out
# (MIG-only, its config missing from the dump) takes them along, named at the team.
TEAM_BOUND = {"resource-quota", "namespace-selector-labels"}


def _where(item: Object) -> str:
    return f"{item.kind} {item.namespace + '/' if item.namespace else ''}{item.name}"


def _named(got: Imported, where: str) -> list[str]:
    return [
        f"{d.rule} at {d.span.file}:{d.span.line}"
        for d in got.result.diagnostics
        if any(d.message.startswith(where + c) or f" {where}{c}" in d.message for c in ": ")
    ]


def _rendered(got: Imported) -> dict[tuple[str, str, str], dict]:  # type: ignore[type-arg]
    out = {}
    for m in got.rendered.manifests:
        meta = m.obj.get("metadata") or {}
        out[(str(m.obj.get("kind")), meta.get("namespace", ""), meta.get("name", ""))] = m.obj
    return out


def _lost(cluster: object, render: object, path: str) -> Iterator[str]:
    """The paths of every value the cluster sets that the render does not say alike: a check
    of its own beside the round trip's (which fills in defaults), so that a default filled in
    wrongly cannot hide a change. Lists of named items match by name; quantities by value;
    ConfigMap values by the YAML they hold."""
    if isinstance(cluster, str) and isinstance(render, str) and cluster != render:
        if "\n" in cluster:
            cluster, render = yaml.safe_load(cluster), yaml.safe_load(render)
        else:
            try:
                if quantities.value_of(cluster) == quantities.value_of(render):
                    return
            except ValueError:
                pass
    if cluster in ({}, []) and render is None:
        return  # empty is absent to the API server (the render writes no empty Cohort spec)
    if isinstance(cluster, dict):
        if not isinstance(render, dict):
            yield path
            return
        for k, v in cluster.items():
            yield from _lost(v, render.get(k), f"{path}.{k}")
    elif isinstance(cluster, list):
        if not isinstance(render, list) or len(render) < len(cluster):
            yield path
            return
        named = all(isinstance(c, dict) and "name" in c for c in cluster + render)
        by_name = {r["name"]: r for r in render} if named else {}
        for i, c in enumerate(cluster):
            yield from _lost(c, by_name.get(c["name"]) if named else render[i], f"{path}[{i}]")
    elif cluster != render and not (isinstance(cluster, int) and str(cluster) == render):
        yield path


def outcomes(seed: int, tmp: Path) -> Iterator[tuple[str, str, str]]:
    """(object, outcome, why) for every managed object of the cluster of `seed`."""
    generated = cluster(seed)
    text = generated.text()
    got = import_text(text, tmp / f"p{seed}")
    rules = {d.rule for d in got.result.diagnostics}
    # A dump without the GPU Operator's ConfigMaps: a pool's replicas are unknown, so its quota
    # may exceed what the written pool offers. Refused out loud, with the cause named.
    refused = got.rendered.failed() and "import-config-missing" in rules
    assert refused or not got.rendered.failed(), [str(d) for d in got.rendered.diagnostics]
    for d in got.result.diagnostics:  # every finding located where a reader acts
        assert d.span.file and d.span.line > 0, d
    for construct, objects in generated.unsayable.items():  # what the language cannot say
        for where in objects:  # a refused policy has no round trip: only its cause is named
            if (not refused or construct == "dump-without-gpu-configs") and not _named(got, where):
                yield where, "SILENT", f"{construct} not named"
    if refused:  # nothing to sync: the round trip did not run
        yield "the written policy", "refused", "import-config-missing"
        return
    rendered = _rendered(got)
    kept_wanted = {where: c for c, objects in generated.sayable.items() for where in objects}
    if "dump-without-gpu-configs" in generated.constructs:  # a MIG-only team is left out, named
        kept_wanted = {w: c for w, c in kept_wanted.items() if c not in TEAM_BOUND}
    for item in imported_objects(text):
        if item.kind not in MANAGED or item.name in ("root", "default"):
            continue
        where = _where(item)
        named = _named(got, where)
        if where in kept_wanted:  # a note that its team gets a namespace changes nothing
            named = [n for n in named if not n.startswith("import-team-without-namespace")]
            if _team_absent(got, where):  # no team of the written policy can hold it
                kept_wanted.pop(where)
        if named:
            yield where, "named", named[0]
            continue
        found = rendered.get((item.kind, item.namespace, item.name))
        if item.kind == "Namespace":  # only a team's is the policy's: its labels kept or named
            labels = (item.obj["metadata"].get("labels") or {}).items()
            if found is None:
                yield where, "outside", "no team's namespace"
                continue
            kept = labels <= (found["metadata"].get("labels") or {}).items()
            yield where, "kept" if kept else "SILENT", "labels" if labels else "no labels"
            if kept:
                kept_wanted.pop(where, None)
            continue
        if found is None:
            yield where, "SILENT", "not rendered and no finding names it"
            continue
        same = not list(
            roundtrip.check([item], [m for m in got.rendered.manifests if m.obj is found])
        )
        lost = [p for f in roundtrip.COMPARED[item.kind] if f in item.obj
                for p in _lost(item.obj[f], found.get(f), f)]  # fmt: skip
        outcome = "kept" if same and not lost else "SILENT"
        yield where, outcome, ", ".join(lost)
        if outcome == "kept":
            kept_wanted.pop(where, None)
    for where, construct in kept_wanted.items():  # a sayable construct must be kept
        yield where, "SILENT", f"{construct} not kept"


def _team_absent(got: Imported, where: str) -> bool:
    """A sayable object left out because its team is not in the written policy (its
    ClusterQueue's team was dropped, and a finding at the object says there is none)."""
    return any(
        d.message.startswith(where + ":") and "no team of its name" in d.message
        for d in got.result.diagnostics
    )


def _check(seed: int, tmp: Path) -> None:
    silent = [o for o in outcomes(seed, tmp) if o[1] == "SILENT"]
    assert not silent, f"seed {seed}: {silent}"


@pytest.mark.parametrize("seed", SLICE)
def test_a_seeded_slice_of_hand_written_clusters_imports_without_silent_change(
    seed: int, tmp_path: Path
) -> None:
    _check(seed, tmp_path)


# The first seeds whose ClusterQueues say GPU-only limits, per-pool cpu, the fleet's covered
# resources or limits on every resource (issue 32 item 5).
SAYABLE = {
    construct: [s for s in range(120) if construct in cluster(s).sayable][:2]
    for construct in QUEUE_CONSTRUCTS
}


@pytest.mark.parametrize("seed", sorted({s for seeds in SAYABLE.values() for s in seeds}))
def test_queue_constructs_the_language_says_come_back_as_the_cluster_has_them(
    seed: int, tmp_path: Path
) -> None:
    assert all(SAYABLE.values()), SAYABLE
    _check(seed, tmp_path)


@pytest.mark.slow
def test_every_generated_cluster_imports_without_silent_change(tmp_path: Path) -> None:
    failures = []
    for seed in FULL:
        try:
            _check(seed, tmp_path)
        except AssertionError as problem:
            failures.append(str(problem)[:400])
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("seed", SLICE[:3])
def test_the_cli_imports_a_generated_dump_without_crashing(seed: int, tmp_path: Path) -> None:
    """`hetgitops import -f DUMP -o OUT`, as a user runs it: findings (exit 0 or 1), a policy
    written, never an internal error (exit 3)."""
    dump = tmp_path / "dump.yaml"
    dump.write_text(cluster(seed).text())
    run = CliRunner().invoke(main, ["import", "-f", str(dump), "-o", str(tmp_path / "out")])
    assert run.exit_code in (0, 1), run.output
    assert "error(s)" in run.output.splitlines()[-1]
    assert (tmp_path / "out" / "teams.yaml").is_file()


def test_a_seed_gives_the_same_dump_in_any_process() -> None:
    """Reproducible from its seed alone: no global random state, no hash order."""
    here = cluster(SLICE[0]).text()
    command = [sys.executable, "-m", "tests.generated.clustergen", str(SLICE[0])]
    env = {**os.environ, "PYTHONHASHSEED": "1"}
    other = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    assert other.stdout == here == cluster(SLICE[0]).text()
