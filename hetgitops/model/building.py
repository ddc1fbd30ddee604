"""Model stage, second half: turn schema-valid documents into the immutable Policy."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hetgitops.diagnostics import Cause, Diagnostic, error, register_rules
from hetgitops.load.documents import Document, Loss
from hetgitops.model.dangling import with_dangling
from hetgitops.model.policy import (
    ALL_TARGETS,
    DEFAULT_CPU_PER_CARD,
    DEFAULT_MEMORY_PER_CARD,
    DEFAULT_RESERVED_PREFIXES,
    INLINE_CREDENTIAL_KEYS,
    AdmissionCheckRef,
    CardType,
    Cluster,
    CohortSpec,
    DriftIgnore,
    ExtraAdmissionCheck,
    Fleet,
    LabelRule,
    LabelTaxonomy,
    MigDevice,
    Monitoring,
    Node,
    Origin,
    Performance,
    Policy,
    Pool,
    Preemption,
    PriorityTier,
    Quota,
    RayGroup,
    RaySpec,
    RetiringFlavor,
    RetiringTopology,
    Taint,
    Team,
    WorkloadProfile,
    parse_version,
)
from hetgitops.model.ranges import RangeError, expand
from hetgitops.model.unknowns import unknowns

# Rule ids the model stage reports while building the Policy (the checks register their own).
register_rules(
    "model",
    {
        "node-range-invalid": "A node name range in a Pool cannot be expanded: malformed, "
        "ending before it starts, over 10,000 names, or giving invalid node names.\n"
        "Fails: `names: gpu-[10:1]`.\nPasses: `names: gpu-[01:10]`.\n"
        "Fix: write ranges as name-[001:064] or name-[1,3,5:7], low bound first.",
        "duplicate-singleton": "A policy has one Fleet and one LabelTaxonomy; a second one is "
        "refused, since which one wins would depend on file order.\n"
        "Fails: two files each with `kind: Fleet`.\nPasses: one Fleet document.\n"
        "Fix: merge the two documents into one.",
    },
)


def _quantity(value: Any) -> str | None:
    return None if value is None else str(value)


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


def _fleet(doc: Document, spec: dict[str, Any], origin: Origin) -> Fleet:
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
                _quantity(c.get("fairSharingWeight")),
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


def _taxonomy(doc: Document, spec: dict[str, Any], origin: Origin) -> LabelTaxonomy:
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


def _card_type(doc: Document, spec: dict[str, Any], origin: Origin) -> CardType:
    perf = spec.get("performance")
    cost = spec.get("cost", {})
    return CardType(
        name=doc.name,
        vendor=spec["vendor"],
        model=spec["model"],
        resource_name=spec["resourceName"],
        product_names=tuple(spec.get("productNames", ())),
        pci_device_ids=tuple(spec.get("pciDeviceIds", ())),
        memory_gib=float(spec["memoryGiB"]),
        architecture=spec.get("architecture", ""),
        generation=spec.get("generation", ""),
        interconnect=spec.get("interconnect", "pcie"),
        precisions=tuple(spec.get("precisions", ())),
        mig_table=spec.get("mig", {}).get("profileTable"),
        performance=None
        if perf is None
        else Performance(
            float(perf["coefficient"]),
            perf["reference"],
            perf.get("benchmark", ""),
            perf.get("measuredOn"),
            perf["coefficientSet"],
        ),
        cost_per_hour=cost.get("perCardHour"),
        currency=cost.get("currency"),
        power_watts=spec.get("powerWatts"),
        lifecycle=spec["lifecycle"],
        images=dict(sorted(spec.get("images", {}).items())),
        origin=origin,
    )


def _nodes(spec: dict[str, Any], origin: Origin, problems: list[Diagnostic]) -> tuple[Node, ...]:
    nodes: list[Node] = []
    for i, group in enumerate(spec["nodes"]):
        where = origin.child("spec", "nodes", i)
        patterns = group["names"] if isinstance(group["names"], list) else [group["names"]]
        for j, pattern in enumerate(patterns):
            path = ("names", j) if isinstance(group["names"], list) else ("names",)
            try:
                names = expand(pattern)
            except RangeError as exc:
                problems.append(
                    error(
                        "node-range-invalid",
                        str(exc),
                        where.at(*path),
                        "spec.nodes",
                        "write ranges as name-[001:064]",
                    )
                )
                continue
            # One group's values and origin for all its nodes (thousands in a large pool).
            cards, zone, rack = (
                group.get("cardsPerNode", spec["cardsPerNode"]),
                group.get("zone"),
                group.get("rack"),
            )
            domain, at = group.get("nvlinkDomain"), where.child(*path)
            nodes.extend(Node(name, cards, zone, rack, domain, at) for name in names)
    return tuple(nodes)


def _pool(doc: Document, spec: dict[str, Any], origin: Origin, problems: list[Diagnostic]) -> Pool:
    lending = spec.get("lending", {})
    sharing = spec.get("timeSlicing", {})
    expires = spec.get("expires")
    return Pool(
        name=doc.name,
        card_type=spec["cardType"],
        purpose=spec["purpose"],
        cards_per_node=spec["cardsPerNode"],
        nodes=_nodes(spec, origin, problems),
        placement=spec.get("placement", "binpack" if spec["purpose"] == "training" else "spread"),
        taints=tuple(
            Taint(t["key"], t.get("value"), t["effect"], t.get("evictsRunningPods", False))
            for t in spec.get("taints", [])
        ),
        isolated=spec.get("isolated", False),
        lend_max_percent=lending.get("maxPercent"),
        reclaim=lending.get("reclaim", True),
        mig=tuple(
            MigDevice(
                None if d["gpus"] == "all" else tuple(d["gpus"]),
                dict(d["profiles"]),
                origin.child("spec", "mig", "devices", i),
            )
            for i, d in enumerate(spec.get("mig", {}).get("devices", []))
        ),
        time_slicing_replicas=sharing.get("replicas"),
        rename_by_default=sharing.get("renameByDefault", False),
        fail_requests_greater_than_one=sharing.get("failRequestsGreaterThanOne", False),
        mps_replicas=spec.get("mps", {}).get("replicas"),
        expires=None if expires is None else dt.date.fromisoformat(expires),
        labels=dict(sorted(spec.get("labels", {}).items())),
        origin=origin,
        cluster=spec.get("cluster"),
        flavor_name=spec.get("kueue", {}).get("flavorName"),
        flavor_node_labels=_optional_map(spec.get("kueue", {}).get("nodeLabels")),
        volcano_node_group=spec.get("volcano", {}).get("nodeGroup"),
        mig_config_name=spec.get("mig", {}).get("configName"),
        sharing_config_name=sharing.get("configName") or spec.get("mps", {}).get("configName"),
        retiring_flavor=_retiring_flavor(spec.get("kueue", {}).get("retiringFlavor"), origin),
        retiring_replicas=sharing.get("retiringReplicas")
        if sharing.get("replicas")
        else spec.get("mps", {}).get("retiringReplicas"),
    )


RETIRING_SPEC_FIELDS = ("nodeLabels", "tolerations", "topologyName")


def _retiring_flavor(value: dict[str, Any] | None, origin: Origin) -> RetiringFlavor | None:
    """The live flavor's spec is kept as written: it must equal the live object to the byte."""
    if value is None:
        return None
    return RetiringFlavor(
        name=value["name"],
        spec={f: value[f] for f in RETIRING_SPEC_FIELDS if f in value},
        holds={
            str(team): {str(r): str(q) for r, q in sorted(amounts.items())}
            for team, amounts in sorted((value.get("holds") or {}).items())
        },
        origin=origin.child("spec", "kueue", "retiringFlavor"),
    )


