"""Check stage, queues family: what the Kueue and Volcano queues of the policy can hold."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from hetgitops.checks._common import error_at, in_file_order, note, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity, Span
from hetgitops.model.policy import Fleet, Origin, Policy, Team
from hetgitops.plan.quota_plan import covered_accelerators, team_plan
from hetgitops.plan.volcano_quota import leaf_queue_name, team_queue_name

# Kueue per resource group: flavors and covered resources (16 before v0.14, PR #6906), and
# flavor x resource entries (v0.14 on).
OLD_LIMIT, LIMIT, MAX_ENTRIES = 16, 64, 512
QUEUE_PLUGINS = ("capacity", "proportion")
# Queue names travel in label values (e.g. the PodGroup's queue label), which stop at 63.
MAX_QUEUE_NAME = 63
# Namespaces of Kubernetes itself and of the systems hetgitops configures: the core target
# would take ownership of the Namespace object (and prune or relabel it) and add a ResourceQuota.
RESERVED_NAMESPACES = (
    "default",
    "kube-node-lease",
    "kube-public",
    "kube-system",
    "kueue-system",
    "node-feature-discovery",
    "volcano-system",
)


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
    Fix: split the team into teams with quota in fewer pools each, merge pools of one card type that
    differ only in name, or, if the limit is Kueue's old 16, upgrade Kueue to 0.14 or later and
    raise Fleet.spec.versions.kueue to match.
    """
    fleet = policy.fleet
    if fleet is None or "kueue" not in fleet.targets:
        return
    limit = _limit(fleet)
    for team in policy.teams.values():
        plans = team_plan(policy, team)
        flavors, resources = len(plans), 2 + len(covered_accelerators(team, plans))
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
    # Every quota entry adds a flavor: a note at each (an added pool is then the primary when
    # the changed lines are known).
    entries = [
        note(f"flavor for pool '{quota.pool}'", quota.origin, "pool") for quota in team.quotas
    ]
    quotas = note(f"team '{team.name}' quotas", team.origin, "spec", "quotas", key=True)
    return error_at(
        "kueue-limits",
        f"team '{team.name}' ClusterQueue would have {what}; Kueue {version} allows {limit}",
        team.origin,
        "spec",
        "quotas",
        key=True,
        hint="split the team, or give it quota in fewer pools",
        related=[quotas, *entries],
    )


@rule("namespace-collision", Severity.ERROR)
def namespace_collision(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A namespace belongs to one team (its LocalQueue points at one ClusterQueue).

    Fails: teams `ml` and `vision` both list `namespaces: [shared]`.
    Passes: `namespaces: [ml]` and `namespaces: [vision]`.
    Fix: give each team its own namespaces: remove the shared namespace from all but one team and
    create a new one for the others (the LocalQueue in a namespace feeds exactly one ClusterQueue).
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
                    related=[Related(where, f"team '{first.name}' has it first")],
                )


