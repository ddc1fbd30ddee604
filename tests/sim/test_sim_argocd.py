"""The real Argo CD (application-controller, repo-server and the hetgitops CMP sidecar;
tests/harness/simcluster/argocd.py) against hetgitops' Argo CD integration and against the Argo CD
model the rest of the sim suite (and `.ci/run`) syncs with.

The differential: for each change, what the model decides (`gitops.argocd_plan`: pruned,
prune skipped for Prune=false, replaced for Force/Replace) equals what the real Argo CD's sync
result says it did, and the cluster ends in the same state. The `argocd` component is built on
first use like the others (about 9 CPU-minutes cold, docs/simcluster.md "Argo CD"), and
`.ci/run` builds it with them; these tests skip, saying why, only where it cannot be built or
redis-server is missing, and fail instead under HETGITOPS_REQUIRE_ARGOCD=1 (set by `.ci/run`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from harness.simcluster import argocd, cluster, gitops, policyfleet

from .checks import converged, get
from .conftest import NOW, POLICIES, render
from .test_sim_day2 import change_tier_value, remove_team

pytestmark = pytest.mark.sim
REQUIRE_ARGOCD = "HETGITOPS_REQUIRE_ARGOCD"


@pytest.fixture(scope="module", autouse=True)
def argocd_available() -> None:
    problems = argocd.missing_prerequisites()
    if not problems:
        return
    reason = "; ".join(problems)
    if os.environ.get(REQUIRE_ARGOCD) == "1":
        pytest.fail(f"the real Argo CD is required ({REQUIRE_ARGOCD}=1) but: {reason}")
    pytest.skip(f"the real Argo CD is unavailable: {reason}")


def _live(sim: cluster.SimCluster, tree: Path) -> set[str]:
    """Subjects of `tree` that exist on the cluster now."""
    return {
        gitops.subject(o) for o in gitops.documents(tree) if gitops._existing(sim, gitops._scope(o))
    }


def _back(sim: cluster.SimCluster, synced: Path, after: Path) -> None:
    """Back to the bundled render with the real Argo CD itself: a model sync in between would
    drop Argo CD's tracking annotation (same field manager), and the next real sync would find
    every object out of sync (and with ApplyOutOfSyncOnly replace every PriorityClass)."""
    gitops.sync_argocd_real(sim, synced, after)
    converged(sim, policyfleet.load(POLICIES, now=NOW), synced)


def test_shipped_application_syncs_a_render_synced_and_healthy(
    sim: cluster.SimCluster, synced: Path
) -> None:
    """The render the model synced, synced again by the real Argo CD with the shipped
    Application's options: every object is in its sync result, nothing is pruned, and with
    ApplyOutOfSyncOnly nothing is replaced on a sync that changes nothing (the model agrees)."""
    result = gitops.sync_argocd_real(sim, synced)
    every = {gitops.subject(o) for o in gitops.documents(synced)}
    assert result.resources == dict.fromkeys(every, "Synced"), result.resources
    assert set(result.results) <= every and not result.pruned, result.results
    again = gitops.sync_argocd_real(sim, synced, synced)
    plan = gitops.argocd_plan(synced, synced, live=_live(sim, synced))
    assert (again.pruned, again.prune_skipped, again.replaced) == (
        plan.pruned,
        plan.prune_skipped,
        plan.replaced,
    ), again.results
    converged(sim, policyfleet.load(POLICIES, now=NOW), synced)


def test_removed_team_prune_and_prune_false_as_the_model(
    sim: cluster.SimCluster, synced: Path, tmp_path: Path
) -> None:
    """Removing a team: the real Argo CD prunes its ClusterQueue and LocalQueue and skips its
    Namespace (Prune=false, read from the live object), exactly what the model decides."""
    policy = tmp_path / "policy"
    shutil.copytree(POLICIES, policy)
    remove_team(policy)
    after = render(policy, tmp_path / "after")
    try:
        result = gitops.sync_argocd_real(sim, after, synced)
        plan = gitops.argocd_plan(after, synced)
        assert "Namespace/ft-vision" in result.prune_skipped, result.results
        assert "ClusterQueue/finetune-vision" in result.pruned, result.results
        assert (result.pruned, result.prune_skipped) == (plan.pruned, plan.prune_skipped)
        namespace = get(sim, "namespace", "ft-vision")
        assert namespace["status"]["phase"] == "Active"
        assert "deletionTimestamp" not in namespace["metadata"]
    finally:
        _back(sim, synced, after)


def test_tier_value_change_replaces_the_priority_class_as_the_model(
    sim: cluster.SimCluster, synced: Path, tmp_path: Path
) -> None:
    """A PriorityClass's value is immutable: Force=true,Replace=true makes the real Argo CD
    delete and recreate it, only that one (ApplyOutOfSyncOnly), as the model does. Only with
    the shipped Application's `compare-options: ServerSideDiff=false`: without it (server-side
    diff, implied by ServerSideApply=true) the dry-run of the changed PriorityClass fails the
    whole comparison, and Argo CD re-applies everything and recreates all three."""
    policy = tmp_path / "policy"
    shutil.copytree(POLICIES, policy)
    change_tier_value(policy)
    after = render(policy, tmp_path / "after")
    try:
        before = get(sim, "priorityclass", "training")["metadata"]["uid"]
        result = gitops.sync_argocd_real(sim, after, synced)
        plan = gitops.argocd_plan(after, synced, live=_live(sim, synced))
        assert result.replaced == plan.replaced == ["PriorityClass/training"], result.results
        recreated = get(sim, "priorityclass", "training")
        assert recreated["value"] == 20000
        assert recreated["metadata"]["uid"] != before
    finally:
        _back(sim, synced, after)


def test_cmp_sidecar_renders_the_policy_from_the_checkout(
    sim: cluster.SimCluster, synced: Path
) -> None:
    """The shipped plugin.yaml in the cmp-server: the Application's source is the policy
    folder, the sidecar runs `hetgitops render` in the checkout, and Argo CD syncs what it
    printed: the same objects as the committed render."""
    result = gitops.sync_argocd_real(sim, synced, synced, policy=POLICIES)
    every = {gitops.subject(o) for o in gitops.documents(synced)}
    # Rendered by the sidecar from the policy: the same objects, so all already in sync.
    assert result.resources == dict.fromkeys(every, "Synced"), result.resources
    assert not result.pruned and not result.replaced, result.results