def _cluster(doc: Document, spec: dict[str, Any], origin: Origin) -> Cluster:
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


def _tracked_pool(
    doc: Document,
    spec: dict[str, Any],
    origin: Origin,
    problems: list[Diagnostic],
    incomplete: dict[str, Cause],
) -> Pool:
    """A pool whose inventory did not expand is `incomplete`: its capacity is unknown, and
    findings computed from it would only repeat the node-range error."""
    before = len(problems)
    pool = _pool(doc, spec, origin, problems)
    if len(problems) > before:
        incomplete[pool.name] = problems[before].cause
    return pool


def _team(doc: Document, spec: dict[str, Any], origin: Origin, fleet: Fleet | None) -> Team:
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
        cpu_per_card=_quantity(spec.get("cpuPerCard")),
        memory_per_card=_quantity(spec.get("memoryPerCard")),
        volcano_weight=spec.get("volcano", {}).get("weight"),
        guarantee_percent=spec.get("volcano", {}).get("guaranteePercent"),
        volcano_reclaimable=spec.get("volcano", {}).get("reclaimable"),
        volcano_parent=spec.get("volcano", {}).get("parent"),
        volcano_omit_capability=spec.get("volcano", {}).get("omitCapability", False),
        namespace_quota_name=spec.get("namespaceQuota", {}).get("name"),
        namespace_quota_hard={
            str(k): str(v)
            for k, v in sorted(spec.get("namespaceQuota", {}).get("hard", {}).items())
        },
        volcano_queue_names=dict(sorted(spec.get("volcano", {}).get("queueNames", {}).items())),
        origin=origin,
        manager_quota={k: str(v) for k, v in sorted(spec.get("managerQuota", {}).items())},
        local_queue_name=spec.get("kueue", {}).get("localQueueName"),
        stop_policy=spec.get("kueue", {}).get("stopPolicy"),
        namespace_selector=spec.get("kueue", {}).get("namespaceSelector"),
        fair_sharing_weight=_quantity(spec.get("kueue", {}).get("fairSharingWeight")),
        admission_checks=tuple(
            AdmissionCheckRef(c["name"], tuple(c.get("onPools", ())))
            for c in spec.get("kueue", {}).get("admissionChecks", [])
        ),
    )


