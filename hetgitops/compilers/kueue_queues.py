"""Compile stage, target `kueue`: ClusterQueues, Cohorts and LocalQueues.

Every field Kueue's CRD defaults or webhook injects is written out explicitly, so a GitOps
controller comparing desired with live state sees no difference after apply.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hetgitops.compilers.core import team_label
from hetgitops.diagnostics import Span
from hetgitops.model import quantities
from hetgitops.model.policy import CohortSpec, Fleet, Policy, Pool, Team, derived
from hetgitops.output.manifests import Manifest, metadata
from hetgitops.plan.capacity import plugin_resources, retiring_held
from hetgitops.plan.flavors import flavor_name
from hetgitops.plan.namespace_labels import queue_selector
from hetgitops.plan.preemption_rules import preemption
from hetgitops.plan.quota_plan import FlavorPlan, covered_accelerators, host_entries, team_plan

TARGET = "kueue"
NEVER = "Never"
# v1beta2 merged v1beta1's `Borrow` / `Preempt` into `MayStopSearch`; Kueue < 0.15 knows only
# the old spellings.
V1BETA1_FUNGIBILITY = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


NOMINAL, BORROWING, LENDING = "nominalQuota", "borrowingLimit", "lendingLimit"


@dataclass(frozen=True)
class Quota:
    """One `spec.resourceGroups[].flavors[].resources[]` item of a ClusterQueue (rendered or
    live): the quantities as the object holds them (a string or a number; None when absent)."""

    flavor: str
    resource: str
    nominal: Any
    borrowing_limit: Any
    lending_limit: Any


@dataclass(frozen=True)
class QueueFlavor:
    """One `spec.resourceGroups[g].flavors[f]` entry; `items` are its `resources[]` as written."""

    name: str
    group: int
    index: int
    items: tuple[dict[str, Any], ...]

    @property
    def path(self) -> tuple[str | int, ...]:
        return ("spec", "resourceGroups", self.group, "flavors", self.index)

    @property
    def quotas(self) -> tuple[Quota, ...]:
        return tuple(
            Quota(self.name, str(r.get("name")), r.get(NOMINAL), r.get(BORROWING), r.get(LENDING))
            for r in self.items
        )

    def by_resource(self) -> dict[str, Mapping[str, Any]]:
        """The items by resource name (a repeated name: the last)."""
        return {str(r.get("name")): r for r in self.items}


def _dicts(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """The mappings of a list with their positions (anything else in it is not quota)."""
    if isinstance(value, list):
        yield from ((i, v) for i, v in enumerate(value) if isinstance(v, dict))


def queue_flavors(spec: Mapping[str, Any] | None) -> Iterator[QueueFlavor]:
    """The flavor entries of a ClusterQueue's `spec`, in order: the one reader of the shape
    `cluster_queue_spec` writes (diff, drift and import read quota through it)."""
    for g, group in _dicts((spec or {}).get("resourceGroups")):
        for f, flavor in _dicts(group.get("flavors")):
            items = tuple(r for _, r in _dicts(flavor.get("resources")))
            yield QueueFlavor(str(flavor.get("name")), g, f, items)


def queue_quotas(spec: Mapping[str, Any] | None) -> Iterator[Quota]:
    """Every (flavor, resource, nominal, borrowingLimit, lendingLimit) of a ClusterQueue."""
    for flavor in queue_flavors(spec):
        yield from flavor.quotas


def covered_resources(spec: Mapping[str, Any] | None) -> set[str]:
    """The resources any of the ClusterQueue's groups covers."""
    return {
        str(resource)
        for _, group in _dicts((spec or {}).get("resourceGroups"))
        for resource in group.get("coveredResources") or []
    }


def is_v1beta1(fleet: Fleet) -> bool:
    return fleet.kueue_api_version.endswith("/v1beta1")


def local_queue_name(fleet: Fleet, team: Team) -> str:
    return team.local_queue_name or fleet.local_queue_name or team.name


def fungibility(fleet: Fleet) -> dict[str, str]:
    values = {"whenCanBorrow": fleet.when_can_borrow, "whenCanPreempt": fleet.when_can_preempt}
    if is_v1beta1(fleet):
        return {k: V1BETA1_FUNGIBILITY[k] if v == "MayStopSearch" else v for k, v in values.items()}
    return values


def _entry(
    name: str, nominal: str | int, *, borrowing: str | int | None, lending: str | int | None
) -> dict[str, Any]:
    """Quantities as canonical strings: the API server returns them so (see `quantities`)."""
    entry: dict[str, Any] = {"name": name, NOMINAL: quantities.normalize(nominal)}
    if borrowing is not None:
        entry[BORROWING] = quantities.normalize(borrowing)
    if lending is not None:
        entry[LENDING] = quantities.normalize(lending)
    return entry


