"""Check stage, DRA family: pools on NVIDIA's DRA driver, their DeviceClasses, Kueue's
deviceClassMappings and the claim templates, which must agree with each other and with the quota
(facts in plan/dra.py; upstream rules cited per rule; docs/targets/dra.md)."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, note, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy, Pool
from hetgitops.plan import dra, routing
from hetgitops.plan.capacity import main_resource
from hetgitops.plan.job_targets import VOLCANO, scheduler
from hetgitops.plan.quota_plan import cohort_root

# Kueue v0.19.2 pkg/config/validation.go:484-486 and :506-508: a Configuration with more is
# refused, so none of its mappings applies and every claim template is unmapped.
MAX_MAPPINGS = 16
MAX_CLASSES_PER_MAPPING = 8
# resource.k8s.io/v1 (DeviceClass, ResourceClaimTemplate) is served from Kubernetes 1.34.
MIN_KUBERNETES = (1, 34)


def _dra_pools(policy: Policy) -> Iterator[Pool]:
    yield from (p for p in policy.pools.values() if dra.on_dra(p))


@rule("dra-kubernetes-version", Severity.ERROR)
def dra_kubernetes_version(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A pool on the DRA driver needs Kubernetes 1.34 or later (resource.k8s.io/v1).

    Fails: `versions.kubernetes: "1.33"` and a pool with `devices: {allocation: draClaims}`.
    Passes: `versions.kubernetes: "1.35"`.
    Fix: upgrade the cluster first, or keep the pool on the device plugin.
    """
    fleet = policy.fleet
    if fleet is None or fleet.kubernetes[:2] >= MIN_KUBERNETES:
        return
    for pool in _dra_pools(policy):
        yield error_at(
            "dra-kubernetes-version",
            f"pool '{pool.name}' uses the DRA driver, which needs Kubernetes 1.34 or later "
            f"(resource.k8s.io/v1); the fleet runs {'.'.join(map(str, fleet.kubernetes))}",
            pool.origin,
            "spec",
            "devices",
            "allocation",
            hint="upgrade Kubernetes first, or set allocation: devicePlugin",
        )


