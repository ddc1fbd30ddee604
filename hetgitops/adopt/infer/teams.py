"""Adopt stage, last phase: teams and tiers. WorkloadPriorityClasses and PriorityClasses
become PriorityTiers; ClusterQueues become Teams of the same name (the namespaces of their
LocalQueues, quotas on the lent pools, limits, cohort, preemption, stop policy and
namespaceSelector as the cluster has them); Volcano Queues add theirs; a team namespace's
accelerator ResourceQuota becomes the team's namespaceQuota."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any

from hetgitops.adopt import nodes as nodeinfo
from hetgitops.adopt.findings import finding
from hetgitops.adopt.infer.covered import covered_resources
from hetgitops.adopt.infer.documents import Inferred, document, is_queueing
from hetgitops.adopt.infer.lending import LentPool
from hetgitops.adopt.infer.pools import Pool, pool_refs
from hetgitops.adopt.infer.quotas import quotas
from hetgitops.adopt.namespaces import kept_labels
from hetgitops.adopt.sources import Imported
from hetgitops.adopt.volcano import VOLCANO, adopt_queues
from hetgitops.adopt.volcano_scheduler import adopt_scheduler
from hetgitops.model import quantities
from hetgitops.plan import dra

DEFAULT_TIER = "standard"
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}


def tiers(
    by_kind: Mapping[str, list[Imported]], inferred: Inferred, skip: Set[str] = frozenset()
) -> list[str]:
    """The PriorityTier documents; their names, which every team may use. `skip`: classes
    a target renders from the tiers (the koordinator target's in-band ones)."""
    found: dict[str, dict[str, Any]] = {}
    for item in by_kind.get("PriorityClass", []):
        if item.name.startswith("system-") or item.name in skip:
            continue
        spec: dict[str, Any] = {"value": int(item.obj.get("value", 0))}
        spec["preemptionPolicy"] = str(item.obj.get("preemptionPolicy") or "PreemptLowerPriority")
        if item.obj.get("globalDefault"):
            spec["globalDefault"] = True
        if item.obj.get("description"):
            spec["description"] = str(item.obj["description"])
        found[item.name] = spec
    classes = set(found)
    for item in by_kind.get("WorkloadPriorityClass", []):
        spec = found.setdefault(item.name, {"value": int(item.obj.get("value", 0))})
        said = str(item.obj.get("description") or "")
        if item.name not in classes:  # a Kueue class alone: its description is the tier's
            if said:
                spec["description"] = said
        elif said != spec.get("description", ""):  # Kueue's class says its own
            spec["workloadDescription"] = said
    if not found:
        found[DEFAULT_TIER] = {
            "value": 1000,
            "preemptionPolicy": "Never",
            "description": "Every team's work.",
        }
        inferred.note(
            "PriorityTier",
            DEFAULT_TIER,
            "The cluster has no priority class: every "
            "team needs a tier, so the first sync creates this one.",
        )
    for name, spec in sorted(found.items()):
        inferred.tiers.append(document("PriorityTier", name, spec))
    return sorted(found)


def teams(
    by_kind: Mapping[str, list[Imported]],
    pools: Sequence[LentPool],
    lifecycles: Mapping[str, Any],
    tier_names: list[str],
    inferred: Inferred,
) -> None:
    """One Team per ClusterQueue with accelerator quota on an imported pool."""
    flavor_pool = {p.pool.flavor.name: p for p in pools if p.pool.flavor is not None}
    local_queues: dict[str, list[Imported]] = {}
    for lq in by_kind.get("LocalQueue", []):  # by ClusterQueue: one pass, not one per queue
        local_queues.setdefault(str((lq.obj.get("spec") or {}).get("clusterQueue")), []).append(lq)
    namespaces = {n.name: n for n in by_kind.get("Namespace", [])}
    for queue in sorted(by_kind.get("ClusterQueue", []), key=lambda q: q.name):
        _team(queue, local_queues, flavor_pool, lifecycles, tier_names, inferred, namespaces)


def _team(
    queue: Imported,
    local_queues: Mapping[str, list[Imported]],
    flavor_pool: Mapping[str, LentPool],
    lifecycles: Mapping[str, Any],
    tier_names: list[str],
    inferred: Inferred,
    namespaces: Mapping[str, Imported],
) -> None:
    spec_in = queue.obj.get("spec") or {}
    locals_ = sorted(local_queues.get(queue.name, []), key=lambda lq: (lq.namespace, lq.name))
    spec: dict[str, Any] = {"namespaces": _namespaces(queue, locals_, inferred)}
    cohort = spec_in.get("cohortName") or spec_in.get("cohort")
    if cohort:
        spec["cohort"] = str(cohort)
    covered = covered_resources(spec_in, flavor_pool)
    found, per_card = quotas(spec_in, flavor_pool, keep_empty=covered is not None)
    if not found:
        # No accelerator quota on an imported pool (a CPU-only queue): not a team; the round
        # trip reports the queue and its LocalQueues as not adopted.
        return
    spec["quotas"] = found
    spec["tiers"] = list(tier_names)
    cards = {p.pool.name: p.pool.card.name for p in flavor_pool.values()}
    stages = {str(lifecycles.get(cards.get(q["pool"], ""))) for q in found} - {"None"}
    if stages - {"production", "deprecated"}:  # the Fleet's default stages
        spec["lifecycleStages"] = sorted(stages | {"production", "deprecated"})
    spec.update(per_card)
    preemption = _preemption(spec_in.get("preemption") or {})
    if preemption:
        spec["preemption"] = preemption
    strategy = spec_in.get("queueingStrategy")
    if strategy and strategy != "BestEffortFIFO":
        spec["queueingStrategy"] = strategy
    spec["kueue"] = _kueue(queue, spec_in, locals_, flavor_pool, inferred)
    if covered is not None:
        spec["kueue"]["coveredResources"] = covered
    held = [namespaces[n] for n in spec["namespaces"] if n in namespaces]
    labels = kept_labels(queue.name, spec["kueue"]["namespaceSelector"], held)
    if labels:
        spec["namespaceLabels"] = labels
    inferred.teams.append(document("Team", queue.name, spec))
    inferred.note("Team", queue.name, f"Imported from ClusterQueue {queue.name}.")


def _namespaces(queue: Imported, locals_: list[Imported], inferred: Inferred) -> list[str]:
    """The LocalQueues' namespaces; a system namespace is no team's (reported), and a queue
    without LocalQueue gets a namespace of its own name."""
    namespaces = sorted({lq.namespace for lq in locals_} - SYSTEM_NAMESPACES)
    for lq in locals_:
        if lq.namespace in SYSTEM_NAMESPACES:
            inferred.diagnostics.append(
                finding(
                    "import-system-namespace",
                    f"LocalQueue {lq.namespace}/{lq.name}: a team cannot own system namespace "
                    f"{lq.namespace}; the queue stays unmanaged",
                    lq.span,
                )
            )
    if namespaces:
        return namespaces
    inferred.diagnostics.append(
        finding(
            "import-team-without-namespace",
            f"ClusterQueue {queue.name} has no LocalQueue: the team gets namespace {queue.name}",
            queue.span,
        )
    )
    return [queue.name]


def _kueue(
    queue: Imported,
    spec_in: Mapping[str, Any],
    locals_: list[Imported],
    flavor_pool: Mapping[str, LentPool],
    inferred: Inferred,
) -> dict[str, Any]:
    """`spec.kueue`: what only Kueue's ClusterQueue and LocalQueues say."""
    kueue: dict[str, Any] = {}
    names = {lq.name for lq in locals_}
    if len(names) == 1 and names != {queue.name}:
        kueue["localQueueName"] = names.pop()
    elif len(names) > 1:
        inferred.note(
            "Team",
            queue.name,
            "Its LocalQueues have several names "
            f"({', '.join(sorted(names))}); the policy gives every namespace one.",
        )
    stop = spec_in.get("stopPolicy")
    if stop and stop != "None":
        kueue["stopPolicy"] = stop
    kueue["namespaceSelector"] = spec_in.get("namespaceSelector") or {}
    fair = spec_in.get("fairSharing")
    if isinstance(fair, Mapping):  # Kueue defaults the weight of a present fairSharing to 1
        kueue["fairSharingWeight"] = quantities.normalize(str(fair.get("weight", 1)))
    checks = _admission_checks(spec_in, flavor_pool)
    if checks:
        kueue["admissionChecks"] = checks
    return kueue


def _admission_checks(
    spec: Mapping[str, Any], flavor_pool: Mapping[str, LentPool]
) -> list[dict[str, Any]]:
    """`admissionChecksStrategy` (v1beta2, v1beta1) or v1beta1's plain `admissionChecks`
    names; `onFlavors` as the pools those flavors became (a flavor that is no pool cannot be
    named: the round trip reports the difference)."""
    strategy = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    entries = [dict(c) for c in strategy if isinstance(c, Mapping) and c.get("name")]
    entries += [{"name": str(n)} for n in spec.get("admissionChecks") or [] if isinstance(n, str)]
    found: list[dict[str, Any]] = []
    for entry in entries:
        check: dict[str, Any] = {"name": str(entry["name"])}
        pools = [flavor_pool[f].pool.name for f in entry.get("onFlavors") or [] if f in flavor_pool]
        if pools:
            check["onPools"] = pools
        found.append(check)
    return found


def _preemption(found: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key in ("withinClusterQueue", "reclaimWithinCohort"):
        result[key] = str(found.get(key) or "Never")
    borrow = found.get("borrowWithinCohort") or {}
    result["borrowWithinCohort"] = {"policy": str(borrow.get("policy") or "Never")}
    if borrow.get("maxPriorityThreshold") is not None:
        result["borrowWithinCohort"]["maxPriorityThreshold"] = int(borrow["maxPriorityThreshold"])
    return result


def namespace_quotas(by_kind: Mapping[str, list[Imported]], inferred: Inferred) -> None:
    """A team namespace's ResourceQuota that caps accelerators becomes the team's
    `spec.namespaceQuota` (its name, its other limits kept; the accelerator limits are the
    queue's reach, compared by the round trip). Every other quota in a team namespace stays
    as it is, reported."""
    by_namespace: dict[str, list[Imported]] = {}
    for quota in by_kind.get("ResourceQuota", []):
        by_namespace.setdefault(quota.namespace, []).append(quota)
    for team in inferred.teams:
        chosen: Imported | None = None
        for namespace in team["spec"]["namespaces"]:
            for quota in sorted(by_namespace.get(namespace, []), key=lambda q: q.name):
                hard = (quota.obj.get("spec") or {}).get("hard") or {}
                caps = [k for k in hard if _accelerator_limit(str(k))]
                if caps and (chosen is None or quota.name == chosen.name):
                    chosen = chosen or quota
                    continue
                why = (
                    f"it caps {', '.join(sorted(caps))} beside the team's {chosen.name}"
                    if caps and chosen is not None
                    else "it caps no accelerator"
                )
                inferred.diagnostics.append(
                    finding(
                        "import-object-not-adopted",
                        f"ResourceQuota {namespace}/{quota.name}: {why}; it stays as it is, "
                        "outside the policy",
                        quota.span,
                    )
                )
        if chosen is not None:
            _namespace_quota(team, chosen)
            adopted = _requests_caps(chosen)
            if adopted is not None:
                inferred.quota_caps[team["metadata"]["name"]] = adopted


def _namespace_quota(team: dict[str, Any], chosen: Imported) -> None:
    hard = (chosen.obj.get("spec") or {}).get("hard") or {}
    spec: dict[str, Any] = {}
    if chosen.name != "hetgitops-accelerators":
        spec["name"] = chosen.name
    other = {str(k): str(v) for k, v in sorted(hard.items()) if not _accelerator_limit(str(k))}
    if other:
        spec["hard"] = other
    if spec:
        team["spec"]["namespaceQuota"] = spec


def _requests_caps(chosen: Imported) -> dict[str, str] | None:
    """The quota's accelerator caps by resource, when each is a `requests.<resource>` key (a
    DRA device count cannot be said per resource, so such a quota keeps the reach)."""
    hard = (chosen.obj.get("spec") or {}).get("hard") or {}
    caps = {str(k): str(v) for k, v in hard.items() if _accelerator_limit(str(k))}
    if not all(k.startswith("requests.") for k in caps):
        return None
    return {k.removeprefix("requests."): v for k, v in sorted(caps.items())}


def _accelerator_limit(key: str) -> bool:
    """A limit on accelerators: a device-plugin resource, or the devices claimed with one
    DeviceClass (the render's cap of a DRA claims resource, plan.dra.namespace_quota_key)."""
    return key.endswith(dra.CLAIMS_PER_CLASS) or (
        key.removeprefix("requests.")
        .removeprefix("limits.")
        .startswith(nodeinfo.ACCELERATOR_PREFIXES)
    )


def volcano_teams(
    by_kind: Mapping[str, list[Imported]],
    pools: Sequence[Pool],
    tier_names: Sequence[str],
    inferred: Inferred,
) -> None:
    """Volcano Queues into the teams (`adopt.volcano`); the Fleet gains the volcano target, and
    loses kueue when the cluster has no Kueue object at all."""
    queues = [
        q for q in by_kind.get("Queue", []) if str(q.obj.get("apiVersion")).startswith(VOLCANO)
    ]
    if not queues:
        return
    named = {t["metadata"]["name"]: t for t in inferred.teams}
    adopted = adopt_queues(queues, pool_refs(pools), named, tier_names)
    inferred.diagnostics.extend(adopted.diagnostics)
    for team in adopted.teams:
        inferred.teams.append(team)
        name = team["metadata"]["name"]
        inferred.note("Team", name, f"Imported from Volcano Queue {name} (no Kueue ClusterQueue).")
    if not adopted.queues:
        return
    spec = inferred.fleet["spec"]
    kueue = any(is_queueing(items) for items in by_kind.values())
    # The targets found so far stay (gpu-operator, for a cluster with the operator's configs:
    # overwritten here, a Volcano cluster's MIG and device-plugin ConfigMaps were left out of
    # the policy and reported by drift as orphans once labelled).
    others = [t for t in spec["targets"] if t not in ("core", "kueue", "volcano")]
    spec["targets"] = [*(["core", "kueue"] if kueue else ["core"]), "volcano", *others]
    if not kueue:
        spec.pop("kueue", None)
    scheduler: dict[str, Any] = {}
    configs = by_kind.get("ConfigMap", [])
    inferred.diagnostics.extend(
        adopt_scheduler(configs, scheduler, binpack=_binpack(pools, inferred))
    )
    if scheduler:
        spec["volcano"] = scheduler


def _binpack(pools: Sequence[Pool], inferred: Inferred) -> set[str]:
    """The accelerators the render's binpack plugin is told (compilers' _binpack): those of
    pools placed binpack, which training pools are unless they say otherwise."""
    documents = {d["metadata"]["name"]: d["spec"] for d in inferred.pools}
    return {
        p.card.resource
        for p in pools
        if documents.get(p.name, {}).get(
            "placement",
            "binpack" if documents.get(p.name, {}).get("purpose") == "training" else "spread",
        )
        == "binpack"
    }
