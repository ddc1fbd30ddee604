"""Day-2 matrix on the simulated cluster: for each policy change, render before (the bundled
policy) and after, sync before, then sync after the way Argo CD and Flux would (pruning what
left the tree), and require the real API server, webhooks and controllers to converge: every
sync succeeds, every queue is Active, every node carries its new labels. Then the change is
reverted the same way (itself a day-2 change) so the next case starts from the bundled state.
"Converge" includes every ClusterQueue, LocalQueue and Volcano Queue spec being what the tree
says (tests/sim/checks.py spec_differences), not only Active / Open.

The other half of the matrix (REFUSED): changes that must never reach a cluster, each refused
by `validate` and `render` with its rule id at a policy position before any sync.

A case known to fail because of a hetgitops bug is marked xfail(strict) with its issue item, so
the mark must go when the fix lands.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.simcluster import cluster, gitops, policyfleet

from hetgitops import api
from hetgitops.diagnostics import Severity

from .checks import converged
from .conftest import NOW, POLICIES, render, run_output_command

pytestmark = pytest.mark.sim

Docs = list[dict[str, Any]]


def _edit(root: Path, relative: str, change: Callable[[Docs], Docs]) -> None:
    path = root / relative
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    path.write_text(yaml.safe_dump_all(change(docs), sort_keys=False))


def _named(docs: Docs, kind: str, name: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def _quota(docs: Docs, team: str, pool: str) -> dict[str, Any]:
    spec = _named(docs, "Team", team)["spec"]
    return next(q for q in spec["quotas"] if q["pool"] == pool)


def grow_quota(root: Path) -> None:
    """The bundled pools are fully claimed: a new A800 node arrives, then pretraining grows."""

    def grow_pool(docs: Docs) -> Docs:
        _named(docs, "Pool", "a800-train")["spec"]["nodes"][-1]["names"] = "gpu-a800-[013:017]"
        return docs

    def change(docs: Docs) -> Docs:
        _quota(docs, "pretraining", "a800-train")["cards"] = 88
        return docs

    _edit(root, "pools/training.yaml", grow_pool)
    _edit(root, "teams/training.yaml", change)


def shrink_quota(root: Path) -> None:
    def change(docs: Docs) -> Docs:
        _quota(docs, "pretraining", "a800-train")["cards"] = 72
        return docs

    _edit(root, "teams/training.yaml", change)


def add_team(root: Path) -> None:
    team = {
        "apiVersion": "hetgitops.io/v1alpha1",
        "kind": "Team",
        "metadata": {"name": "sim-newteam"},
        "spec": {
            "description": "A team added on day 2.",
            "namespaces": ["sim-newteam"],
            "cohort": "research",
            "quotas": [{"pool": "rtx4090-dev", "cards": 0}],
            "tiers": ["dev"],
        },
    }
    (root / "teams" / "sim-newteam.yaml").write_text(yaml.safe_dump(team, sort_keys=False))


def remove_team(root: Path) -> None:
    _edit(
        root,
        "teams/training.yaml",
        lambda docs: [d for d in docs if d["metadata"]["name"] != "finetune-vision"],
    )


def add_pool(root: Path) -> None:
    pool = {
        "apiVersion": "hetgitops.io/v1alpha1",
        "kind": "Pool",
        "metadata": {"name": "l40s-extra"},
        "spec": {
            "description": "Two L40S nodes added on day 2.",
            "cardType": "l40s-48gb",
            "purpose": "inference",
            "cardsPerNode": 8,
            "nodes": [{"names": "gpu-l40x-[1:2]", "zone": "zone-b", "rack": "rack-b04"}],
            "labels": {"hetgitops.io/cost-center": "cc-serving"},
        },
    }
    (root / "pools" / "l40s-extra.yaml").write_text(yaml.safe_dump(pool, sort_keys=False))

    def change(docs: Docs) -> Docs:
        spec = _named(docs, "Team", "online-inference")["spec"]
        spec["quotas"].append({"pool": "l40s-extra", "cards": 8})
        return docs

    _edit(root, "teams/others.yaml", change)


def remove_pool(root: Path) -> None:
    _edit(
        root,
        "pools/training.yaml",
        lambda docs: [d for d in docs if d["metadata"]["name"] != "a100-transition"],
    )
    for relative in ("teams/training.yaml", "teams/others.yaml"):

        def change(docs: Docs) -> Docs:
            for doc in docs:
                if doc["kind"] == "Team":
                    doc["spec"]["quotas"] = [
                        q for q in doc["spec"]["quotas"] if q["pool"] != "a100-transition"
                    ]
            return docs

        _edit(root, relative, change)


def change_taint(root: Path) -> None:
    def change(docs: Docs) -> Docs:
        spec = _named(docs, "Pool", "l40s-infer")["spec"]
        spec["taints"] = [
            {"key": "hetgitops.io/dedicated", "value": "inference", "effect": "PreferNoSchedule"}
        ]
        return docs

    _edit(root, "pools/inference.yaml", change)


def add_noschedule_taint(root: Path) -> None:
    """An untainted pool becomes dedicated: its flavor, the node agents and the job templates
    must tolerate the new NoSchedule taint, or the nodes lose their NFD labels."""

    def change(docs: Docs) -> Docs:
        spec = _named(docs, "Pool", "l40s-infer")["spec"]
        spec["taints"] = [
            {"key": "hetgitops.io/pool", "value": "l40s-infer", "effect": "NoSchedule"}
        ]
        return docs

    _edit(root, "pools/inference.yaml", change)


def change_labels(root: Path) -> None:
    def change(docs: Docs) -> Docs:
        _named(docs, "Pool", "l40s-infer")["spec"]["labels"]["hetgitops.io/cost-center"] = (
            "cc-platform"
        )
        return docs

    _edit(root, "pools/inference.yaml", change)


def repartition_mig(root: Path) -> None:
    def change(docs: Docs) -> Docs:
        devices = _named(docs, "Pool", "h100-infer")["spec"]["mig"]["devices"]
        devices[1]["profiles"] = {"2g.20gb": 3}
        return docs

    def requota(docs: Docs) -> Docs:
        _quota(docs, "online-inference", "h100-infer")["mig"] = {"1g.10gb": 56, "2g.20gb": 36}
        return docs

    _edit(root, "pools/inference.yaml", change)
    _edit(root, "teams/others.yaml", requota)


def change_tier_value(root: Path) -> None:
    def change(docs: Docs) -> Docs:
        _named(docs, "PriorityTier", "training")["spec"]["value"] = 20000
        return docs

    _edit(root, "tiers.yaml", change)


CHANGES: dict[str, Callable[[Path], None]] = {
    "grow-quota": grow_quota,
    "shrink-quota": shrink_quota,
    "add-team": add_team,
    "remove-team": remove_team,
    "add-pool": add_pool,
    "remove-pool": remove_pool,
    "change-taint": change_taint,
    "add-noschedule-taint": add_noschedule_taint,
    "change-labels": change_labels,
    "repartition-mig": repartition_mig,
    "change-tier-value": change_tier_value,
}


def grow_quota_without_nodes(root: Path) -> None:
    """grow-quota before the node arrives: the pool is fully claimed."""

    def change(docs: Docs) -> Docs:
        _quota(docs, "pretraining", "a800-train")["cards"] = 88
        return docs

    _edit(root, "teams/training.yaml", change)


def remove_claimed_pool(root: Path) -> None:
    """remove-pool while teams still hold quota on it."""
    _edit(
        root,
        "pools/training.yaml",
        lambda docs: [d for d in docs if d["metadata"]["name"] != "a100-transition"],
    )


def repartition_mig_without_requota(root: Path) -> None:
    """repartition-mig while the team's quota still names the profile that goes away."""

    def change(docs: Docs) -> Docs:
        _named(docs, "Pool", "h100-infer")["spec"]["mig"]["devices"][1]["profiles"] = {"2g.20gb": 3}
        return docs

    _edit(root, "pools/inference.yaml", change)


