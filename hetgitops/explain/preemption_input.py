"""The preemption model's inputs from the policy and from what runs: the teams' ClusterQueues
(quotas per pool and resource, `spec.preemption` as render writes it), the cohort tree, and
the admitted workloads, from a usage file (schemas/preempt-usage.schema.json), a List of
Kueue Workloads, or the live cluster (`state.holder_of`, through `live.workloads`).

Why apart from the model (`preemption`): the model takes plain data and is tested against
Kueue's own table cases; this module only reads the policy and the files into that data."""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hetgitops.explain.manifest import documents
from hetgitops.explain.preemption import CohortSpec, QueueSpec, Rules, Running
from hetgitops.explain.preemption_tree import Quota
from hetgitops.explain.state import Holder, flavor_pools, holder_of, kueue_api, live_node_free
from hetgitops.explain.workload import WorkloadError
from hetgitops.live import resources, workloads
from hetgitops.live.client import Cluster
from hetgitops.load.resources import data_dir
from hetgitops.model.policy import Policy
from hetgitops.plan.preemption_rules import preemption
from hetgitops.plan.quota_plan import kueue_amount

USAGE_SCHEMA = "preempt-usage.schema.json"
USAGE_KIND = "RunningWorkloads"


def queues(policy: Policy) -> list[QueueSpec]:
    """Every team's ClusterQueue: nominal, borrowing and lending limits per (pool, resource)
    from the plan explain's flavor replay uses (`quotas.transition_reach`), preemption as the
    kueue compiler writes it (`plan.preemption_rules`)."""
    from hetgitops.explain.quotas import transition_reach

    reach = transition_reach(policy)
    found = []
    for team in policy.teams.values():
        quotas = {
            (pool, resource): Quota(*limits)
            for (name, pool), by_resource in reach.limits.items()
            if name == team.name
            for resource, limits in by_resource.items()
        }
        written = preemption(policy, team)
        borrow = written["borrowWithinCohort"]
        rules = Rules(
            written["withinClusterQueue"],
            written["reclaimWithinCohort"],
            borrow["policy"],
            borrow.get("maxPriorityThreshold"),
        )
        found.append(QueueSpec(team.name, team.cohort, quotas, rules))
    return found


def cohorts(policy: Policy) -> list[CohortSpec]:
    """The fleet's cohort tree (a policy Cohort holds no quota of its own)."""
    fleet = policy.fleet
    return [CohortSpec(c.name, c.parent) for c in fleet.cohorts] if fleet else []


def fair_sharing(policy: Policy) -> bool:
    """Kueue's configuration enables fair sharing (fairsharing.Enabled)."""
    return bool(policy.fleet and policy.fleet.kueue_fair_sharing)


def seconds(stamp: str) -> float:
    """An RFC 3339 time in seconds; "" (unknown) is now, later than every stamp, as Kueue's
    quotaReservationTime takes now for a Workload without the condition."""
    if not stamp:
        return math.inf
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def running(holders: Iterable[Holder]) -> list[Running]:
    return [
        Running(
            h.name,
            h.cluster_queue,
            h.priority,
            dict(h.usage),
            admitted=seconds(h.admitted),
            created=seconds(h.created),
            evicted=h.evicted,
            placed=h.placed,
        )
        for h in holders
    ]


@functools.cache
def usage_schema() -> dict[str, Any]:
    body: dict[str, Any] = json.loads((data_dir("schemas") / USAGE_SCHEMA).read_text("utf-8"))
    return body


def read_usage(policy: Policy, text: str, name: str) -> list[Holder]:
    """The admitted workloads of a usage file: a RunningWorkloads document, or a List of Kueue
    Workloads (`kubectl get workloads -A -o yaml`), of which those that hold quota count."""
    import jsonschema

    found: list[Holder] = []
    for doc in documents(text, name):
        value = doc.value
        if isinstance(value, dict) and value.get("kind") in ("List", "WorkloadList"):
            pools = flavor_pools(policy)
            items = [i for i in value.get("items") or [] if isinstance(i, dict)]
            found += [holder_of(policy, w, pools) for w in items if workloads.holds_quota(w)]
            continue
        errors = sorted(jsonschema.Draft202012Validator(usage_schema()).iter_errors(value), key=str)
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "the document"
            raise WorkloadError(f"{name}: {where}: {errors[0].message}")
        found += [_entry(policy, e) for e in value["workloads"]]
    return found


def _entry(policy: Policy, entry: Mapping[str, Any]) -> Holder:
    tier = entry.get("tier")
    if "priority" in entry:
        priority = int(entry["priority"])
    elif tier is not None and tier in policy.tiers:
        priority = policy.tiers[tier].value
    else:
        raise WorkloadError(f"workload {entry['name']}: give a priority or a known tier")
    if entry["pool"] not in policy.pools:
        raise WorkloadError(f"workload {entry['name']}: no pool {entry['pool']} in the policy")
    usage = {
        (str(entry["pool"]), str(r)): kueue_amount(str(r), str(v))
        for r, v in entry["usage"].items()
    }
    return Holder(
        str(entry["name"]),
        str(entry["clusterQueue"]),
        priority,
        usage,
        str(entry.get("admitted", "")),
        str(entry.get("created", "")),
        bool(entry.get("evicted", False)),
    )


@dataclass(frozen=True)
class LiveView:
    """What `explain --preempt --kubeconfig` reads: the admitted Workloads, what Kueue's
    topology-aware cache has free on each node of the policy, and what the reading could not
    see (nodes of the policy not in the cluster, ...), said to the user, never dropped."""

    holders: list[Holder]
    free: dict[str, dict[str, int]]
    notes: list[str]


def live_view(policy: Policy, cluster: Cluster) -> LiveView:
    """The cluster's view (`state.live_node_free`: Nodes and Pods read too; read-only)."""
    pools = flavor_pools(policy)
    items = cluster.list(resources.workloads(kueue_api(policy)))
    admitted = [w for w in items if workloads.holds_quota(w)]
    holders = [holder_of(policy, w, pools) for w in admitted]
    notes: list[str] = []
    free = live_node_free(policy, cluster, admitted, notes)
    return LiveView(holders, free, notes)