def _host(policy: Policy, team: Team, plan: FlavorPlan) -> list[dict[str, Any]]:
    """cpu and memory entries, from the plan `Reach` also counts (`host_entries`)."""
    return [
        _entry(name, entry.nominal, borrowing=entry.borrowing, lending=entry.lending)
        for name, entry in host_entries(policy, team, plan).items()
    ]


def flavor_quotas(
    policy: Policy, team: Team, plan: FlavorPlan, *, fleet: Fleet, covered: list[str]
) -> dict[str, Any]:
    """One flavor: every covered resource in coveredResources order (0 where the pool has
    none), as Kueue's webhook demands."""
    resources = _host(policy, team, plan)
    # A resource the plan does not list: the plan's limits for such (`FlavorPlan.foreign`).
    foreign_borrowing, foreign_lending = plan.foreign
    for name in covered[2:]:
        borrow = plan.borrowing.get(name, foreign_borrowing)
        lend = plan.lending.get(name, foreign_lending)
        resources.append(_entry(name, plan.nominal.get(name, 0), borrowing=borrow, lending=lend))
    return {"name": _flavor_name(policy, fleet, plan.pool), "resources": resources}


def _flavor_name(policy: Policy, fleet: Fleet, pool: Pool) -> str:
    """`flavor_name` once per pool: every team with quota in the pool names its flavor (the
    name digests the flavor's spec)."""
    if fleet is not policy.fleet:
        return flavor_name(policy, fleet, pool)
    return derived(policy, ("flavor_name", pool.name), lambda: flavor_name(policy, fleet, pool))


def _less(nominal: str, held: str | None) -> str:
    """What the new flavor keeps of `nominal` while the retiring one holds `held` (None: all)."""
    value, binary = quantities.parse(nominal)
    left = value - (value if held is None else quantities.value_of(held))
    return quantities.canonical(max(left, Decimal(0)), binary)


def _reduced(resource: dict[str, Any], held: str | None) -> dict[str, Any]:
    """Kueue's webhook wants lendingLimit <= nominalQuota (validateLendingLimit)."""
    reduced = {**resource, "nominalQuota": _less(resource["nominalQuota"], held)}
    lending = resource.get("lendingLimit")
    if lending is not None:
        nominal = reduced["nominalQuota"]
        if quantities.value_of(lending) > quantities.value_of(nominal):
            reduced["lendingLimit"] = nominal
    return reduced


def transition_quotas(
    policy: Policy, team: Team, plan: FlavorPlan, entry: dict[str, Any]
) -> list[dict[str, Any]]:
    """A pool with a retiring flavor: the new flavor's quota less what the retiring one holds
    (all of it unless `holds` says less, `retiring_held`), then the retiring flavor with the
    team's quota, so the usage Kueue keeps under its name (clusterqueue.go:596-606) stays
    inside this queue's accounting while its nodeTaint keeps new work off it. On a pool moving
    from the device plugin to DRA claims that work holds the plugin's resource: the retiring
    flavor gives it the quota of the mapped resource that replaces it (where the queue covers
    it), not the 0 a claims pool has for it."""
    retiring = plan.pool.retiring_flavor
    if retiring is None:
        return [entry]
    reduced = [
        _reduced(r, retiring_held(policy, plan.pool, team.name, r["name"]))
        for r in entry["resources"]
    ]
    mapped = {old: new for new, old in plugin_resources(policy, plan.pool).items()}
    by_name = {r["name"]: r for r in entry["resources"]}
    kept = [
        {**by_name[mapped[r["name"]]], "name": r["name"]}
        if mapped.get(r["name"]) in by_name
        else dict(r)
        for r in entry["resources"]
    ]
    return [{**entry, "resources": reduced}, {"name": retiring.name, "resources": kept}]


def cluster_queue_spec(policy: Policy, fleet: Fleet, team: Team) -> dict[str, Any]:
    plans = team_plan(policy, team)
    covered = ["cpu", "memory", *covered_accelerators(team, plans)]
    spec: dict[str, Any] = {}
    if team.cohort is not None:
        spec["cohort" if is_v1beta1(fleet) else "cohortName"] = team.cohort
    spec["namespaceSelector"] = queue_selector(fleet, team)
    spec["queueingStrategy"] = team.queueing_strategy or fleet.queueing_strategy
    spec["stopPolicy"] = team.stop_policy or "None"
    spec["flavorFungibility"] = fungibility(fleet)
    spec["preemption"] = preemption(policy, team)
    if plans:
        flavors = [
            quota
            for plan in plans
            for quota in transition_quotas(
                policy, team, plan, flavor_quotas(policy, team, plan, fleet=fleet, covered=covered)
            )
        ]
        spec["resourceGroups"] = [{"coveredResources": covered, "flavors": flavors}]
    if team.fair_sharing_weight is not None:
        spec["fairSharing"] = {"weight": quantities.normalize(team.fair_sharing_weight)}
    if team.admission_checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": admission_checks(policy, team)}
    return spec


