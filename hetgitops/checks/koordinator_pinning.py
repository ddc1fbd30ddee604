"""Check stage, koordinator family: Koordinator's pod webhook pins the pods of a bound namespace
to one pool, whatever scheduler they are for, so a fleet that renders Kueue beside Koordinator
can strand the Kueue jobs a team runs on its other pools."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import note, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy
from hetgitops.plan.quota_plan import team_plan

RULE = "koordinator-namespace-pinning"


@rule(RULE, Severity.WARNING)
def namespace_pinning(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Koordinator pins every pod of a team's namespaces to one pool, Kueue's jobs too.

    The koordinator target binds a team's namespaces to its first pool's leaf quota (a
    namespace binds one quota only). With the MultiQuotaTree gate, koord-manager's pod webhook
    adds that tree's node affinity to every pod created in a bound namespace, whatever its
    schedulerName (docs/upstream.md). When the Fleet also renders Kueue and the team's Kueue
    queue spans more pools, a job Kueue admits to another pool gets pods whose affinity names
    the first pool: they never schedule, and the job holds its quota while it waits. Seen in
    the simulated fleet (tests/sim/test_sim_koordinator_explain.py).
    Fails: the koordinator and kueue targets, and a team with namespaces in two pools.
    Passes: a team in one pool, or only one of the two targets.
    Fix: render one of the two job-level schedulers (drop `koordinator` or `kueue` from the
    Fleet's spec.targets), or keep the team in one pool.
    """
    fleet = policy.fleet
    if fleet is None:
        return
    targets = ctx.targets or fleet.targets
    if "koordinator" not in targets or "kueue" not in targets:
        return
    for team in policy.teams.values():
        pools = [plan.pool.name for plan in team_plan(policy, team)]
        if not team.namespaces or len(pools) < 2:
            continue
        first, others = pools[0], pools[1:]
        yield warning_at(
            RULE,
            f"Koordinator pins every pod of namespace(s) {', '.join(sorted(team.namespaces))} "
            f"to pool {first}'s nodes, Kueue's too: a job Kueue admits to "
            f"{', '.join(others)} gets pods that never schedule",
            team.origin,
            "spec",
            "namespaces",
            hint="render one job-level scheduler: drop `koordinator` or `kueue` from the Fleet's "
            "spec.targets, or keep the team in one pool",
            related=(note("the Fleet renders both targets", fleet.origin, "spec", "targets"),),
        )
