"""Explain stage, advice: for a job Kueue leaves pending (or admits where no node holds a pod),
the policy edits that admit it, or why no policy change does (issue 32 item 4).

How: a reason no policy change can remove is looked for first (a resource no pool offers, a
pod no node its selector matches can hold). Otherwise candidate edits are drawn from plan/'s
facts, least invasive first: raise the team's quota in a pool within what the pool offers
(`capacity.pool_resources` less `capacity.pool_quota_total`: the arithmetic of
`quota-exceeds-capacity`), add a quota entry in a pool the team does not hold, raise the
entry's borrowingLimit, add nodes to the pool (and raise the quota onto them). Each candidate
is made on the model (`advice_edits.apply`), the job explained again on it, and `validate`'s
own rules run on it (`checks.run_checks`): a candidate is given only when the job is admitted
and the rules find no error the policy did not have (a budget the raise exceeds is raised
with it). So the advice is never one `validate` refuses or one that does not admit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from hetgitops.diagnostics import Severity
from hetgitops.explain.advice_candidates import asked_units, candidates, offered_by
from hetgitops.explain.advice_edits import Edit, apply, budget_after, set_budget
from hetgitops.explain.nodes import admits, pool_nodes
from hetgitops.explain.workload import Workload
from hetgitops.model import mig
from hetgitops.model.policy import Policy, Team

EDITS, NONE, UNFOUND = "edits", "none", "unfound"


@dataclass(frozen=True)
class Advice:
    """`kind` edits (apply them all), none (no policy change admits the job, or none short of
    a new MIG layout: `reason`, which says which) or unfound (no edit tried admits it:
    `reason` says what was tried)."""

    kind: str
    edits: tuple[Edit, ...] = ()
    reason: str = ""

    def lines(self) -> list[str]:
        """The `policy:` lines: one per edit, or the reason (which names its kind)."""
        if self.kind == EDITS:
            return [edit.line() for edit in self.edits]
        return [self.reason]


# Explains the job again on an edited policy: True when admitted.
Judge = Callable[[Policy], bool]


def advise(policy: Policy, team: Team, workload: Workload, judge: Judge) -> Advice:
    reason = impossible(policy, workload)
    if reason is not None:
        return Advice(NONE, reason=reason)
    before = _errors(policy)
    for edits in candidates(policy, team, workload):
        found = _checked(policy, team, edits, judge, before)
        if found is not None:
            return Advice(EDITS, found)
    return Advice(
        UNFOUND,
        reason="no edit hetgitops tries admits this job: quota raises within each pool's "
        "capacity, a new quota entry, a higher borrowingLimit, added nodes and the entry "
        "moved first were each tried on one pool",
    )


def impossible(policy: Policy, workload: Workload) -> str | None:
    """Why no policy change admits the job, or None: a requested resource no pool offers, or
    a pod that no node its selector matches, in any pool, can hold (node sizes are hardware)."""
    offered = {r for p in policy.pools.values() for r, n in offered_by(policy, p).items() if n}
    for pod_set in workload.pod_sets:
        asked = asked_units(pod_set)
        if pod_set.count == 0 or not asked:
            continue
        for resource in asked:
            if resource not in offered:
                return _unoffered(policy, resource)
        nodes = [
            n
            for pool in policy.pools.values()
            for n in pool_nodes(policy, pool)
            if admits(pod_set.node_selector, pod_set.node_affinity, n.labels)
        ]
        if not nodes:
            return (
                f"no node of any pool matches pod set {pod_set.name}'s node selector and affinity"
            )
        if any(all(n.units.get(r, 0) >= a for r, a in asked.items()) for n in nodes):
            continue
        for resource, amount in asked.items():
            biggest = max(nodes, key=lambda n: (n.units.get(resource, 0), n.name))
            most = biggest.units.get(resource, 0)
            if most < amount:
                return _too_big(policy, pod_set.name, resource, amount, biggest.name, most)
        return f"{NO_CHANGE}: no node its selector matches holds all one pod of {pod_set.name} asks"
    return None


NO_CHANGE = "no policy change admits this job"
NO_QUOTA_CHANGE = "no quota or node change admits this job"


def _too_big(policy: Policy, pod_set: str, resource: str, amount: int, node: str, most: int) -> str:
    """One pod asks more units than any node offers: hardware, or a MIG layout that leaves
    the node fewer whole GPUs than it has."""
    pool = next(p for p in policy.pools.values() for n in p.nodes if n.name == node)
    cards = next(n.cards for n in pool.nodes if n.name == node)
    what = (
        f"one pod of pod set {pod_set} asks {amount} {resource}; no node its selector matches "
        f"offers that many (the most: {most}, node {node} in pool {pool.name}"
    )
    if pool.mig and cards >= amount and most < cards:
        return (
            f"{NO_QUOTA_CHANGE}: {what}, which has {cards} GPUs, the others MIG-partitioned by "
            f"the pool's spec.mig layout)"
        )
    return f"{NO_CHANGE}: {what}); a node's cards are hardware, not policy"


def _unoffered(policy: Policy, resource: str) -> str:
    prefix = mig.resource_name("")
    if not resource.startswith(prefix):
        return f"{NO_CHANGE}: no pool offers {resource}"
    profile = resource.removeprefix(prefix)
    able = sorted(
        pool.name
        for pool in policy.pools.values()
        if (card := policy.card_type_of(pool)) is not None
        and (table := mig.TABLES.get(card.mig_table or "")) is not None
        and mig.gpu_instance_profile(profile) in table.profiles
    )
    if not able:
        return f"{NO_CHANGE}: no card type of the fleet has MIG profile {profile} ({resource})"
    return (
        f"{NO_QUOTA_CHANGE}: no pool's MIG layout carves {profile} ({resource}), so no quota "
        f"can hold it; the change is a layout (spec.mig) of a pool whose cards have the "
        f"profile: {', '.join(able)}"
    )


# -- checking --------------------------------------------------------------------------------

Found = frozenset[tuple[str, str]]


def _errors(policy: Policy) -> Found:
    """`validate`'s rules' errors, by rule and place (a message that only counts anew is no
    new error)."""
    # validate's rules are loaded only when a job needs advice: an admitted job's explain
    # imports none of them (tests/test_cli_lazy.py).
    from hetgitops import checks

    context = checks.CheckContext(dt.date.today())
    return frozenset(
        (d.rule, str(d.span))
        for d in checks.run_checks(policy, context)
        if d.severity is Severity.ERROR
    )


def _checked(
    policy: Policy, team: Team, edits: tuple[Edit, ...], judge: Judge, before: Found
) -> tuple[Edit, ...] | None:
    """`edits` when the edited policy admits the job and validate's rules find no new error;
    a budget the raise exceeds is raised with it."""
    edited = apply(policy, edits)
    if not judge(edited):
        return None
    new = _errors(edited) - before
    if new and all(rule == "budget-exceeded" for rule, _ in new):
        from hetgitops.checks._common import quota_uses
        from hetgitops.checks.budget import monthly_cost

        monthly = sum(
            monthly_cost(use, edited.fleet)
            for use in quota_uses(edited)
            if use.team.name == team.name and use.card.cost_per_hour is not None
        )
        edits = (*edits, set_budget(team, budget_after(monthly)))
        edited = apply(policy, edits)
        new = _errors(edited) - before
    return None if new else edits
