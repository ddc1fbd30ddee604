"""The real Flux (source-controller and kustomize-controller, tests/harness/simcluster/flux.py)
against hetgitops' Flux integration: the shipped Kustomizations of `integrations/flux/` reconcile a
committed render in their `dependsOn` order, and Flux's garbage collection keeps what
hetgitops marks `kustomize.toolkit.fluxcd.io/prune: disabled` (a removed team's Namespace and
everything in it) while pruning the rest. The day-2 matrix (test_sim_day2.py) runs its Flux
cases through the same controllers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from harness.simcluster import cluster, flux, gitops, policyfleet

from .checks import converged, get
from .conftest import NOW, POLICIES, render, unavailable
from .test_sim_day2 import _restore, remove_team

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module", autouse=True)
def flux_available() -> None:
    problems = flux.missing_prerequisites()
    if problems:
        unavailable("; ".join(problems))


def _subject(obj: dict[str, object]) -> str:
    """How kustomize-controller names an object in its change sets (Kind/namespace/name)."""
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    parts = [obj["kind"], meta.get("namespace"), meta["name"]]
    return "/".join(str(p) for p in parts if p)


def test_shipped_stages_reconcile_a_render_in_dependency_order(
    sim: cluster.SimCluster, fleet_policy: object, bundled_tree: Path
) -> None:
    """From nothing: every object of the render is created by Flux, the kueue stage (its
    LocalQueues live in the core stage's Namespaces) only after core, and the fleet converges."""
    gitops.prune(sim, gitops.documents(bundled_tree))
    result = gitops.sync_flux(sim, bundled_tree)
    converged(sim, policyfleet.load(POLICIES, now=NOW), bundled_tree)
    every = {_subject(o) for o in gitops.documents(bundled_tree)}
    assert every <= set(result.created), sorted(every - set(result.created))
    assert result.applied.index("hetgitops-kueue") > result.applied.index("hetgitops-core")
    listed = get(sim, "kustomizations.kustomize.toolkit.fluxcd.io", "-n", flux.NAMESPACE)
    folders = {p.name for p in bundled_tree.iterdir() if (p / "kustomization.yaml").is_file()}
    ready = {k["metadata"]["name"]: k["status"].get("lastAppliedRevision") for k in listed["items"]}
    assert ready == {f"hetgitops-{folder}": result.revision for folder in folders}


def test_removed_team_keeps_its_namespace_and_loses_its_queues(
    sim: cluster.SimCluster, synced: Path, tmp_path: Path
) -> None:
    """Flux garbage-collects the removed team's ClusterQueue and LocalQueue but skips its
    Namespace (prune: disabled): the namespace and its workloads stay."""
    policy = tmp_path / "policy"
    shutil.copytree(POLICIES, policy)
    remove_team(policy)
    after = render(policy, tmp_path / "after")
    try:
        result = gitops.sync_flux(sim, after, synced)
        assert "Namespace/ft-vision" in result.skipped, result.actions
        assert "ClusterQueue/finetune-vision" in result.pruned, result.actions
        assert "LocalQueue/ft-vision/finetune-vision" in result.pruned, result.actions
        namespace = get(sim, "namespace", "ft-vision")
        assert namespace["status"]["phase"] == "Active"
        assert "deletionTimestamp" not in namespace["metadata"]
    finally:
        _restore(sim, synced, after, policyfleet.load(POLICIES, now=NOW))


def test_a_namespace_without_the_annotation_is_pruned(
    sim: cluster.SimCluster, synced: Path, tmp_path: Path
) -> None:
    """The control: the same garbage collection deletes a Namespace that lacks the annotation
    (so the test above shows the annotation at work, not a prune that never runs)."""
    probe = tmp_path / "probe"
    shutil.copytree(synced, probe)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-probe"}}
    (probe / "core" / "namespace-flux-probe.yaml").write_text(yaml.safe_dump(namespace))
    kustomization = yaml.safe_load((probe / "core" / "kustomization.yaml").read_text())
    kustomization["resources"].append("namespace-flux-probe.yaml")
    (probe / "core" / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    try:
        created = gitops.sync_flux(sim, probe, synced)
        assert "Namespace/flux-probe" in created.created, created.actions
        result = gitops.sync_flux(sim, synced, probe)
        assert "Namespace/flux-probe" in result.pruned, result.actions
        assert not result.skipped, result.actions
    finally:
        sim.kubectl("delete", "namespace", "flux-probe", "--ignore-not-found", "--wait=false")
