"""Explain stage (live mode): what koord-scheduler v1.8.0 counts in each ElasticQuota of the
policy's trees, read from the cluster once (through `hetgitops.live`, nothing written):

- every Pod of the cluster is charged to a quota whatever its scheduler (the ElasticQuota plugin's
  pod handler, pkg/scheduler/plugins/elasticquota/pod_handler.go, takes every pod of the informer):
  its quota label, else the quota binding its namespace, else the default quota (plugin_helper.go).
  Pods whose quota is no quota of the policy are left out (the default quota and quotas hetgitops
  does not render);
- a pod's requests (containers summed, init containers' at least) count in its quota's request as
  long as the pod exists (core/group_quota_manager.go; pods being deleted too: the
  ElasticQuotaIgnoreTerminatingPod gates are off by default), masked to the quota's max keys; in its
  used once it is bound to a node. A bound pod that has finished keeps its used (OnPodUpdate passes
  a zero delta); a scheduler started after it finished never counted it, so both readings exist:
  this one counts it;
- each tree's total is its root quota's `quota.scheduling.koordinator.sh/total-resource` annotation,
  which the profile controller writes (quota_handler.go).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hetgitops.explain.koord_runtime import Charged, KoordUsage
from hetgitops.explain.namespace_quota import COUNT_PODS, PODS
from hetgitops.explain.workload import KOORD_QUOTA, Workload
from hetgitops.live import resources, workloads
from hetgitops.live.client import Cluster, Forbidden, NotServed
from hetgitops.model.policy import Policy
from hetgitops.plan.koordinator_quota import quota_nodes, trees
from hetgitops.plan.quota_plan import kueue_amount

TOTAL = "quota.scheduling.koordinator.sh/total-resource"
TARGET = "koordinator"


def pod_quota(policy: Policy, labels: Mapping[str, Any], namespace: str | None) -> str:
    """The quota koord-scheduler charges a pod to (explain's own rule, `quota_of`)."""
    from hetgitops.explain.koordinator import quota_of

    label = labels.get(KOORD_QUOTA)
    pod = Workload("Pod", "", namespace, (), queue=str(label) if label else None)
    return quota_of(policy, pod)[0]


def read_koordinator(policy: Policy, cluster: Cluster, notes: list[str]) -> KoordUsage | None:
    """None when the fleet renders no Koordinator quotas."""
    if policy.fleet is None or TARGET not in policy.fleet.targets:
        return None
    try:
        quotas = cluster.list(resources.ELASTIC_QUOTAS)
    except (NotServed, Forbidden) as exc:
        notes.append(f"ElasticQuotas not read: {exc}")
        return None
    return KoordUsage(
        _charged(policy, cluster.list(resources.PODS)), _totals(policy, quotas, notes)
    )


def _totals(
    policy: Policy, quotas: Sequence[Mapping[str, Any]], notes: list[str]
) -> dict[str, dict[str, int]]:
    roots = {t.root for t in trees(policy)}
    found: dict[str, dict[str, int]] = {}
    for quota in quotas:
        meta = quota.get("metadata") or {}
        if meta.get("name") not in roots:
            continue
        raw = (meta.get("annotations") or {}).get(TOTAL)
        try:
            total = json.loads(raw) if isinstance(raw, str) else None
            if not isinstance(total, dict):
                raise TypeError(raw)
            found[meta["name"]] = {str(k): kueue_amount(str(k), str(v)) for k, v in total.items()}
        except (ValueError, TypeError):
            notes.append(f"root quota {meta['name']}: no readable {TOTAL} annotation")
    for root in sorted(roots - set(found)):
        notes.append(f"root quota {root} not counted yet: its tree is judged on the policy's total")
    return found


def _charged(policy: Policy, pods: Sequence[Mapping[str, Any]]) -> dict[str, Charged]:
    keys = {n.name: tuple(n.max) for n in quota_nodes(policy) if not n.is_parent}
    request: dict[str, dict[str, int]] = {}
    used: dict[str, dict[str, int]] = {}
    counted: dict[str, int] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        quota = pod_quota(policy, meta.get("labels") or {}, meta.get("namespace"))
        if quota not in keys:
            continue
        asked = workloads.pod_requests(pod.get("spec") or {}, kueue_amount)
        masked = {k: v for k, v in asked.items() if k in keys[quota]}
        counted[quota] = counted.get(quota, 0) + 1
        _add(request.setdefault(quota, {}), masked)
        if workloads.pod_node(pod):
            _add(used.setdefault(quota, {}), masked)
    return {q: Charged(request.get(q, {}), used.get(q, {}), counted[q]) for q in sorted(counted)}


def _namespaces(pods: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per namespace, the requests of its pods that have not finished and their number
    (`pods`), and the number of every pod stored (`count/pods`): what a ResourceQuota counts
    as used (the pod evaluator's usage, docs/upstream.md)."""
    found: dict[str, dict[str, int]] = {}
    for pod in pods:
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        held = found.setdefault(namespace, {})
        _add(held, {COUNT_PODS: 1})
        if workloads.pod_finished(pod):
            continue
        _add(held, {PODS: 1, **workloads.pod_requests(pod.get("spec") or {}, kueue_amount)})
    return found


def _add(into: dict[str, int], values: Mapping[str, int]) -> None:
    for key, value in values.items():
        into[key] = into.get(key, 0) + value
