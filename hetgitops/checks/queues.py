"""Check stage, queues family: what the Kueue and Volcano queues of the policy can hold."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, in_file_order
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.compilers.quota_plan import accelerator_resources, team_plan
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model import Fleet, Policy, Team

# Kueue per resource group: flavors and covered resources (16 before v0.14, PR #6906), and
# flavor x resource entries (v0.14 on).
OLD_LIMIT, LIMIT, MAX_ENTRIES = 16, 64, 512
QUEUE_PLUGINS = ("capacity", "proportion")


def _limit(fleet: Fleet) -> int:
    return OLD_LIMIT if fleet.kueue is not None and fleet.kueue < (0, 14) else LIMIT


@rule("kueue-limits", Severity.ERROR)
def kueue_limits(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team's ClusterQueue stays within Kueue's resource-group limits.

    One resource group holds cpu, memory and every accelerator resource of the team's pools,
    with one flavor per pool: at most 64 flavors and 64 resources (16 before Kueue 0.14),
    and at most 512 flavor x resource entries.
    Fails: `versions: {kueue: "0.13.0"}` and a team with quota in 17 pools.
    Passes: the same team with `kueue: "0.19.2"`.
    """
    fleet = policy.fleet
    if fleet is None or "kueue" not in fleet.targets:
        return
    limit = _limit(fleet)
    for team in policy.teams.values():
        plans = team_plan(policy, team)
        flavors, resources = len(plans), 2 + len(accelerator_resources(plans))
        if flavors > limit:
            yield _too_big(team, f"{flavors} flavors (one per pool)", limit, fleet)
        if resources > limit:
            yield _too_big(team, f"{resources} covered resources", limit, fleet)
        if limit == LIMIT and flavors * resources > MAX_ENTRIES:
            yield _too_big(
                team, f"{flavors * resources} flavor x resource entries", MAX_ENTRIES, fleet
            )


def _too_big(team: Team, what: str, limit: int, fleet: Fleet) -> Diagnostic:
    version = ".".join(map(str, fleet.kueue)) if fleet.kueue else "the target"
    return error_at(
        "kueue-limits",
        f"team '{team.name}' ClusterQueue would have {what}; Kueue {version} allows {limit}",
        team.origin,
        "spec",
        "quotas",
        key=True,
        hint="split the team, or give it quota in fewer pools",
    )


@rule("namespace-collision", Severity.ERROR)
def namespace_collision(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A namespace belongs to one team (its LocalQueue points at one ClusterQueue).

    Fails: teams `ml` and `vision` both list `namespaces: [shared]`.
    Passes: `namespaces: [ml]` and `namespaces: [vision]`.
    """
    owner: dict[str, tuple[Team, int]] = {}
    for team in in_file_order(policy.teams.values()):
        for index, namespace in enumerate(team.namespaces):
            first, at = owner.setdefault(namespace, (team, index))
            if first is not team:
                where = first.origin.at("spec", "namespaces", at)
                yield error_at(
                    "namespace-collision",
                    f"namespace '{namespace}' already belongs to team '{first.name}'",
                    team.origin,
                    "spec",
                    "namespaces",
                    index,
                    hint="give each team its own namespaces",
                    related=[where],
                )


@rule("volcano-plugin-conflict", Severity.ERROR)
def volcano_plugin_conflict(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The Volcano scheduler gets one queue plugin, and queue hierarchy needs `capacity`.

    Fails: `volcano: {queuePlugin: proportion}` (hierarchy defaults to true), or
    `extraPlugins: [proportion]` next to the default capacity plugin.
    Passes: `volcano: {queuePlugin: proportion, hierarchy: false}`.
    """
    fleet = policy.fleet
    if fleet is None:
        return
    # Checked even when the Fleet does not list the volcano target: `render --target volcano`
    # may still emit it, and the settings are wrong either way.
    volcano = ("spec", "volcano")
    if fleet.volcano_hierarchy and fleet.volcano_queue_plugin == "proportion":
        yield error_at(
            "volcano-plugin-conflict",
            "hierarchical queues need the capacity plugin, not proportion",
            fleet.origin,
            *volcano,
            "queuePlugin",
            hint="use queuePlugin: capacity, or set hierarchy: false",
        )
    for index, plugin in enumerate(fleet.volcano_extra_plugins):
        if plugin in QUEUE_PLUGINS and plugin != fleet.volcano_queue_plugin:
            yield error_at(
                "volcano-plugin-conflict",
                f"extra plugin '{plugin}' conflicts with queuePlugin "
                f"'{fleet.volcano_queue_plugin}'; Volcano must never run both",
                fleet.origin,
                *volcano,
                "extraPlugins",
                index,
                hint="choose the queue plugin with spec.volcano.queuePlugin only",
            )
