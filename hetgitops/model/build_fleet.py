"""Model stage, building: the fleet-wide documents (`Fleet`, `LabelTaxonomy`, `Cluster`) into
their frozen dataclasses, with the defaults filled in where the policy says nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hetgitops.load.documents import Document
from hetgitops.model.fleet_types import (
    ALL_TARGETS,
    DEFAULT_CPU_PER_CARD,
    DEFAULT_MEMORY_PER_CARD,
    DEFAULT_RESERVED_PREFIXES,
    INLINE_CREDENTIAL_KEYS,
    Cluster,
    CohortSpec,
    DriftIgnore,
    ExtraAdmissionCheck,
    Fleet,
    LabelRule,
    LabelTaxonomy,
    Monitoring,
    RetiringTopology,
)
from hetgitops.model.origin import Origin
from hetgitops.model.spec_values import quantity


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """A version as the policy writes it (`v0.19.2`, `1.33`) as numbers to compare."""
    if text is None:
        return None
    return tuple(int(p) for p in text.lstrip("v").split("."))


def _monitoring(spec: dict[str, Any], origin: Origin) -> Monitoring:
    section = spec.get("monitoring")
    if section is None:
        return Monitoring()
    d = Monitoring()  # the defaults
    wait = section.get("admissionWait", {})
    budget = section.get("budget", {})
    idle = section.get("idle", {})
    return Monitoring(
        namespace=section.get("namespace", d.namespace),
        rule_labels=dict(sorted(section.get("ruleLabels", {}).items())),
        dashboard_label=section.get("dashboardLabel", d.dashboard_label),
        idle_percent=idle.get("utilisationPercent", d.idle_percent),
        idle_for=idle.get("for", d.idle_for),
        capacity_for=section.get("capacity", {}).get("for", d.capacity_for),
        pending_for=section.get("pendingWhileIdle", {}).get("for", d.pending_for),
        wait_percentile=wait.get("percentile", d.wait_percentile),
        wait_window=wait.get("window", d.wait_window),
        wait_default=wait.get("default", d.wait_default),
        wait_tiers=dict(sorted(wait.get("tiers", {}).items())),
        budget_percent=budget.get("percent", d.budget_percent),
        budget_window=budget.get("window", d.budget_window),
        mig_for=section.get("migLayout", {}).get("for", d.mig_for),
        queue_for=section.get("queueState", {}).get("for", d.queue_for),
        origin=origin.child("spec", "monitoring"),
    )


def fleet(doc: Document, spec: dict[str, Any], origin: Origin) -> Fleet:
    versions = spec["versions"]
    operator = spec.get("gpuOperator", {})
    kueue = spec.get("kueue", {})
    fungibility = kueue.get("flavorFungibility", {})
    volcano = spec.get("volcano", {})
    defaults = spec.get("defaults", {})
    topology = spec.get("topology")
    default_targets = [t for t in ALL_TARGETS if t != "volcano" or "volcano" in versions]
    return Fleet(
        name=doc.name,
        cluster=spec["cluster"],
        kubernetes=parse_version(versions["kubernetes"]) or (1, 33),
        kueue=parse_version(versions.get("kueue")),
        volcano=parse_version(versions.get("volcano")),
        gpu_operator=parse_version(versions.get("gpuOperator")),
        targets=tuple(spec.get("targets", default_targets)),
        label_domain=spec.get("labelDomain", "hetgitops.io"),
        koordinator_ratio=spec.get("koordinator", {}).get("resourceRatio", "1"),
        koordinator_multi_quota_tree=spec.get("koordinator", {}).get("multiQuotaTree", True),
        koordinator_min_quota_scale=spec.get("koordinator", {}).get("enableMinQuotaScale", False),
        gpu_operator_namespace=operator.get("namespace", "gpu-operator"),
        mig_strategy=operator.get("migStrategy", "mixed"),
        mig_config_name=operator.get("migConfigName", "hetgitops-mig-config"),
        device_plugin_config_name=operator.get(
            "devicePluginConfigName", "hetgitops-device-plugin-config"
        ),
        queueing_strategy=kueue.get("queueingStrategy", "BestEffortFIFO"),
        when_can_borrow=fungibility.get("whenCanBorrow", "MayStopSearch"),
        when_can_preempt=fungibility.get("whenCanPreempt", "TryNextFlavor"),
        local_queue_name=kueue.get("localQueueName"),
        volcano_actions=tuple(
            volcano.get("actions", ["enqueue", "allocate", "preempt", "reclaim", "backfill"])
        ),
        volcano_queue_plugin=_volcano_queue_plugin(volcano),
        volcano_hierarchy=_volcano_hierarchy(volcano),
        volcano_extra_plugins=tuple(volcano.get("extraPlugins", [])),
        cohorts=tuple(
            CohortSpec(
                c["name"],
                c.get("parent"),
                c.get("description", ""),
                origin.child("spec", "cohorts", i),
                quantity(c.get("fairSharingWeight")),
            )
            for i, c in enumerate(spec.get("cohorts", []))
        ),
        topology_name=None if topology is None else topology.get("name", "fleet-topology"),
        topology_levels=()
        if topology is None
        else tuple(topology.get("levels", ["zone", "rack", "hostname"])),
        cpu_per_card=str(defaults.get("cpuPerCard", DEFAULT_CPU_PER_CARD)),
        memory_per_card=str(defaults.get("memoryPerCard", DEFAULT_MEMORY_PER_CARD)),
        default_lifecycle_stages=tuple(
            defaults.get("lifecycleStages", ["production", "deprecated"])
        ),
        expiry_warning_days=spec.get("expiryWarningDays", 30),
        currency=spec.get("currency", "USD"),
        origin=origin,
        drift_ignores=tuple(
            DriftIgnore(
                rule["kind"],
                rule.get("name"),
                tuple(rule.get("jsonPointers", ())),
                tuple(rule.get("managers", ())),
                origin.child("spec", "drift", "ignore", i),
            )
            for i, rule in enumerate(spec.get("drift", {}).get("ignore", []))
        ),
        monitoring=_monitoring(spec, origin),
        topology_kueue_name=(topology or {}).get("topologyName"),
        topology_node_labels=tuple((topology or {}).get("nodeLabels", ())),
        volcano_tiers=None if "tiers" not in volcano else tuple(volcano["tiers"]),
        volcano_configurations=tuple(volcano.get("configurations", ())),
        volcano_metrics=dict(volcano.get("metrics", {})),
        volcano_settings=frozenset(volcano),
        retiring_topology=_retiring_topology((topology or {}).get("retiring"), origin),
        kueue_integrations=(
            None
            if "integrations" not in kueue.get("configuration", {})
            else tuple(kueue["configuration"]["integrations"])
        ),
        kueue_fair_sharing=kueue.get("configuration", {}).get("fairSharing"),
    )


def _retiring_topology(value: dict[str, Any] | None, origin: Origin) -> RetiringTopology | None:
    if value is None:
        return None
    return RetiringTopology(
        name=value["name"],
        node_labels=tuple(value["nodeLabels"]),
        origin=origin.child("spec", "topology", "retiring"),
    )


def _tier_plugins(volcano: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {p["name"]: p for tier in volcano.get("tiers", ()) for p in tier["plugins"]}


def _volcano_queue_plugin(volcano: Mapping[str, Any]) -> str:
    """Explicit tiers say which queue plugin runs (none: `none`); else `queuePlugin`."""
    if "tiers" not in volcano:
        return str(volcano.get("queuePlugin", "capacity"))
    plugins = _tier_plugins(volcano)
    return next((name for name in ("capacity", "proportion") if name in plugins), "none")


def _volcano_hierarchy(volcano: Mapping[str, Any]) -> bool:
    """Explicit tiers: whether their capacity plugin has enableHierarchy."""
    if "tiers" not in volcano:
        return bool(volcano.get("hierarchy", True))
    return _tier_plugins(volcano).get("capacity", {}).get("enableHierarchy") is True


def taxonomy(doc: Document, spec: dict[str, Any], origin: Origin) -> LabelTaxonomy:
    rules = tuple(
        LabelRule(
            r["key"],
            r["from"],
            r.get("required", True),
            tuple(r.get("allowedValues", ())),
            r.get("pattern"),
            origin.child("spec", "labels", i),
        )
        for i, r in enumerate(spec["labels"])
    )
    reserved = tuple(spec.get("reservedPrefixes", DEFAULT_RESERVED_PREFIXES))
    return LabelTaxonomy(doc.name, rules, reserved, origin)


def cluster(doc: Document, spec: dict[str, Any], origin: Origin) -> Cluster:
    versions = spec.get("versions", {})
    argocd = spec.get("argocd", {})
    credentials = spec.get("credentials", {})
    targets = spec.get("targets")
    return Cluster(
        name=doc.name,
        role=spec["role"],
        kubernetes=parse_version(versions.get("kubernetes")),
        kueue=parse_version(versions.get("kueue")),
        volcano=parse_version(versions.get("volcano")),
        gpu_operator=parse_version(versions.get("gpuOperator")),
        targets=None if targets is None else tuple(targets),
        region=spec.get("region"),
        site=spec.get("site"),
        argocd_name=argocd.get("name"),
        argocd_labels=dict(sorted(argocd.get("labels", {}).items())),
        secret=credentials.get("secret"),
        cluster_profile=credentials.get("clusterProfile"),
        inline_credentials=tuple(k for k in INLINE_CREDENTIAL_KEYS if k in credentials),
        dispatch_order=spec.get("dispatchOrder", 100),
        admission_checks=tuple(
            ExtraAdmissionCheck(
                c["name"],
                c["controllerName"],
                tuple(c.get("onFlavors", ())),
                origin.child("spec", "admissionChecks", i),
            )
            for i, c in enumerate(spec.get("admissionChecks", []))
        ),
        origin=origin,
    )
