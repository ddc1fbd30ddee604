"""Check stage, koordinator family: what Koordinator v1.8.0 would refuse or silently misread in
the trees the `koordinator` target writes. Each rule runs only when that target is rendered
(the Fleet's `spec.targets`, or `render --target`); the numbers are plan/koordinator_quota.py's."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Related, Severity, Span
from hetgitops.model.policy import Fleet, Policy
from hetgitops.plan.koordinator_priority import koord_tiers
from hetgitops.plan.koordinator_quota import (
    RESERVED_NAMES,
    QuotaNode,
    quota_nodes,
    root_min,
    trees,
)
from hetgitops.plan.quota_plan import team_plan

TARGET = "koordinator"


def _fleet(policy: Policy, ctx: CheckContext) -> Fleet | None:
    """The Fleet when the koordinator target is rendered (`--target` or `spec.targets`)."""
    fleet = policy.fleet
    if fleet is None:
        return None
    return fleet if TARGET in (ctx.targets or fleet.targets) else None


@rule("koordinator-min-over-capacity", Severity.ERROR)
def min_over_capacity(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The teams' min in a pool's tree fits in what the tree's root holds.

    The profile controller sets the root's min to the pool's allocatable x resourceRatio,
    truncated per resource (pkg/quota-controller/profile/profile_controller.go:140-177,
    :251-265: 16 cards x 0.9 = 14), and the webhook refuses any quota whose siblings' min
    add up to more than their parent's (pkg/webhook/elasticquota/quota_topology_check.go:
    275-285). Every later update of any quota of the tree fails until it fits.
    Fails: 16 A800s, `resourceRatio: "0.9"`, teams holding 8 + 8.
    Passes: the same with 8 + 6.
    Fix: lower the team quotas (or raise resourceRatio) so their sum is at most the
    truncated product.
    """
    fleet = _fleet(policy, ctx)
    if fleet is None:
        return
    nodes = quota_nodes(policy)
    for tree in trees(policy):
        leaves = [n for n in nodes if n.pool == tree.pool.name and not n.is_parent]
        for resource, held in root_min(policy, tree).items():
            total = sum(int(leaf.min.get(resource, 0)) for leaf in leaves)
            if total <= held:
                continue
            yield error_at(
                "koordinator-min-over-capacity",
                f"the teams' min in pool '{tree.pool.name}' add up to {total} {resource}, "
                f"but the tree's root holds {held} (allocatable x resourceRatio "
                f"{tree.ratio}, truncated); Koordinator's webhook refuses the quotas",
                fleet.origin,
                *_ratio_path(fleet),
                hint="lower the team quotas in the pool or raise spec.koordinator.resourceRatio",
                related=[
                    Related(_quota_span(policy, leaf), f"team '{leaf.team}' holds {held_by}")
                    for leaf in leaves
                    if (held_by := int(leaf.min.get(resource, 0))) > 0
                ],
            )


def _ratio_path(fleet: Fleet) -> tuple[str, ...]:
    if ("spec", "koordinator", "resourceRatio") in fleet.origin.source.values:
        return ("spec", "koordinator", "resourceRatio")
    return ("spec", "targets")


def _quota_span(policy: Policy, leaf: QuotaNode) -> Span:
    team = policy.teams.get(leaf.team or "")
    if team is None:
        return leaf.origin
    for plan in team_plan(policy, team):
        if plan.pool.name == leaf.pool:
            return plan.origin
    return team.origin.span


