"""What the sim tests wait for and assert: converged queues, labelled nodes, admitted jobs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from harness.simcluster import cluster, gitops
from harness.simcluster.fleet import nfd_worker_runs, nvidia_plugin_runs

from hetgitops.compilers.nodes import desired_node_labels
from hetgitops.model import quantities
from hetgitops.model.policy import Policy, Pool

T = TypeVar("T")
ISSUE_7_ITEM_1 = (
    "issue 7 item 1: the pool's taint is not tolerated by nfd-worker (rendered NFD values "
    "worker.tolerations) or by the GPU Operator's device plugin, so its nodes publish no "
    "NodeFeature / no nvidia.com capacity"
)


def agents_run(policy: Policy, pool: Pool) -> bool:
    """Whether NFD's worker and (for NVIDIA cards) the device plugin run on the pool's nodes."""
    return nfd_worker_runs(policy, pool) and nvidia_plugin_runs(policy, pool)


NFD_LABELS_ANNOTATION = "nfd.node.kubernetes.io/feature-labels"


def get(sim: cluster.SimCluster, *args: str) -> Any:
    return json.loads(sim.kubectl("get", *args, "-o", "json").stdout)


def condition(obj: dict[str, Any], kind: str) -> str | None:
    for cond in obj.get("status", {}).get("conditions", []):
        if cond.get("type") == kind:
            return str(cond.get("status"))
    return None


def eventually(
    probe: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.5
) -> T:
    """Poll `probe` until it returns something truthy; fail with the last value otherwise."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def spec_differences(live: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """Where the live object's spec is not what the tree says: every field the tree sets (a
    webhook's defaults for fields it leaves out do not count), quantities compared by value."""
    return _differences(live.get("spec", {}), want.get("spec", {}), "spec")


def _differences(live: Any, want: Any, path: str) -> list[str]:
    if isinstance(want, dict):
        if not isinstance(live, dict):
            return [f"{path} is {live!r}, not {want!r}"]
        return [d for k, v in want.items() for d in _differences(live.get(k), v, f"{path}.{k}")]
    if isinstance(want, list):
        if not isinstance(live, list) or len(live) != len(want):
            return [f"{path} is {live!r}, not {want!r}"]
        return [
            d
            for i, pair in enumerate(zip(live, want, strict=True))
            for d in _differences(*pair, f"{path}[{i}]")
        ]
    return [] if _same(live, want) else [f"{path} is {live!r}, not {want!r}"]


def _same(live: Any, want: Any) -> bool:
    if isinstance(live, bool) != isinstance(want, bool):
        return False  # True == 1 in Python, not in a spec
    if live == want:
        return True
    if isinstance(want, (str, int)) and isinstance(live, (str, int)) and not isinstance(want, bool):
        try:
            return quantities.value_of(live) == quantities.value_of(want)
        except ValueError:
            return False
    return False


def inactive_queues(sim: cluster.SimCluster, tree: Path) -> list[str]:
    """ClusterQueues and LocalQueues of `tree` that are not Active=True, with their reason, or
    whose spec is not (yet) what the tree says."""
    wanted = {
        gitops.key(o): o
        for o in gitops.documents(tree)
        if o["kind"] in ("ClusterQueue", "LocalQueue")
    }
    found = (
        get(sim, "clusterqueues.kueue.x-k8s.io")["items"]
        + get(sim, "localqueues.kueue.x-k8s.io", "-A")["items"]
    )
    problems = []
    seen = set()
    for obj in found:
        k = (
            "kueue.x-k8s.io",
            obj["kind"],
            obj["metadata"].get("namespace", ""),
            obj["metadata"]["name"],
        )
        if k not in wanted:
            continue
        seen.add(k)
        problems += [f"{k[1]} {k[2]}/{k[3]}: {d}" for d in spec_differences(obj, wanted[k])]
        if condition(obj, "Active") != "True":
            reasons = [
                c.get("reason", "") + ": " + c.get("message", "")
                for c in obj.get("status", {}).get("conditions", [])
            ]
            problems.append(f"{k[1]} {k[2]}/{k[3]}: {reasons}")
    problems += [f"{k[1]} {k[2]}/{k[3]}: missing" for k in sorted(set(wanted) - seen)]
    return problems