def add_noexecute_taint(root: Path) -> None:
    """A NoExecute taint that does not say the eviction is intended."""

    def change(docs: Docs) -> Docs:
        spec = _named(docs, "Pool", "l40s-infer")["spec"]
        spec["taints"] = [{"key": "maintenance", "effect": "NoExecute"}]
        return docs

    _edit(root, "pools/inference.yaml", change)


def add_topology_level_nodes_lack(root: Path) -> None:
    """An nvlink-domain level that no node entry of the bundled fleet sets: every flavor is
    topology-bound, so Kueue's TAS would leave out every node and no pool would admit."""

    def change(docs: Docs) -> Docs:
        _named(docs, "Fleet", "ai-centre")["spec"]["topology"]["levels"] = [
            "zone",
            "rack",
            "nvlink-domain",
            "hostname",
        ]
        return docs

    _edit(root, "fleet.yaml", change)


# The other half of the matrix: changes that must never reach a cluster. `validate` (and so
# `render`) refuses each with this rule, at a position in the policy.
REFUSED: dict[str, tuple[Callable[[Path], None], str]] = {
    "grow-quota-without-nodes": (grow_quota_without_nodes, "quota-exceeds-capacity"),
    "remove-claimed-pool": (remove_claimed_pool, "unresolved-reference"),
    "repartition-mig-without-requota": (
        repartition_mig_without_requota,
        "quota-resource-unavailable",
    ),
    "add-noexecute-taint": (add_noexecute_taint, "taint-evicts-running-pods"),
    "add-topology-level-nodes-lack": (add_topology_level_nodes_lack, "topology-incomplete"),
}
# Known failures, by (change, tool): the issue item that fixes them.
KNOWN: dict[tuple[str, str], str] = {}
SYNCS = {"argocd": gitops.sync_argocd, "flux": gitops.sync_flux}