@rule("koordinator-min-quota-scale", Severity.WARNING)
def min_quota_scale(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """`enableMinQuotaScale: true` hides a tree whose min add up to more than it holds.

    With it (koord-scheduler's default, pkg/scheduler/apis/config/v1/defaults.go:80) the
    scheduler scales every min down in proportion when their sum passes the tree's total
    (pkg/scheduler/plugins/elasticquota/core/), so a team gets less than its quota, silently.
    Fails (warns): `spec.koordinator.enableMinQuotaScale: true`.
    Passes: the field left out (hetgitops writes `false`).
    Fix: remove the field; `koordinator-min-over-capacity` then reports any excess instead.
    """
    fleet = _fleet(policy, ctx)
    if fleet is None or not fleet.koordinator_min_quota_scale:
        return
    yield warning_at(
        "koordinator-min-quota-scale",
        "enableMinQuotaScale scales every team's min down, silently, when their sum passes "
        "what the tree holds: a team would get less than its quota",
        fleet.origin,
        "spec",
        "koordinator",
        "enableMinQuotaScale",
        hint="remove spec.koordinator.enableMinQuotaScale",
    )


@rule("koordinator-multi-quota-tree", Severity.ERROR)
def multi_quota_tree(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Per-pool trees need the MultiQuotaTree feature gate in koord-manager and koord-scheduler.

    The gate is alpha and off by default (pkg/features/features.go:119,
    scheduler_features.go:129); without it the scheduler ignores the profiles' trees
    (pkg/scheduler/plugins/elasticquota/quota_handler.go:210-260) and every quota is one
    global tree, pods not pinned to their pool.
    Fails: `spec.koordinator.multiQuotaTree: false` with the koordinator target.
    Passes: the field left out (the Helm values turn the gate on).
    Fix: remove the field and install Koordinator with the rendered Helm values.
    """
    fleet = _fleet(policy, ctx)
    if fleet is None or fleet.koordinator_multi_quota_tree:
        return
    yield error_at(
        "koordinator-multi-quota-tree",
        "without the MultiQuotaTree gate Koordinator ignores the per-pool profiles: all "
        "quotas form one tree and pods are not pinned to their pool's nodes",
        fleet.origin,
        "spec",
        "koordinator",
        "multiQuotaTree",
        hint="remove spec.koordinator.multiQuotaTree (the Helm values turn the gate on)",
    )


@rule("koordinator-tier-order", Severity.ERROR)
def tier_order(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The tiers keep their order inside Koordinator's priority bands.

    Koordinator knows a priority class only by its value's band (apis/extension/priority.go:
    38-68: prod 9000-9999, mid 7000-7999, batch 5000-5999, free 3000-3999; anything else is
    none). hetgitops keeps a tier value inside a band and maps the others
    (plan/koordinator_priority.py); a tier whose value is inside a band can end up below a
    lower tier that was mapped higher.
    Fails: `training: 5500` (kept, batch) beside `dev: {value: 100, preemptible: true}`
    (mapped to 5999).
    Passes: every tier outside the bands (all mapped), or inside them in order.
    Fix: move the in-band value out of the bands, or above the mapped tiers of its band.
    """
    if _fleet(policy, ctx) is None:
        return
    mapped = koord_tiers(policy)
    ordered = sorted(mapped.values(), key=lambda m: (-m.tier.value, m.tier.name))
    for index, higher in enumerate(ordered):
        lower = next(
            (o for o in ordered[index + 1 :] if o.tier.value < higher.tier.value
             and o.value >= higher.value),
            None,
        )  # fmt: skip
        if lower is not None:
            yield error_at(
                "koordinator-tier-order",
                f"tier '{higher.tier.name}' ({higher.tier.value}) is above tier "
                f"'{lower.tier.name}' ({lower.tier.value}), but under Koordinator it gets "
                f"{higher.value} ({higher.band}) and '{lower.tier.name}' gets {lower.value} "
                f"({lower.band})",
                higher.tier.origin,
                "spec",
                "value",
                hint="give the tier a value outside Koordinator's bands, or above the other",
                related=[Related(lower.tier.origin.at("spec", "value"), "the lower tier")],
            )


@rule("koordinator-quota-name", Severity.ERROR)
def quota_name(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Every ElasticQuota of the koordinator target has its own, unreserved name.

    Quota names are one namespace for the webhook (quota_topology.go:70-72), and
    `koordinator-root-quota`, `koordinator-system-quota` and `koordinator-default-quota` are
    Koordinator's own (apis/extension/elastic_quota.go:30-32; the webhook refuses to change or
    delete them, quota_topology.go:159-166). Leaves are `<team>-<pool>`, cohort parents
    `cohort-<cohort>-<pool>`, roots `pool-<pool>`.
    Fails: team `koordinator` with a quota in pool `default-quota`.
    Passes: distinct team, cohort and pool names.
    Fix: rename the team (or pool) so its quota name is its own.
    """
    if _fleet(policy, ctx) is None:
        return
    seen = {t.root for t in trees(policy)}
    cohorts = {c.name: c for c in policy.fleet.cohorts} if policy.fleet else {}
    for node in quota_nodes(policy):
        if node.name in seen or node.name in RESERVED_NAMES:
            why = "reserved by Koordinator" if node.name in RESERVED_NAMES else "used twice"
            message = f"the ElasticQuota name '{node.name}' is {why}"
            hint = "rename the team, cohort or pool"
            team = policy.teams.get(node.team or "")
            cohort = cohorts.get(node.cohort or "")
            if team is not None:
                yield error_at(RULE_NAME, message, team.origin, "metadata", "name", hint=hint)
            elif cohort is not None:
                yield error_at(RULE_NAME, message, cohort.origin, "name", hint=hint)
        seen.add(node.name)


RULE_NAME = "koordinator-quota-name"