def admission_checks(policy: Policy, team: Team) -> list[dict[str, Any]]:
    """`admissionChecksStrategy` entries; `onPools` become the pools' flavor names (a pool
    that does not resolve is the unresolved-reference check's, and is left out here)."""
    fleet = policy.fleet
    entries: list[dict[str, Any]] = []
    for check in team.admission_checks:
        entry: dict[str, Any] = {"name": check.name}
        pools = [policy.pools[p] for p in check.on_pools if p in policy.pools]
        if pools and fleet is not None:
            entry["onFlavors"] = [flavor_name(policy, fleet, p) for p in pools]
        entries.append(entry)
    return entries


def cluster_queue_parts(
    policy: Policy, team: Team
) -> tuple[tuple[tuple[str | int, ...], Span], ...]:
    """Each flavor entry of the ClusterQueue comes from the team's quota entry for that pool
    (in `cluster_queue_spec`'s order): drift and reviews point there, not at the Team."""
    return tuple(
        (("spec", "resourceGroups", 0, "flavors", index), plan.origin)
        for index, plan in enumerate(team_plan(policy, team))
    )


def cluster_queue(policy: Policy, fleet: Fleet, team: Team) -> dict[str, Any]:
    return {
        "apiVersion": fleet.kueue_api_version,
        "kind": "ClusterQueue",
        "metadata": metadata(fleet, team.name, labels={team_label(fleet): team.name}),
        "spec": cluster_queue_spec(policy, fleet, team),
    }


def _depth(fleet: Fleet, cohort: CohortSpec) -> int:
    parents = {c.name: c.parent for c in fleet.cohorts}
    depth, seen, name = 0, {cohort.name}, cohort.parent
    while name is not None and name not in seen:
        seen.add(name)
        depth, name = depth + 1, parents.get(name)
    return depth


def cohorts(fleet: Fleet) -> Iterator[Manifest]:
    """The cohort tree; `depth` puts parents before children in the output."""
    for cohort in fleet.cohorts:
        spec: dict[str, Any] = {"parentName": cohort.parent} if cohort.parent else {}
        if cohort.fair_sharing_weight is not None:
            spec["fairSharing"] = {"weight": quantities.normalize(cohort.fair_sharing_weight)}
        obj: dict[str, Any] = {
            "apiVersion": fleet.kueue_api_version,
            "kind": "Cohort",
            "metadata": metadata(fleet, cohort.name),
        }
        # No `spec: {}`: after an apply that set a field (a fairSharing weight), a server-side
        # apply of an empty spec leaves it null, and the CRD refuses "spec in body must be of
        # type object" (seen against the real API server with Kueue v0.19.2's CRD; Flux applies
        # server-side). Leaving spec out removes the field and applies.
        if spec:
            obj["spec"] = spec
        yield Manifest(TARGET, obj, cohort.origin.span, depth=_depth(fleet, cohort))


def local_queues(fleet: Fleet, team: Team, claimed: set[str]) -> Iterator[Manifest]:
    """One LocalQueue per team namespace; a namespace two teams list (reported by the checks)
    belongs to the first, as in the core target."""
    for index, namespace in enumerate(team.namespaces):
        if namespace in claimed:
            continue
        claimed.add(namespace)
        obj = {
            "apiVersion": fleet.kueue_api_version,
            "kind": "LocalQueue",
            "metadata": metadata(
                fleet,
                local_queue_name(fleet, team),
                namespace=namespace,
                labels={team_label(fleet): team.name},
            ),
            "spec": {"clusterQueue": team.name, "stopPolicy": team.stop_policy or "None"},
        }
        yield Manifest(TARGET, obj, team.origin.at("spec", "namespaces", index))


def queue_manifests(policy: Policy, fleet: Fleet) -> Iterator[Manifest]:
    yield from cohorts(fleet)
    claimed: set[str] = set()
    for team in policy.teams.values():
        yield Manifest(
            TARGET,
            cluster_queue(policy, fleet, team),
            team.origin.span,
            parts=cluster_queue_parts(policy, team),
        )
        yield from local_queues(fleet, team, claimed)
