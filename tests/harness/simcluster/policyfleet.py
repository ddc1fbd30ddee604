"""Fleet of a policy directory: load it with hetgitops, create its kwok Nodes and NodeFeatures,
configure nfd-master as the rendered nfd-helm-values.yaml says and the Volcano scheduler as the
rendered scheduler ConfigMap says, wait until every node is Ready."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

from hetgitops import api
from hetgitops.compilers.nodes import nfd_helm_values
from hetgitops.compilers.volcano_scheduler import CONFIG_KEY, scheduler_config_map
from hetgitops.model.policy import Policy

from . import cluster, fleet


class PolicyError(RuntimeError):
    """The policy does not load or validate: there is no fleet to build."""


def load(policy_dir: Path, *, now: dt.date) -> Policy:
    result = api.validate([policy_dir], api.Options(now=now, check_output=False))
    if result.policy is None or result.failed():
        messages = "; ".join(d.message for d in result.diagnostics[:5])
        raise PolicyError(f"{policy_dir} is not a valid policy: {messages}")
    return result.policy


def create(sim: cluster.SimCluster, policy_dir: Path, *, now: dt.date, timeout: float = 600) -> int:
    """Create the fleet of `policy_dir`; return the number of nodes."""
    return create_from(sim, load(policy_dir, now=now), timeout=timeout)


def create_from(
    sim: cluster.SimCluster,
    policy: Policy,
    *,
    timeout: float = 600,
    timings: dict[str, float] | None = None,
) -> int:
    """Create the fleet of a loaded policy; return the number of nodes. `timings`, if given,
    receives the seconds of each step (the benchmark prints them)."""
    clock = _Clock(timings if timings is not None else {})
    nodes, features = fleet.fleet_objects(policy)
    clock.lap("objects built (Python)")
    cluster.configure_nfd(sim, nfd_helm_values(policy))
    if policy.fleet is not None:
        config_map = scheduler_config_map(policy, policy.fleet).obj
        cluster.configure_volcano(sim, config_map["data"][CONFIG_KEY])
    clock.lap("nfd-master and vc-scheduler configured")
    cluster.create_fleet(sim, nodes, features)
    clock.lap(f"{len(nodes)} Nodes + {len(features)} NodeFeatures applied")
    names = {node["metadata"]["name"] for node in nodes}
    # Listing 5,000 Nodes costs a second of kube-apiserver: poll a large fleet less often.
    cluster.wait_for(
        lambda: names <= ready_nodes(sim),
        timeout=timeout,
        what=f"{len(names)} kwok nodes Ready",
        interval=max(0.5, len(names) / 2000),
    )
    clock.lap("every node Ready")
    return len(names)


class _Clock:
    """Seconds since the previous lap, into a dict."""

    def __init__(self, laps: dict[str, float]) -> None:
        self.laps = laps
        self.last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = now - self.last
        self.last = now


def added_nodes(baseline: Policy, after: Policy) -> list[str]:
    """The nodes of `after` that `baseline` does not have (a change that adds nodes)."""
    kept = {node.name for pool in baseline.pools.values() for node in pool.nodes}
    return sorted({node.name for pool in after.pools.values() for node in pool.nodes} - kept)


def remove_nodes(sim: cluster.SimCluster, names: list[str]) -> None:
    """Delete the kwok Nodes and their NodeFeatures; kubectl waits until the Nodes are gone
    (their pods go with them: kube-controller-manager's pod GC)."""
    if not names:
        return
    sim.kubectl("delete", "node", *names, "--ignore-not-found", "--wait=true")
    sim.kubectl("delete", "nodefeature", *names, "-n", fleet.NFD_NAMESPACE, "--ignore-not-found")


def ready_nodes(sim: cluster.SimCluster) -> set[str]:
    listed = json.loads(sim.kubectl("get", "nodes", "-o", "json").stdout)
    return {
        item["metadata"]["name"]
        for item in listed["items"]
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in item.get("status", {}).get("conditions", [])
        )
    }