@rule("dra-card-unknown-to-driver", Severity.ERROR)
def dra_card_unknown_to_driver(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A DRA pool's card is one NVIDIA's driver publishes, with a product name and an
    architecture the DeviceClass can select (go-nvlib's architecture names).

    Fails: a pool of an Ascend card with `allocation: draClaims`.
    Passes: a pool of `h100-80gb` (nvidia, hopper, productNames set).
    Fix: keep the pool on its vendor's device plugin, or complete the CardType.
    """
    for pool in _dra_pools(policy):
        card = policy.card_type_of(pool)
        if card is None:
            continue
        why = ""
        if card.vendor != "nvidia":
            why = f"its vendor is '{card.vendor}'; hetgitops models NVIDIA's driver only"
        elif card.architecture not in dra.ARCHITECTURES:
            why = f"the driver publishes no architecture '{card.architecture}'"
        elif not card.product_names and dra.claims(pool):
            why = "its CardType names no productNames to select it by"
        if why:
            yield error_at(
                "dra-card-unknown-to-driver",
                f"pool '{pool.name}' cannot use the DRA driver {dra.DRIVER}: card type "
                f"'{card.name}': {why}",
                pool.origin,
                "spec",
                "devices",
                "allocation",
                hint="set allocation: devicePlugin, or fix the CardType",
            )


@rule("dra-selector", Severity.ERROR)
def dra_selector(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Each rendered DeviceClass selector is well formed and names only attributes and
    capacities the pinned driver (v25.12.0) publishes; `index` and `minor` are gone.

    Fails: a selector on `device.attributes['gpu.nvidia.com'].index`.
    Passes: a selector on `productName`, `architecture` and capacity `memory`.
    Fix: select on the attributes docs/targets/dra.md lists.
    """
    for fact in dra.device_classes(policy):
        for problem in dra.cel_problems(fact.cel, mig_device=fact.profile is not None):
            yield error_at(
                "dra-selector",
                f"DeviceClass '{fact.name}': {problem}",
                fact.pools[0].origin,
                "spec",
                "devices",
                hint="select on the driver's published attributes (docs/targets/dra.md)",
            )


@rule("dra-claims-topology", Severity.ERROR)
def dra_claims_topology(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """No topology-aware placement on DRA pools: Kueue's topology-aware scheduling does not
    count DRA devices (site/content/en/docs/concepts/dynamic_resource_allocation.md@v0.19.2);
    it reads node capacity from `status.allocatable` (pkg/cache/scheduler/
    tas_topology_tree.go:167), where neither claimed devices nor DRA-backed extended resources
    appear. A DRA pool's flavor therefore has no Topology (plan/flavors.py) and a profile asking
    for one cannot be admitted there.

    Fails: a profile with `topology: {preferred: rack}` routed to a `draClaims` pool.
    Passes: the same profile without `topology`.
    Fix: drop the profile's topology, or keep the pool on the device plugin.
    """
    fleet = policy.fleet
    if fleet is None or not fleet.topology_name:
        return
    router = routing.router(policy)
    for profile in sorted(policy.profiles.values(), key=lambda p: p.name):
        asked = "required" if profile.topology_required else "preferred"
        if not (profile.topology_required or profile.topology_preferred):
            continue
        claiming = sorted({r.pool.name for r in router.routes(profile) if dra.on_dra(r.pool)})
        if claiming:
            yield error_at(
                "dra-claims-topology",
                f"profile '{profile.name}' asks for topology-aware placement, but pool(s) "
                f"{', '.join(claiming)} get their GPUs from the DRA driver, which Kueue's "
                "topology-aware scheduling does not count",
                profile.origin,
                "spec",
                "topology",
                asked,
                hint="drop the profile's topology, or keep the pool on the device plugin",
            )


@rule("dra-device-plugin-on", Severity.ERROR)
def dra_device_plugin_on(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The device plugin is off where the DRA driver runs (both would hand out the same GPUs),
    except while the pool is `migratingFrom: devicePlugin`. Time-slicing and MPS are device
    plugin configurations, and the GPU Operator's per-node switch
    `nvidia.com/gpu.deploy.device-plugin` must not be "true".

    Fails: `allocation: draClaims` with `timeSlicing: {replicas: 4}`.
    Passes: `allocation: draClaims` alone.
    Fix: remove the sharing settings (or finish the migration), label the nodes
    `nvidia.com/gpu.deploy.device-plugin: "false"`.
    """
    for pool in _dra_pools(policy):
        if pool.migrating_from:
            continue
        field, why = "", ""
        if pool.time_slicing_replicas or pool.mps_replicas:
            field = "timeSlicing" if pool.time_slicing_replicas else "mps"
            why = f"its {field} is a device plugin configuration"
        elif pool.labels.get(dra.DEVICE_PLUGIN_SWITCH) == "true":
            field, why = "labels", f'it labels its nodes {dra.DEVICE_PLUGIN_SWITCH}: "true"'
        if why:
            yield error_at(
                "dra-device-plugin-on",
                f"pool '{pool.name}' uses the DRA driver but {why}: the device plugin would "
                "hand out the same GPUs",
                pool.origin,
                "spec",
                field,
                hint="turn the device plugin off there (nvidia.com/gpu.deploy.device-plugin: "
                '"false"), or set devices.migratingFrom: devicePlugin while nodes move',
            )


@rule("dra-extended-resource-shared", Severity.ERROR)
def dra_extended_resource_shared(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """One DeviceClass per extended resource name: with two, kube-scheduler and Kueue both take
    the newest (Kueue v0.19.2 pkg/dra/extended_resources.go:70-94) and every request gets that
    card type's devices. The driver's `gpu.nvidia.com` class already carries `nvidia.com/gpu`.

    Fails: two pools on `draExtendedResource` whose card types share `resourceName:
    example.com/gpu`.
    Passes: each card type its own `resourceName`.
    Fix: give each card type on the extended-resource path its own resourceName, or move one
    pool to `draClaims`.
    """
    seen: dict[str, dra.DeviceClassFact] = {}
    for fact in dra.device_classes(policy):
        name = fact.extended_resource_name
        if name is None:
            continue
        first = seen.setdefault(name, fact)
        if first is not fact:
            pool = fact.pools[0]
            yield error_at(
                "dra-extended-resource-shared",
                f"DeviceClasses '{first.name}' and '{fact.name}' both carry extended resource "
                f"'{name}': the newest takes every request",
                pool.origin,
                "spec",
                "devices",
                "allocation",
                hint="give each card type its own resourceName, or use allocation: draClaims",
                related=[note(f"card type '{first.card.name}'", first.pools[0].origin, "spec")],
            )


@rule("dra-extended-resource-unbacked", Severity.ERROR)
def dra_extended_resource_unbacked(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A pool on the extended-resource path requests a name a DeviceClass carries: MIG
    instances (`mig.nvidia.com` has no extendedResourceName) and renamed time-sliced resources
    are device-plugin names.

    Fails: `allocation: draExtendedResource` with a `mig` layout.
    Passes: whole cards on `nvidia.com/gpu`.
    Fix: use `allocation: draClaims` for MIG pools.
    """
    for pool in _dra_pools(policy):
        card = policy.card_type_of(pool)
        if card is None or dra.claims(pool):
            continue
        if pool.mig or main_resource(pool, card) != card.resource_name:
            yield error_at(
                "dra-extended-resource-unbacked",
                f"pool '{pool.name}' is on the extended-resource path, but no DeviceClass "
                "carries its MIG or renamed resources",
                pool.origin,
                "spec",
                "devices",
                "allocation",
                hint="use allocation: draClaims",
            )


@rule("dra-mapping-limits", Severity.ERROR)
def dra_mapping_limits(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every class a claim template names is mapped: Kueue refuses a Configuration with more
    than 16 deviceClassMappings (pkg/config/validation.go:484-486), leaving every class
    unmapped and every claiming workload inadmissible (pkg/dra/claims.go:212-219).

    Fails: claims pools needing 17 card types and MIG profiles.
    Passes: 16 or fewer.
    Fix: move some pools to `draExtendedResource` or the device plugin.
    """
    mapped = dra.mappings(policy)
    if len(mapped) <= MAX_MAPPINGS:
        return
    pool = next(p for p in _dra_pools(policy) if dra.claims(p))
    yield error_at(
        "dra-mapping-limits",
        f"the claims path needs {len(mapped)} Kueue deviceClassMappings; Kueue accepts at "
        f"most {MAX_MAPPINGS} and refuses the whole Configuration, leaving every class unmapped",
        pool.origin,
        "spec",
        "devices",
        "allocation",
        hint="move some pools to draExtendedResource or the device plugin",
    )


@rule("dra-cohort-units", Severity.WARNING)
def dra_cohort_units(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Quota units agree across a cohort: a card type charged as the device plugin's resource
    in one pool and as its DRA resource in another is two resources to Kueue, which does not
    check units across a cohort (site/.../setup_dra.md@v0.19.2), so the queues cannot borrow
    between them.

    Fails: teams of one cohort holding h100 quota in a device-plugin pool and a draClaims pool.
    Passes: both pools on the same path, or one `migratingFrom: devicePlugin`.
    Fix: move the pools of one card type together (or mark the move with migratingFrom).
    """
    paths: dict[tuple[str, str], dict[str, Pool]] = {}
    for team in sorted(policy.teams.values(), key=lambda t: t.name):
        root = cohort_root(policy, team.cohort) if team.cohort else team.name
        for quota in team.quotas:
            pool = policy.pools.get(quota.pool)
            card = policy.card_type_of(pool) if pool else None
            if pool is None or card is None or pool.migrating_from:
                continue
            paths.setdefault((root, card.name), {}).setdefault(main_resource(pool, card), pool)
    for (root, card_name), by_resource in sorted(paths.items()):
        if len(by_resource) > 1:
            pools = sorted(by_resource.values(), key=lambda p: p.name)
            yield warning_at(
                "dra-cohort-units",
                f"cohort '{root}' charges card type '{card_name}' as "
                f"{' and '.join(sorted(by_resource))}: Kueue cannot lend one to the other",
                pools[-1].origin,
                "spec",
                "devices",
                hint="move the card type's pools to one path, or mark the move with migratingFrom",
                related=[note(f"pool '{p.name}'", p.origin, "spec") for p in pools[:-1]],
            )


@rule("dra-volcano-claims", Severity.ERROR)
def dra_volcano_claims(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Volcano does not charge DRA claims to its queues: it counts a pod's container requests
    only (volcano v1.14.1 pkg/scheduler/api/pod_info.go:68-90), so a Volcano job on a claims
    pool would run outside every Volcano quota.

    Fails: a `volcano-job` profile routed to a `draClaims` pool.
    Passes: the profile on a device-plugin or extended-resource pool.
    Fix: narrow the profile's cardTypes, or keep the pool on the device plugin.
    """
    router = routing.router(policy)
    for profile in sorted(policy.profiles.values(), key=lambda p: p.name):
        if scheduler(policy.fleet, profile) != VOLCANO:
            continue
        claiming = sorted({r.pool.name for r in router.routes(profile) if dra.claims(r.pool)})
        if claiming:
            yield error_at(
                "dra-volcano-claims",
                f"profile '{profile.name}' is scheduled by Volcano, which does not charge DRA "
                f"claims to its queues, but may land on claims pool(s) {', '.join(claiming)}",
                profile.origin,
                "spec",
                "framework",
                hint="narrow the profile's cardTypes, or keep those pools on the device plugin",
            )
