"""`hetgitops import` of a busy brownfield cluster: the simulated fleet (the real Kueue v0.19.2
with its webhooks and controllers, Volcano, nfd-master, kube-scheduler, kwok nodes) synced from
the bundled policy and filled with running work, then stripped of every hetgitops label, so
its queues, flavors, priority classes, Volcano queues, namespaces and GPU Operator configs are
what a team that wrote them by hand runs, with Kueue's status, finalizers and admitted work
on them.

Import reads it live as the sim's read-only user (so any write would be refused by the API
server); the policy it writes validates; `drift --mode server-dry-run` of that policy asks the
same API server (and Kueue's webhooks) what the first sync would change: nothing but the
adoption of each object (hetgitops' labels). Running work is untouched throughout. The module
syncs the bundled tree back afterwards, which puts the labels back for the modules after it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.simcluster import busy, cluster, gitops

from .checks import converged, get
from .conftest import NOW

pytestmark = pytest.mark.sim

HETGITOPS = str(Path(sys.executable).parent / "hetgitops")
# The labels hetgitops puts on what it renders; a hand-written cluster has none of them.
LABELS = ("app.kubernetes.io/managed-by", "hetgitops.io/fleet", "hetgitops.io/team",
          "hetgitops.io/pool")  # fmt: skip
SELECTOR = "app.kubernetes.io/managed-by=hetgitops"
# Every kind of the bundled render (NodeFeatureRules too: the written policy has no nodes
# target, and a labelled rule would be an orphan of it).
KINDS = ("resourceflavors.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io",
         "cohorts.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io",
         "workloadpriorityclasses.kueue.x-k8s.io", "topologies.kueue.x-k8s.io",
         "priorityclasses.scheduling.k8s.io", "queues.scheduling.volcano.sh", "namespaces",
         "resourcequotas", "configmaps", "nodefeaturerules.nfd.k8s-sigs.io")  # fmt: skip


@pytest.fixture(scope="module")
def brownfield(sim: cluster.SimCluster, busy_fleet: busy.BusyFleet) -> Iterator[busy.BusyFleet]:
    """The busy fleet with hetgitops' labels taken off every object it rendered; labelled
    again (the bundled tree synced back) afterwards. A Namespace keeps the label its
    ClusterQueue's namespaceSelector selects it by, as a hand-run cluster that admits work
    from it must have it (without, Kueue admits nothing new from it: import says so)."""
    for kind in KINDS:
        kept = ("hetgitops.io/team",) if kind == "namespaces" else ()
        dropped = [f"{k}-" for k in LABELS if k not in kept]
        sim.kubectl("label", kind, "-A", "-l", SELECTOR, *dropped)
    left = [k for k in KINDS if get_items(sim, k, "-l", SELECTOR)]
    assert left == [], f"still labelled: {left}"
    yield busy_fleet
    gitops.sync_argocd(sim, busy_fleet.tree)
    converged(sim, busy_fleet.policy, busy_fleet.tree)


def get_items(sim: cluster.SimCluster, kind: str, *args: str) -> list[dict[str, Any]]:
    return list(get(sim, kind, "-A", *args)["items"])


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HETGITOPS, *args], capture_output=True, text=True, check=False, timeout=600
    )


def test_a_busy_hand_run_cluster_imports_and_its_first_sync_changes_nothing(
    sim: cluster.SimCluster, brownfield: busy.BusyFleet, tmp_path: Path
) -> None:
    before = busy.summary(busy.measure(sim, brownfield.pools))
    policy = tmp_path / "policy"
    imported = _run(
        "import",
        "--kubeconfig",
        str(sim.plane.readonly_kubeconfig),
        "--output",
        str(policy),
        "--cluster",
        brownfield.policy.fleet.cluster if brownfield.policy.fleet else "imported",
        "--format",
        "json",
    )
    assert imported.returncode in (0, 1), imported.stderr
    report = json.loads(imported.stdout)
    findings = [f"{d['severity']} {d['rule']}: {d['message']}" for d in report["diagnostics"]]
    print("\nimport findings:\n" + "\n".join(findings))
    print(imported.stderr.strip().splitlines()[-1:])
    # Nothing the first sync would change, nothing the written policy fails on.
    assert not [d for d in report["diagnostics"] if d["severity"] == "error"]
    validated = _run("validate", str(policy), "--now", NOW.isoformat())
    assert validated.returncode == 0, validated.stdout + validated.stderr

    drifted = _run(
        "drift",
        str(policy),
        "--kubeconfig",
        str(sim.plane.admin_kubeconfig),
        "--mode",
        "server-dry-run",
        "--format",
        "json",
    )
    assert drifted.returncode in (0, 1), drifted.stderr
    found = json.loads(drifted.stdout)["diagnostics"]
    adopted = [d for d in found if d["rule"] == "drift-unmanaged"]
    assert adopted, found
    # The cluster may hold accelerator nodes no flavor selects (the day-2 modules before this
    # one leave added nodes behind): import makes pools of them, whose objects the first sync
    # creates. Those are listed; everything about what the cluster already ran is asserted.
    ours = _brownfield(sim, brownfield)
    added = [d for d in found if _subject(d) not in ours]
    print("created by the first sync (pools of nodes no flavor selected):")
    print("\n".join(f"{d['rule']} {d.get('path', '')}: {d['message']}" for d in added))
    assert {d["rule"] for d in added} <= {
        "drift-missing",
        "drift-node-labels",
        "drift-mig-config",
        "drift-node-taints",
    }
    assert all(_subject(d)[0] in ("Node", "ResourceFlavor") for d in added), added
    changes = [
        f"{d['rule']} {d.get('path', '')}: {d['message']}"
        for d in found
        if d not in added
        and (d["rule"] != "drift-unmanaged" or "no field of its spec changes" not in d["message"])
    ]
    print("drift changes:\n" + "\n".join(changes))
    assert changes == []
    # The queueing objects of the bundled render all come back under their own names.
    kinds = Counter(d.get("path", "").split(" ")[0] for d in adopted)
    for kind, count in brownfield_kinds(brownfield.tree).items():
        assert kinds[kind] >= count, (kind, kinds)
    # Read-only: the running work is what it was.
    assert busy.summary(busy.measure(sim, brownfield.pools)) == before


def _subject(finding: dict[str, Any]) -> tuple[str, str]:
    """(kind, namespace/name) a drift finding is about, from its path (`Kind ns/name: ...`)."""
    head = str(finding.get("path", "")).split(":", 1)[0]
    kind, _, name = head.partition(" ")
    return kind, name.strip()


def _brownfield(sim: cluster.SimCluster, fleet: busy.BusyFleet) -> set[tuple[str, str]]:
    """What the cluster ran before import: the stripped objects and the bundled pools' nodes."""
    found = {
        (o["kind"], "/".join(filter(None, (o["metadata"].get("namespace"), o["metadata"]["name"]))))
        for kind in KINDS
        for o in get_items(sim, kind)
    }
    return found | {("Node", n.name) for pool in fleet.policy.pools.values() for n in pool.nodes}


def brownfield_kinds(tree: Path) -> Counter[str]:
    """How many objects of each queueing kind the bundled render holds."""
    wanted = {"ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "PriorityClass",
              "WorkloadPriorityClass", "Topology"}  # fmt: skip
    return Counter(o["kind"] for o in gitops.documents(tree) if o["kind"] in wanted)