def cases() -> list[Any]:
    return [
        pytest.param(
            change,
            tool,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN[change, tool])]
            if (change, tool) in KNOWN
            else [],
            id=f"{change}-{tool}",
        )
        for change in CHANGES
        for tool in sorted(SYNCS)
    ]


@pytest.mark.parametrize(("change", "tool"), cases())
def test_day2_change_converges(
    sim: cluster.SimCluster, synced: Path, tmp_path: Path, change: str, tool: str
) -> None:
    after_dir = tmp_path / "policy"
    shutil.copytree(POLICIES, after_dir)
    CHANGES[change](after_dir)
    after_tree = render(after_dir, tmp_path / "after")
    after = policyfleet.load(after_dir, now=NOW)
    before = policyfleet.load(POLICIES, now=NOW)
    sync = SYNCS[tool]
    # New nodes are provisioned (and tainted or relabelled) before the policy that uses them.
    policyfleet.create_from(sim, after)
    try:
        sync(sim, after_tree, synced)
        converged(sim, after, after_tree)
        # No sync ever deletes a Namespace (Argo CD Prune=false, Flux prune: disabled): a team
        # or namespace leaving the policy leaves its Namespace and its workloads in place.
        namespaces = {
            o["metadata"]["name"] for o in gitops.documents(synced) if o["kind"] == "Namespace"
        }
        live = set(sim.kubectl("get", "namespaces", "-o", "name").stdout.split())
        assert {f"namespace/{n}" for n in namespaces} <= live, sorted(
            f"namespace/{n}" for n in namespaces if f"namespace/{n}" not in live
        )
    finally:
        _restore(sim, synced, after_tree, before)


def _restore(sim: cluster.SimCluster, bundled: Path, after_tree: Path, before: Any) -> None:
    """Back to the bundled state: revert the way Argo CD would, and if even that fails, delete
    both trees and sync the bundled one afresh, so one failure never spreads to the next case."""
    policyfleet.create_from(sim, before)
    try:
        gitops.sync_argocd(sim, bundled, after_tree, attempts=1)
        converged(sim, before, bundled, timeout=30)
    except (gitops.SyncFailed, AssertionError):
        gitops.prune(sim, gitops.documents(after_tree) + gitops.documents(bundled))
        gitops.sync_argocd(sim, bundled)
        converged(sim, before, bundled)


@pytest.mark.parametrize("change", sorted(REFUSED))
def test_day2_change_refused_before_sync(tmp_path: Path, change: str) -> None:
    edit, rule = REFUSED[change]
    policy_dir = tmp_path / "policy"
    shutil.copytree(POLICIES, policy_dir)
    edit(policy_dir)
    result = api.validate([policy_dir], api.Options(now=NOW, check_output=False))
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    assert rule in {d.rule for d in errors}
    assert all(d.span.line > 0 for d in errors if d.rule == rule)
    out = tmp_path / "tree"
    rendered = run_output_command(policy_dir, out)
    assert rendered.returncode == 1, rendered.stderr
    assert f"[{rule}]" in rendered.stdout + rendered.stderr
    assert not out.exists() or not any(out.rglob("*.yaml"))
