"""Check stage, fleet family: the Fleet document itself and its cohort tree."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, repeats, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity, Span, error
from hetgitops.model.policy import CohortSpec, Origin, Policy


@rule("missing-fleet", Severity.ERROR)
def missing_fleet(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A policy needs exactly one Fleet document (cluster name, target versions).

    When a Fleet document exists but did not load (schema, syntax, encoding), this is reported
    as a consequence of that finding.
    Fails: a directory with CardType, Pool and Team documents but no `kind: Fleet`.
    Passes: the same directory plus `fleet.yaml` with `kind: Fleet`.
    Fix: add a `fleet.yaml` with `kind: Fleet`, `spec.cluster` and `spec.versions.kubernetes`
    (`hetgitops init` writes one), or point hetgitops at the folder that holds it; when the Fleet
    document exists but failed to load, fix the error reported at it first.
    """
    if policy.fleet is not None:
        return
    origins: list[Origin] = [
        o.origin
        for group in (policy.card_types, policy.pools, policy.teams, policy.tiers, policy.profiles)
        for o in group.values()
    ]
    if policy.taxonomy is not None:
        origins.append(policy.taxonomy.origin)
    if not origins:
        return  # nothing usable was loaded; the loader's findings say why
    first = min(origin.source.file for origin in origins)
    yield error(
        "missing-fleet",
        "the policy has no Fleet document",
        Span(first),
        hint="add a document with kind: Fleet, spec.cluster and spec.versions.kubernetes",
    ).because(policy.unknown.kind("Fleet"))


# (target, the target it needs, what goes wrong without it)
_TARGET_NEEDS = (
    (
        "kueue",
        "core",
        "nothing labels the team namespaces that the ClusterQueues' namespaceSelector "
        "selects, so no workload is admitted",
    ),
    (
        "kueue",
        "nodes",
        "nothing puts the pool labels that the ResourceFlavors select on the nodes, so "
        "admitted workloads do not schedule",
    ),
    ("gpu-operator", "nodes", "no node carries the nvidia.com/mig.config label it acts on"),
    ("volcano", "nodes", "no node carries the volcano.sh/nodegroup-name label its queues bind to"),
)


@rule("targets-incomplete", Severity.WARNING)
def targets_incomplete(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Warn about a Fleet target whose objects select labels that no listed target sets.

    Fails (warns): `targets: [kueue]` (no `core` to label the team namespaces, no `nodes` to
    label the nodes); `targets: [core, volcano]`; `targets: [gpu-operator]`.
    Passes: `targets: [core, kueue, volcano, nodes, gpu-operator]`; `targets: [core, kueue]`
    when every pool's flavor selects labels the nodes already carry (`spec.kueue.nodeLabels`,
    as `hetgitops import` writes); `gpu-operator` without `nodes` when every MIG and shared
    pool keeps the config name its nodes are labelled with (`configName`, as import writes);
    `volcano` without `nodes` when every pool names the nodegroup its nodes already carry
    (`spec.volcano.nodeGroup`, as import writes).
    Fix: add the target the hint names to Fleet spec.targets (`core` labels team namespaces, `nodes`
    labels nodes), or accept the warning when another tool applies those labels; an imported fleet
    can declare the labels its nodes already carry in the pool's `spec.kueue.nodeLabels`.
    """
    if policy.fleet is None:
        return
    targets = set(policy.fleet.targets)
    own_labels = bool(policy.pools) and all(
        p.flavor_node_labels is not None for p in policy.pools.values()
    )
    # Adopted MIG and sharing config names: the nodes already carry those labels.
    own_configs = all(
        (not p.mig or p.mig_config_name) and (p.shared_replicas == 1 or p.sharing_config_name)
        for p in policy.pools.values()
    ) and any(p.mig_config_name or p.sharing_config_name for p in policy.pools.values())
    # Adopted Volcano nodegroups: the nodes already carry the label their queues bind to.
    own_groups = bool(policy.pools) and all(p.volcano_node_group for p in policy.pools.values())
    for target, needed, consequence in _TARGET_NEEDS:
        if target == "kueue" and needed == "nodes" and own_labels:
            continue
        if target == "volcano" and needed == "nodes" and own_groups:
            continue
        if target == "gpu-operator" and needed == "nodes" and own_configs:
            continue
        if target in targets and needed not in targets:
            yield warning_at(
                "targets-incomplete",
                f"target '{target}' without '{needed}': {consequence}",
                policy.fleet.origin,
                "spec",
                "targets",
                hint=f"add {needed} to spec.targets, unless something else applies those labels",
            )


@rule("cohort-duplicate", Severity.ERROR)
def cohort_duplicate(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Each Fleet cohort name is declared once.

    Fails: `cohorts: [{name: training}, {name: training, parent: org}]`.
    Passes: `cohorts: [{name: org}, {name: training, parent: org}]`.
    Fix: delete one of the two entries in Fleet.spec.cohorts, keeping the one with the intended
    `parent`; if they are meant to be two cohorts, rename one and move its teams' `cohort` with it.
    """
    if policy.fleet is None:
        return
    for first, cohort in repeats(policy.fleet.cohorts, lambda c: c.name):
        yield error_at(
            "cohort-duplicate",
            f"cohort '{cohort.name}' is already declared at {first.origin.at('name')}",
            cohort.origin,
            "name",
            hint="remove one of the two entries",
            related=[Related(first.origin.at("name"), "first declared here")],
        )


@rule("cohort-cycle", Severity.ERROR)
def cohort_cycle(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The cohort tree has no cycle (Kueue disables every cohort in a cycle).

    Fails: `{name: a, parent: b}` and `{name: b, parent: a}`.
    Passes: `{name: a}` and `{name: b, parent: a}`.
    Fix: remove the `parent` of one cohort in the loop the finding names, so the tree has a root
    (usually the organisation-wide cohort has no parent).
    """
    if policy.fleet is None:
        return
    by_name: dict[str, CohortSpec] = {}
    for cohort in policy.fleet.cohorts:
        by_name.setdefault(cohort.name, cohort)
    done: set[str] = set()
    for cohort in policy.fleet.cohorts:
        cycle = _walk(cohort.name, by_name, done)
        if cycle:
            # Report at the member written first, so one cycle gives one finding.
            members = [by_name[n] for n in cycle]
            first = min(members, key=lambda c: c.origin.base)
            yield error_at(
                "cohort-cycle",
                "cohort cycle: " + " -> ".join([*cycle, cycle[0]]),
                first.origin,
                "parent",
                hint="a cohort tree needs a root: remove one parent",
                related=[
                    Related(m.origin.at("parent"), f"cohort '{m.name}' has parent '{m.parent}'")
                    for m in members
                    if m is not first
                ],
            )


def _walk(start: str, by_name: dict[str, CohortSpec], done: set[str]) -> list[str]:
    """Follow parents from `start`; the cycle found on the way, if any. Each name is walked
    once over all calls (`done`), so the whole rule is linear in the number of cohorts."""
    path: list[str] = []
    on_path: set[str] = set()
    name: str | None = start
    while name is not None and name in by_name and name not in done:
        if name in on_path:
            done.update(path)
            return path[path.index(name) :]
        path.append(name)
        on_path.add(name)
        name = by_name[name].parent
    done.update(path)
    return []