def _optional_map(value: dict[str, Any] | None) -> dict[str, str] | None:
    return None if value is None else {str(k): str(v) for k, v in sorted(value.items())}


def _tier(doc: Document, spec: dict[str, Any], origin: Origin) -> PriorityTier:
    return PriorityTier(
        doc.name,
        spec["value"],
        spec.get("preemptionPolicy", "PreemptLowerPriority"),
        spec.get("preemptible", False),
        spec.get("globalDefault", False),
        spec.get("description", ""),
        origin,
    )


def _profile(doc: Document, spec: dict[str, Any], origin: Origin) -> WorkloadProfile:
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
        cpu_per_card=_quantity(spec.get("cpuPerCard")),
        memory_per_card=_quantity(spec.get("memoryPerCard")),
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
        head_cpu=_quantity(head.get("cpu")),
        head_memory=_quantity(head.get("memory")),
        autoscaling=spec.get("autoscaling", False),
        elastic=spec.get("elasticSlicing", False),
        submission_mode=spec.get("submissionMode", "K8sJobMode"),
        resource_name=spec.get("resourceName"),
        serve_config=spec.get("serveConfigV2"),
    )


def _by_name(items: Iterable[Any]) -> dict[str, Any]:
    return {item.name: item for item in sorted(items, key=lambda i: i.name)}


def build_policy(
    documents: list[Document], losses: Iterable[Loss] = ()
) -> tuple[Policy, list[Diagnostic]]:
    """Build the model from documents that passed the schema; `losses` (files and documents
    that did not load or failed the schema) become the policy's unknown facts."""
    problems: list[Diagnostic] = []
    by_kind: dict[str, list[Document]] = {}
    for doc in documents:
        by_kind.setdefault(doc.kind, []).append(doc)
    problems.extend(_singletons(by_kind))
    fleet = next(
        (_fleet(d, d.data["spec"], Origin(d.source)) for d in by_kind.get("Fleet", [])), None
    )
    taxonomy = next(
        (_taxonomy(d, d.data["spec"], Origin(d.source)) for d in by_kind.get("LabelTaxonomy", [])),
        None,
    )

    def build(kind: str, make: Callable[[Document, dict[str, Any], Origin], Any]) -> dict[str, Any]:
        return _by_name(make(d, d.data["spec"], Origin(d.source)) for d in by_kind.get(kind, []))

    incomplete: dict[str, Cause] = {}
    pools = build("Pool", lambda d, s, o: _tracked_pool(d, s, o, problems, incomplete))
    policy = Policy(
        fleet=fleet,
        taxonomy=taxonomy,
        card_types=build("CardType", _card_type),
        pools=pools,
        teams=build("Team", lambda d, s, o: _team(d, s, o, fleet)),
        tiers=build("PriorityTier", _tier),
        profiles=build("WorkloadProfile", _profile),
        unknown=unknowns(losses, [(d.kind, d.name) for d in documents], incomplete),
        clusters=build("Cluster", _cluster),
    )
    return with_dangling(policy), problems


def _singletons(by_kind: dict[str, list[Document]]) -> Iterable[Diagnostic]:
    for kind in ("Fleet", "LabelTaxonomy"):
        for extra in by_kind.get(kind, [])[1:]:
            first = by_kind[kind][0]
            yield error(
                "duplicate-singleton",
                f"a policy has one {kind}; another is at {first.span}",
                extra.source.at(("kind",)),
                "kind",
                f"merge the two {kind} documents",
            )