@rule("namespace-reserved", Severity.ERROR)
def namespace_reserved(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team does not claim a system namespace.

    `default`, `kube-*`, the GPU Operator's namespace, `volcano-system`, `kueue-system` and
    `node-feature-discovery` belong to the cluster: hetgitops would take over the Namespace
    object and put a ResourceQuota in it.
    Fails: `namespaces: [kube-system]`, `namespaces: [kube-flannel]` or `namespaces: [default]`.
    Passes: `namespaces: [ml]`.
    Fix: replace the system namespace with a namespace of the team's own (e.g. `ml`); workloads in
    `default` or `kube-*` move with it.
    """
    operator = policy.fleet.gpu_operator_namespace if policy.fleet else "gpu-operator"
    reserved = {*RESERVED_NAMESPACES, operator}
    for team in policy.teams.values():
        for index, namespace in enumerate(team.namespaces):
            if namespace in reserved or namespace.startswith("kube-"):
                yield error_at(
                    "namespace-reserved",
                    f"namespace '{namespace}' is a system namespace; team '{team.name}' "
                    "cannot own it",
                    team.origin,
                    "spec",
                    "namespaces",
                    index,
                    hint="give the team a namespace of its own",
                )


def _volcano_on(policy: Policy) -> bool:
    fleet = policy.fleet
    return fleet is not None and "volcano" in fleet.targets


class _Queue(NamedTuple):
    """One Volcano Queue the policy renders, and where in the policy it comes from."""

    name: str
    what: str
    origin: Origin
    path: tuple[str | int, ...]

    @property
    def span(self) -> Span:
        return self.origin.at(*self.path)


def _volcano_queues(policy: Policy) -> Iterator[_Queue]:
    """The `<team>-<pool>` leaves (the only Queues rendered), in file order; a `layout: team`
    team's one queue instead of its leaves."""
    for team in in_file_order(policy.teams.values()):
        pools = {plan.pool.name for plan in team_plan(policy, team)}
        if team.volcano_layout == "team":
            if pools:
                what = f"the team queue of team '{team.name}'"
                yield _Queue(team_queue_name(team), what, team.origin, ("metadata", "name"))
            continue
        for index, quota in enumerate(team.quotas):
            if quota.pool in pools:
                pools.discard(quota.pool)  # a pool listed twice renders one leaf
                name = leaf_queue_name(team, quota.pool)
                what = f"the leaf queue of team '{team.name}' in pool '{quota.pool}'"
                yield _Queue(name, what, team.origin, ("spec", "quotas", index, "pool"))


@rule("queue-name-collision", Severity.ERROR)
def queue_name_collision(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every Volcano Queue the policy renders has its own name of at most 63 characters.

    Leaf queues are named `<team>-<pool>`, so two (team, pool) pairs can meet in one name.
    Fails: team `ml` in pool `x-pool` and team `ml-x` in pool `pool` (both `ml-x-pool`); or a
    team and pool name adding up to more than 63 characters.
    Passes: team `ml-eval` in pool `pool`.
    Fix: rename one of the teams (or pools) so `<team>-<pool>` differs, or shorten the names to at
    most 63 characters together.
    """
    if not _volcano_on(policy):
        return
    first: dict[str, _Queue] = {}
    for queue in _volcano_queues(policy):
        if len(queue.name) > MAX_QUEUE_NAME:
            yield _collision(
                queue,
                f"{queue.what} would be named '{queue.name}', longer than "
                f"{MAX_QUEUE_NAME} characters",
                "use shorter team or pool names",
            )
        earlier = first.setdefault(queue.name, queue)
        if earlier is not queue:
            yield _collision(
                queue,
                f"{queue.what} and {earlier.what} would both be Volcano Queue '{queue.name}'",
                "rename the team (leaf queues are named <team>-<pool>)",
                related=Related(earlier.span, f"{earlier.what} has the name first"),
            )


def _collision(
    queue: _Queue, message: str, hint: str, related: Related | None = None
) -> Diagnostic:
    return error_at(
        "queue-name-collision",
        message,
        queue.origin,
        *queue.path,
        hint=hint,
        related=[related] if related else [],
    )


@rule("volcano-plugin-conflict", Severity.ERROR)
def volcano_plugin_conflict(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The Volcano scheduler gets one queue plugin, and queue hierarchy needs `capacity`.

    Fails: `volcano: {queuePlugin: proportion}` (hierarchy defaults to true), or
    `extraPlugins: [proportion]` next to the default capacity plugin.
    Also fails: explicit `tiers` with both capacity and proportion among their plugins, or
    `tiers` beside `queuePlugin`, `hierarchy` or `extraPlugins` (which shape only the tiers
    hetgitops writes itself).
    Passes: `volcano: {queuePlugin: proportion, hierarchy: false}`.
    Fix: choose the queue plugin only with Fleet `spec.volcano.queuePlugin`, remove it from
    `extraPlugins`, and with `queuePlugin: proportion` set `hierarchy: false` (only `capacity`
    supports a queue hierarchy). With `tiers`, say it in the tiers alone.
    """
    fleet = policy.fleet
    if fleet is None:
        return
    # Checked even when the Fleet does not list the volcano target: `render --target volcano`
    # may still emit it, and the settings are wrong either way.
    volcano = ("spec", "volcano")
    if fleet.volcano_tiers is not None:
        yield from _tier_conflicts(fleet)
        return
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


def _tier_conflicts(fleet: Fleet) -> Iterator[Diagnostic]:
    """Explicit tiers: no generated-tier setting beside them, one queue plugin in them."""
    for setting in ("queuePlugin", "hierarchy", "extraPlugins"):
        if setting in fleet.volcano_settings:
            yield error_at(
                "volcano-plugin-conflict",
                f"spec.volcano.{setting} shapes the tiers hetgitops writes, but "
                "spec.volcano.tiers gives them as they are",
                fleet.origin,
                "spec",
                "volcano",
                setting,
                hint=f"remove {setting}, or remove tiers to let hetgitops write them",
            )
    tiers = fleet.volcano_tiers or ()
    names = [p.get("name") for tier in tiers for p in tier.get("plugins", ())]
    if "capacity" in names and "proportion" in names:
        yield error_at(
            "volcano-plugin-conflict",
            "the tiers enable both the capacity and the proportion plugin; Volcano must "
            "never run both",
            fleet.origin,
            "spec",
            "volcano",
            "tiers",
            hint="keep one queue plugin in the tiers",
        )


@rule("fair-sharing-not-enabled", Severity.WARNING)
def fair_sharing_not_enabled(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team or cohort has a fairSharingWeight, but the Fleet says the cluster's Kueue
    Configuration does not enable fair sharing: Kueue renders the weight and ignores it.

    Only what the Fleet says is checked (`spec.kueue.configuration.fairSharing`, which
    `hetgitops import` reads from kueue-manager-config); hetgitops does not render Kueue's
    Configuration, its installer (Helm values, kustomize) owns it.
    Fails (warns): `fairSharingWeight: "2"` with `configuration: {fairSharing: false}`.
    Passes: the same with `fairSharing: true`, or no `configuration` at all.
    Fix: enable fair sharing in Kueue's Configuration (v1beta1 `fairSharing.enable: true`,
    v1beta2 a `fairSharing` section) and set `fairSharing: true` in the Fleet, or drop the
    weights.
    """
    fleet = policy.fleet
    if fleet is None or fleet.kueue_fair_sharing is not False:
        return
    message = "has a fairSharingWeight, but Kueue's Configuration does not enable fair sharing"
    hint = "enable fair sharing in Kueue's Configuration, or drop the weight"
    for team in in_file_order(policy.teams.values()):
        if team.fair_sharing_weight is not None:
            yield warning_at(
                "fair-sharing-not-enabled",
                f"team '{team.name}' {message}",
                team.origin,
                "spec",
                "kueue",
                "fairSharingWeight",
                hint=hint,
            )
    for cohort in fleet.cohorts:
        if cohort.fair_sharing_weight is not None:
            yield warning_at(
                "fair-sharing-not-enabled",
                f"cohort '{cohort.name}' {message}",
                cohort.origin,
                "fairSharingWeight",
                hint=hint,
            )
