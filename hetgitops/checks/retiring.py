"""Check stage, retiring family: a pool carried through a ResourceFlavor rename, and the Fleet
through a Topology change (`spec.topology.retiring`, which its retiring flavors name).

`spec.kueue.retiringFlavor` quotes the live flavor a rename replaces (compilers/kueue_flavors.py).
The render cannot read the cluster, so these rules check what the policy alone can: that the
quoted flavor is not the new one, that its spec is the one its digest name was rendered from,
that the Topology it names is still rendered (Kueue deactivates a ClusterQueue whose TAS flavor
names a missing Topology), and that
`holds` names teams and resources the pool's queues have. While the entry stays, the pool's new
work is held back, so it is reported until it is removed.
"""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy, Pool, RetiringFlavor
from hetgitops.plan.capacity import plugin_resources
from hetgitops.plan.flavors import (
    IMMUTABLE_WITH_TOPOLOGY,
    flavor_name,
    identity,
    topology_name,
)
from hetgitops.plan.quota_plan import covered_accelerators, team_plan

REMOVE_WHEN_DRAINED = (
    "remove spec.kueue.retiringFlavor once `hetgitops diff --kubeconfig` shows no workload "
    "admitted on the flavor (their work finished); the removal gives the new flavor its full "
    "quota"
)


def _retiring(policy: Policy) -> Iterator[tuple[Pool, RetiringFlavor]]:
    for pool in policy.pools.values():
        if pool.retiring_flavor is not None:
            yield pool, pool.retiring_flavor


