"""Model stage, building: `Team`, `PriorityTier` and `WorkloadProfile` documents into their
frozen dataclasses (a team's lifecycle stages default to the Fleet's)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from hetgitops.load.documents import Document
from hetgitops.model.fleet_types import Fleet
from hetgitops.model.origin import Origin
from hetgitops.model.spec_values import quantity
from hetgitops.model.team_types import (
    AdmissionCheckRef,
    Grant,
    Preemption,
    PriorityTier,
    Quota,
    RayGroup,
    RaySpec,
    Team,
    WorkloadProfile,
)


def _grants(entries: Iterable[dict[str, Any]], origin: Origin) -> tuple[Grant, ...]:
    """A quota entry's time-boxed grants (the schema checked the dates' format)."""
    return tuple(
        Grant(
            g["cards"],
            dt.date.fromisoformat(g["from"]),
            dt.date.fromisoformat(g["until"]),
            g.get("reason"),
            origin.child("grants", i),
        )
        for i, g in enumerate(entries)
    )


def team(doc: Document, spec: dict[str, Any], origin: Origin, fleet: Fleet | None) -> Team:
    preemption = spec.get("preemption", {})
    borrow = preemption.get("borrowWithinCohort", {})
    budget = spec.get("budget", {})
    stages = spec.get("lifecycleStages")
    if stages is None:
        stages = fleet.default_lifecycle_stages if fleet else ("production", "deprecated")
    return Team(
        name=doc.name,
        namespaces=tuple(spec["namespaces"]),
        cohort=spec.get("cohort"),
        quotas=tuple(
            Quota(
                q["pool"],
                q.get("cards"),
                q.get("normalized"),
                dict(q.get("mig", {})),
                q.get("borrowingLimit"),
                q.get("lendingLimit"),
                origin.child("spec", "quotas", i),
                _grants(q.get("grants", ()), origin.child("spec", "quotas", i)),
                host_limits=q.get("hostLimits", True),
                cpu_per_card=quantity(q.get("cpuPerCard")),
                memory_per_card=quantity(q.get("memoryPerCard")),
                mig_borrowing_limits=dict(sorted(q.get("migBorrowingLimits", {}).items())),
                mig_lending_limits=dict(sorted(q.get("migLendingLimits", {}).items())),
                limits_cover_all=q.get("limitsCoverAll", False),
            )
            for i, q in enumerate(spec["quotas"])
        ),
        tiers=tuple(spec["tiers"]),
        lifecycle_stages=tuple(stages),
        budget_monthly=budget.get("monthly"),
        budget_currency=budget.get("currency"),
        preemption=Preemption(
            preemption.get("withinClusterQueue"),
            preemption.get("reclaimWithinCohort"),
            borrow.get("policy"),
            borrow.get("maxPriorityThreshold"),
        ),
        queueing_strategy=spec.get("queueingStrategy"),
        cpu_per_card=quantity(spec.get("cpuPerCard")),
        memory_per_card=quantity(spec.get("memoryPerCard")),
        volcano_weight=spec.get("volcano", {}).get("weight"),
        guarantee_percent=spec.get("volcano", {}).get("guaranteePercent"),
        volcano_reclaimable=spec.get("volcano", {}).get("reclaimable"),
        volcano_parent=spec.get("volcano", {}).get("parent"),
        volcano_omit_capability=spec.get("volcano", {}).get("omitCapability", False),
        **_volcano_layout(spec.get("volcano", {})),
        namespace_quota_name=spec.get("namespaceQuota", {}).get("name"),
        namespace_quota_hard={
            str(k): str(v)
            for k, v in sorted(spec.get("namespaceQuota", {}).get("hard", {}).items())
        },
        namespace_quota_accelerators=_accelerators(spec.get("namespaceQuota", {})),
        volcano_queue_names=dict(sorted(spec.get("volcano", {}).get("queueNames", {}).items())),
        namespace_labels={
            str(k): str(v) for k, v in sorted(spec.get("namespaceLabels", {}).items())
        },
        origin=origin,
        manager_quota={k: str(v) for k, v in sorted(spec.get("managerQuota", {}).items())},
        local_queue_name=spec.get("kueue", {}).get("localQueueName"),
        covered_resources=_covered(spec.get("kueue", {}).get("coveredResources")),
        stop_policy=spec.get("kueue", {}).get("stopPolicy"),
        namespace_selector=spec.get("kueue", {}).get("namespaceSelector"),
        fair_sharing_weight=quantity(spec.get("kueue", {}).get("fairSharingWeight")),
        admission_checks=tuple(
            AdmissionCheckRef(c["name"], tuple(c.get("onPools", ())))
            for c in spec.get("kueue", {}).get("admissionChecks", [])
        ),
    )


def _accelerators(quota: Mapping[str, Any]) -> dict[str, str] | None:
    caps = quota.get("accelerators")
    if caps is None:
        return None
    return {str(k): str(quantity(v)) for k, v in sorted(caps.items())}


def tier(doc: Document, spec: dict[str, Any], origin: Origin) -> PriorityTier:
    return PriorityTier(
        doc.name,
        spec["value"],
        spec.get("preemptionPolicy", "PreemptLowerPriority"),
        spec.get("preemptible", False),
        spec.get("globalDefault", False),
        spec.get("description", ""),
        origin,
        workload_description=spec.get("workloadDescription"),
    )


def profile(doc: Document, spec: dict[str, Any], origin: Origin) -> WorkloadProfile:
    req = spec["requirements"]
    probes = spec.get("probes", {})
    topology = spec.get("topology", {})
    teams, card_types = spec.get("teams"), spec.get("cardTypes")
    if card_types is None and spec.get("ray", {}).get("workerGroups"):
        # Heterogeneous Ray groups name their card types: only those are eligible.
        card_types = list(dict.fromkeys(g["cardType"] for g in spec["ray"]["workerGroups"]))
    return WorkloadProfile(
        name=doc.name,
        framework=spec["framework"],
        tier=spec["tier"],
        teams=None if teams is None else tuple(teams),
        cards_per_node=req["cardsPerNode"],
        gang=req.get("gang", 1),
        min_memory_gib=req.get("minMemoryGiB"),
        interconnect=tuple(req.get("interconnect", ())),
        precisions=tuple(req.get("precisions", ())),
        vendors=tuple(req.get("vendors", ())),
        purposes=tuple(req.get("purposes", ())),
        mig_profile=req.get("migProfile"),
        card_types=None if card_types is None else tuple(card_types),
        performance=dict(sorted(spec.get("performance", {}).items())),
        image=spec.get("image"),
        command=tuple(spec.get("command", ())),
        env=dict(sorted(spec.get("env", {}).items())),
        cpu_per_card=quantity(spec.get("cpuPerCard")),
        memory_per_card=quantity(spec.get("memoryPerCard")),
        port=spec.get("port", 29500),
        probe_initial_delay=probes.get("initialDelaySeconds", 300),
        probe_period=probes.get("periodSeconds", 60),
        probe_failure_threshold=probes.get("failureThreshold", 5),
        topology_preferred=topology.get("preferred"),
        topology_required=topology.get("required"),
        origin=origin,
        ray=_ray(spec.get("ray")),
    )


def _ray(spec: dict[str, Any] | None) -> RaySpec | None:
    if spec is None:
        return None
    head = spec.get("head", {})
    return RaySpec(
        groups=tuple(
            RayGroup(g["name"], g["cardType"], g.get("replicas", 1))
            for g in spec.get("workerGroups", ())
        ),
        head_pool=head.get("pool"),
        head_cpu=quantity(head.get("cpu")),
        head_memory=quantity(head.get("memory")),
        autoscaling=spec.get("autoscaling", False),
        elastic=spec.get("elasticSlicing", False),
        submission_mode=spec.get("submissionMode", "K8sJobMode"),
        resource_name=spec.get("resourceName"),
        serve_config=spec.get("serveConfigV2"),
    )


def _volcano_layout(volcano: Mapping[str, Any]) -> dict[str, Any]:
    """`spec.volcano`'s team-queue settings (layout, queueName, resources, omitDeserved,
    capability, deserved), as Team fields."""

    def amounts(field: str) -> dict[str, str] | None:
        values = volcano.get(field)
        return None if values is None else {str(k): str(v) for k, v in sorted(values.items())}

    return {
        "volcano_layout": volcano.get("layout", "pool"),
        "volcano_queue_name": volcano.get("queueName"),
        "volcano_resources": volcano.get("resources", "all"),
        "volcano_omit_deserved": volcano.get("omitDeserved", False),
        "volcano_capability": amounts("capability"),
        "volcano_deserved": amounts("deserved"),
    }


def _covered(listed: Any) -> tuple[str, ...] | None:
    """`kueue.coveredResources` as written (None when left out)."""
    return None if listed is None else tuple(str(r) for r in listed)