def unlabelled_nodes(
    sim: cluster.SimCluster, policy: Policy, pools: set[str] | None = None
) -> list[str]:
    """Nodes whose labels differ from what the policy promises, or were not set by nfd-master."""
    nodes = {n["metadata"]["name"]: n for n in get(sim, "nodes")["items"]}
    problems = []
    for pool in policy.pools.values():
        if (pools is None and not nfd_worker_runs(policy, pool)) or (
            pools and pool.name not in pools
        ):
            continue  # no NodeFeature, so no labels: test_sim_bundled.test_pool_nodes_labelled
        for node in pool.nodes:
            obj = nodes.get(node.name)
            if obj is None:
                problems.append(f"{node.name}: no such node")
                continue
            labels = obj["metadata"].get("labels", {})
            want = desired_node_labels(policy, pool, node)
            wrong = {k: (v, labels.get(k)) for k, v in want.items() if labels.get(k) != v}
            by_nfd = set(
                obj["metadata"].get("annotations", {}).get(NFD_LABELS_ANNOTATION, "").split(",")
            )
            not_nfd = sorted(k for k in want if k not in by_nfd and _short(k) not in by_nfd)
            if wrong or not_nfd:
                problems.append(f"{node.name}: wrong {wrong}, not set by nfd-master {not_nfd}")
    return problems


def _short(key: str) -> str:
    # nfd-master lists labels of its default namespace (feature.node.kubernetes.io) unprefixed.
    return key.removeprefix("feature.node.kubernetes.io/")


def settle(problems: Callable[[], list[str]], *, timeout: float, what: str) -> None:
    """Poll until `problems()` is empty; fail with the last problems otherwise. Never probing
    more than half the time: a probe that lists 5,000 Nodes costs seconds of kube-apiserver
    and kubectl CPU, which the controllers being waited for need."""
    deadline = time.monotonic() + timeout
    started = time.monotonic()
    found = problems()
    while found and time.monotonic() < deadline:
        time.sleep(max(0.5, time.monotonic() - started))
        started = time.monotonic()
        found = problems()
    assert not found, f"{what} after {timeout:.0f}s: " + "; ".join(found[:8])


def closed_volcano_queues(sim: cluster.SimCluster, tree: Path) -> list[str]:
    """Volcano Queues of `tree` that are missing, not yet as the tree says (the last sync did
    not take), or whose state (set by vc-controller-manager) is not Open."""
    wanted = {o["metadata"]["name"]: o for o in gitops.documents(tree) if o["kind"] == "Queue"}
    found = {q["metadata"]["name"]: q for q in get(sim, "queues.scheduling.volcano.sh")["items"]}
    problems = []
    for name, obj in sorted(wanted.items()):
        queue = found.get(name)
        if queue is None:
            problems.append(f"Queue {name}: missing")
            continue
        spec = queue["spec"]
        if spec.get("parent", "root") != obj["spec"].get("parent", "root"):
            problems.append(f"Queue {name}: parent {spec.get('parent')}")
        problems += [f"Queue {name}: {d}" for d in spec_differences(queue, obj)]
        state = queue.get("status", {}).get("state")
        if state != "Open":
            problems.append(f"Queue {name}: state {state}")
    return problems


def stale_priority_classes(sim: cluster.SimCluster, tree: Path) -> list[str]:
    """PriorityClasses of `tree` whose live value or preemptionPolicy differs (or is missing):
    both are immutable, so only a delete and recreate can bring a change to the cluster."""
    live = {
        o["metadata"]["name"]: o for o in get(sim, "priorityclasses.scheduling.k8s.io")["items"]
    }
    problems = []
    for obj in gitops.documents(tree):
        if obj["kind"] != "PriorityClass":
            continue
        name, found = obj["metadata"]["name"], live.get(obj["metadata"]["name"])
        for field in ("value", "preemptionPolicy"):
            have = found.get(field) if found else "missing"
            if have != obj.get(field):
                problems.append(f"PriorityClass {name}: {field} {have}, not {obj.get(field)}")
    return problems


def converged(sim: cluster.SimCluster, policy: Policy, tree: Path, *, timeout: float = 90) -> None:
    settle(lambda: stale_priority_classes(sim, tree), timeout=timeout, what="stale PriorityClasses")
    settle(lambda: inactive_queues(sim, tree), timeout=timeout, what="queues not Active")
    settle(
        lambda: closed_volcano_queues(sim, tree), timeout=timeout, what="Volcano queues not Open"
    )
    settle(
        lambda: unlabelled_nodes(sim, policy),
        timeout=timeout,
        what="node labels not from nfd-master",
    )