@rule("kueue-flavor-retiring", Severity.WARNING)
def flavor_retiring(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A pool carries a retiring ResourceFlavor: Kueue admits nothing new on it, keeps the
    work admitted there counted, and the pool's new flavor gets the team quotas less what
    `holds` says the retiring one still holds (all of it by default), so the pool takes new
    work only as far as that leaves room. Reported for as long as the entry stays.

    Fails: `kueue: {retiringFlavor: {name: l40s-infer-f397d926, ...}}` left in place.
    Passes: no `retiringFlavor` (removed once the old flavor's work finished).
    Fix: once `hetgitops diff --kubeconfig` shows 0 workloads admitted on the retiring
    flavor, remove `spec.kueue.retiringFlavor` in its own change; before that, lower the
    amounts under `holds` to what diff shows still admitted to let new work in.
    """
    for pool, retiring in _retiring(policy):
        held = "what `holds` states" if retiring.holds else "all of it"
        yield warning_at(
            "kueue-flavor-retiring",
            f"pool '{pool.name}' still carries retiring ResourceFlavor '{retiring.name}': Kueue "
            "admits nothing new on it and keeps its running work counted, and the new flavor "
            f"'{flavor_name(policy, policy.fleet, pool) if policy.fleet else pool.name}' gets "
            f"the team quotas less {held}",
            retiring.origin,
            "name",
            hint=REMOVE_WHEN_DRAINED,
        )


@rule("kueue-retiring-flavor-current")
def retiring_is_current(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The retiring flavor is the pool's current flavor: nothing was renamed, and the render
    would write two ResourceFlavors of one name.

    Fails: `retiringFlavor: {name: l40s-infer-f397d926}` while the pool still renders
    `l40s-infer-f397d926`.
    Passes: the name of the flavor the cluster has and the new render no longer writes.
    Fix: remove `spec.kueue.retiringFlavor` (the rename is not in this change), or quote the
    flavor `hetgitops diff` names in its kueue-flavor-renamed hazard.
    """
    if policy.fleet is None:
        return
    for pool, retiring in _retiring(policy):
        if retiring.name == flavor_name(policy, policy.fleet, pool):
            yield error_at(
                "kueue-retiring-flavor-current",
                f"retiring flavor '{retiring.name}' is pool '{pool.name}''s current "
                "ResourceFlavor: the pool's flavor is not renamed, so there is nothing to retire",
                retiring.origin,
                "name",
                hint="remove spec.kueue.retiringFlavor, or quote the flavor the rename replaces",
            )


@rule("kueue-retiring-flavor-not-live")
def retiring_not_live(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A retiring flavor named `<pool>-<digest>` quotes a spec that digest was not made of:
    it is not the live flavor, and the API server refuses the changed nodeLabels, tolerations
    or topologyName (Kueue's CRD makes them immutable once topologyName is set).

    Fails: `name: l40s-infer-f397d926` with nodeLabels other than the ones rendered then.
    Passes: the entry as `hetgitops diff` prints it, or as `kubectl get resourceflavor NAME
    -o yaml` shows its spec.
    Fix: paste the name and spec from the kueue-flavor-renamed hazard of `hetgitops diff`
    (or from the live object) without editing them.
    """
    for pool, retiring in _retiring(policy):
        prefix = f"{pool.name}-"
        digest = retiring.name.removeprefix(prefix)
        if not retiring.name.startswith(prefix) or len(digest) != 8:
            continue  # an adopted name: only the cluster knows its spec
        if not all(c in "0123456789abcdef" for c in digest):
            continue
        if identity(pool.name, retiring.spec, IMMUTABLE_WITH_TOPOLOGY) != retiring.name:
            yield error_at(
                "kueue-retiring-flavor-not-live",
                f"retiring flavor '{retiring.name}' is not the flavor its spec quotes: the "
                "nodeLabels, tolerations and topologyName given digest to "
                f"'{identity(pool.name, retiring.spec, IMMUTABLE_WITH_TOPOLOGY)}', so the "
                "live object differs and the API server refuses the update (immutable fields)",
                retiring.origin,
                key=True,
                hint="paste the entry `hetgitops diff` prints for the rename, unedited",
            )


@rule("kueue-retiring-flavor-topology")
def retiring_topology(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The retiring flavor names a Topology the render no longer writes (the topology itself
    changed) and the Fleet does not keep it as `spec.topology.retiring`: once the old Topology
    is pruned Kueue deactivates every ClusterQueue that lists the flavor (TopologyNotFound),
    which stops all of their admissions.

    Fails: `retiringFlavor: {topologyName: fleet-topology-6d6042ad}` after the Fleet's
    topology levels changed, without `topology: {retiring: {name: fleet-topology-6d6042ad}}`.
    Passes: a rename that keeps the Topology (a pool's labels or taints changed), or the old
    Topology kept as the Fleet's `spec.topology.retiring`.
    Fix: add the Fleet's `spec.topology.retiring` entry `hetgitops diff` prints (the old
    Topology's name and nodeLabels as live) in the same change; remove it only with the last
    retiring flavor that names it.
    """
    if policy.fleet is None:
        return
    current = topology_name(policy, policy.fleet) if policy.fleet.topology_name else None
    kept = policy.fleet.retiring_topology
    for _, retiring in _retiring(policy):
        named = retiring.spec.get("topologyName")
        if named is None or named == current or (kept is not None and named == kept.name):
            continue
        yield error_at(
            "kueue-retiring-flavor-topology",
            f"retiring flavor '{retiring.name}' names Topology '{named}', which the render "
            f"no longer writes ({f'it writes {current!r}' if current else 'it writes none'}): "
            "Kueue deactivates every ClusterQueue listing the flavor once it is gone",
            retiring.origin,
            "topologyName",
            hint=f"keep the old Topology in the same change: Fleet spec.topology.retiring: "
            f"{{name: {named}, nodeLabels: [its level labels as live]}} (the entry `hetgitops "
            "diff` prints); remove it only with the last retiring flavor naming it",
        )


@rule("kueue-topology-retiring", Severity.WARNING)
def topology_retiring(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The Fleet keeps its previous Topology (`spec.topology.retiring`) for retiring flavors
    whose work still runs. Reported for as long as the entry stays.

    Fails: `topology: {retiring: {name: fleet-topology-6d6042ad, ...}}` left in place.
    Passes: no `retiring` (removed with the last retiring flavor that named it).
    Fix: once `hetgitops diff --kubeconfig` shows nothing admitted on any retiring flavor
    naming it, remove those `retiringFlavor` entries and `spec.topology.retiring` in one change.
    """
    fleet = policy.fleet
    if fleet is None or fleet.retiring_topology is None:
        return
    retiring = fleet.retiring_topology
    users = sorted(
        r.name for _, r in _retiring(policy) if r.spec.get("topologyName") == retiring.name
    )
    if not users:
        return  # kueue-retiring-topology-unused's case
    yield warning_at(
        "kueue-topology-retiring",
        f"Topology '{retiring.name}' is kept for {len(users)} retiring flavor(s) "
        f"({', '.join(users[:4])}{', ...' if len(users) > 4 else ''}): Kueue keeps their "
        "running work counted and admits nothing new on them",
        retiring.origin,
        "name",
        hint="once `hetgitops diff --kubeconfig` shows nothing admitted on those flavors, remove "
        "their retiringFlavor entries and spec.topology.retiring in one change",
    )


@rule("kueue-retiring-topology-unused", Severity.WARNING)
def retiring_topology_unused(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The Fleet keeps a retiring Topology that no retiring flavor names: nothing needs it.

    Fails: `topology: {retiring: {...}}` after every `retiringFlavor` was removed.
    Passes: a pool's `retiringFlavor.topologyName` names it.
    Fix: remove `spec.topology.retiring` (Kueue lets the Topology go once no flavor names it).
    """
    fleet = policy.fleet
    if fleet is None or fleet.retiring_topology is None:
        return
    retiring = fleet.retiring_topology
    if retiring.name == (topology_name(policy, fleet) if fleet.topology_name else None):
        return  # kueue-retiring-topology-current's case
    if any(r.spec.get("topologyName") == retiring.name for _, r in _retiring(policy)):
        return
    yield warning_at(
        "kueue-retiring-topology-unused",
        f"retiring Topology '{retiring.name}' is named by no retiring flavor",
        retiring.origin,
        "name",
        hint="remove spec.topology.retiring",
    )


@rule("kueue-retiring-topology-current")
def retiring_topology_current(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The retiring Topology is the one the render writes now: the levels did not change, or
    the entry quotes the new Topology instead of the old one.

    Fails: `topology: {levels: [zone, rack, hostname], retiring: {name: <that Topology>}}`.
    Passes: `retiring` quotes the Topology the levels change replaces.
    Fix: quote the live Topology the change replaces (the entry `hetgitops diff` prints), or
    remove `spec.topology.retiring`.
    """
    fleet = policy.fleet
    if fleet is None or fleet.retiring_topology is None or not fleet.topology_name:
        return
    retiring = fleet.retiring_topology
    if retiring.name != topology_name(policy, fleet):
        return
    yield error_at(
        "kueue-retiring-topology-current",
        f"retiring Topology '{retiring.name}' is the Fleet's current Topology: nothing was "
        "replaced",
        retiring.origin,
        "name",
        hint="quote the Topology the levels change replaces, or remove spec.topology.retiring",
    )


@rule("kueue-retiring-topology-not-live")
def retiring_topology_not_live(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A retiring Topology named `<name>-<digest>` quotes node labels that digest was not made
    of: the render would write a Topology whose levels differ from the live one, and Kueue makes
    `levels` immutable, so the sync fails.

    Fails: `retiring: {name: fleet-topology-6d6042ad, nodeLabels: [topology.kubernetes.io/zone]}`
    when that Topology has three levels.
    Passes: the entry `hetgitops diff` prints, unedited.
    Fix: paste the entry `hetgitops diff` prints for the change, unedited.
    """
    fleet = policy.fleet
    if fleet is None or fleet.retiring_topology is None:
        return
    retiring = fleet.retiring_topology
    base = fleet.topology_name or ""
    digest = retiring.name.removeprefix(f"{base}-")
    if not base or digest == retiring.name or len(digest) != 8:
        return  # not a name hetgitops derived: nothing to check it against
    made = identity(base, {"levels": list(retiring.node_labels)}, ("levels",))
    if made == retiring.name:
        return
    yield error_at(
        "kueue-retiring-topology-not-live",
        f"retiring Topology '{retiring.name}' quotes node labels "
        f"{list(retiring.node_labels)}, which make '{made}': the quoted levels are not the "
        "live Topology's",
        retiring.origin,
        "nodeLabels",
        hint="paste the entry `hetgitops diff` prints for the change, unedited",
    )


@rule("kueue-retiring-hold-unknown")
def retiring_hold_unknown(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """`holds` names a team without quota on the pool, or a resource its ClusterQueue does
    not cover: the amount reserves nothing.

    Fails: `holds: {pretraining: {nvidia.com/gpu: 4}}` on a pool pretraining has no quota in.
    Passes: teams with quota on the pool, resource names as `hetgitops diff --kubeconfig`
    prints them (cpu, memory, nvidia.com/gpu, nvidia.com/mig-1g.10gb...).
    Fix: name the team's ClusterQueue and the Kueue resource names its flavor entry lists.
    """
    for pool, retiring in _retiring(policy):
        for team_name, amounts in retiring.holds.items():
            team = policy.teams.get(team_name)
            plans = [p for p in team_plan(policy, team) if p.pool.name == pool.name] if team else []
            if team is None or not plans:
                yield error_at(
                    "kueue-retiring-hold-unknown",
                    f"holds names team '{team_name}', which has no quota on pool '{pool.name}'",
                    retiring.origin,
                    "holds",
                    team_name,
                    key=True,
                    hint="list only teams with a quota on this pool",
                )
                continue
            covered = {"cpu", "memory", *covered_accelerators(team, plans)}
            # A pool moving from the device plugin: its running work holds the plugin's names.
            covered |= set(plugin_resources(policy, pool).values())
            for resource in sorted(set(amounts) - covered):
                yield error_at(
                    "kueue-retiring-hold-unknown",
                    f"holds gives team '{team_name}' resource '{resource}', which its queue "
                    f"does not cover on pool '{pool.name}' ({', '.join(sorted(covered))})",
                    retiring.origin,
                    "holds",
                    team_name,
                    resource,
                    key=True,
                    hint="use the Kueue resource names the team's flavor entry lists",
                )
