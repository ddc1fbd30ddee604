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
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hetgitops.diagnostics import Severity
from hetgitops.explain.advice_edits import (
    Edit,
    add_nodes,
    add_quota,
    apply,
    budget_after,
    move_first,
    set_budget,
    set_quota,
)
from hetgitops.explain.nodes import admits, pool_nodes
from hetgitops.explain.workload import PodSet, Workload
from hetgitops.model import mig
from hetgitops.model.policy import Policy, Pool, Team
from hetgitops.plan import capacity
from hetgitops.plan.quota_plan import HOST_RESOURCES, kueue_amount, per_card, reach

# Requests no quota or node count covers in the policy's terms.
SKIPPED = ("pods", "ephemeral-storage")

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
        if self.kind == EDITS:
            return [edit.line() for edit in self.edits]
        if self.kind == NONE:
            return [self.reason]
        return [self.reason]


# Explains the job again on an edited policy: True when admitted.
Judge = Callable[[Policy], bool]


def advise(policy: Policy, team: Team, workload: Workload, judge: Judge) -> Advice:
    reason = impossible(policy, workload)
    if reason is not None:
        return Advice(NONE, reason=reason)
    before = _errors(policy)
    for edits in _candidates(policy, team, workload):
        found = _checked(policy, team, edits, judge, before)
        if found is not None:
            return Advice(EDITS, found)
    return Advice(
        UNFOUND,
        reason="no edit hetgitops tries admits this job: quota raises within each pool's "
        "capacity, a new quota entry, a higher borrowingLimit, added nodes and the entry "
        "moved first were each tried on one pool",
    )


def _asked(pod_set: PodSet) -> dict[str, int]:
    """A pod's accelerator requests (what nodes and quotas count in units)."""
    return {
        r: n
        for r, n in sorted(pod_set.requests.items())
        if n > 0 and r not in HOST_RESOURCES and r not in SKIPPED
    }


def impossible(policy: Policy, workload: Workload) -> str | None:
    """Why no policy change admits the job, or None: a requested resource no pool offers, or
    a pod that no node its selector matches, in any pool, can hold (node sizes are hardware)."""
    offered = {r for pool in policy.pools.values() for r, n in _offered(policy, pool).items() if n}
    for pod_set in workload.pod_sets:
        asked = _asked(pod_set)
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


def _offered(policy: Policy, pool: Pool) -> dict[str, int]:
    card = policy.card_type_of(pool)
    return capacity.pool_resources(pool, card, policy.fleet) if card else {}


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


# -- candidates ------------------------------------------------------------------------------


def _pools(policy: Policy, team: Team, workload: Workload) -> Iterator[Pool]:
    """Pools every pod set's selector matches some node of: the team's, in its quota order,
    then the others by name."""
    held = [q.pool for q in team.quotas if q.pool in policy.pools]
    order = list(dict.fromkeys([*held, *sorted(policy.pools)]))
    for name in order:
        pool = policy.pools[name]
        nodes = pool_nodes(policy, pool)
        if all(
            any(admits(ps.node_selector, ps.node_affinity, n.labels) for n in nodes)
            for ps in workload.pod_sets
            if ps.count and _asked(ps)
        ):
            yield pool


def _candidates(policy: Policy, team: Team, workload: Workload) -> Iterator[tuple[Edit, ...]]:
    pools = list(_pools(policy, team, workload))
    for pool in pools:  # within capacity: the quota alone
        yield from _raises(policy, team, workload, pool, nodes=False)
    for pool in pools:
        yield from _borrowing(policy, team, workload, pool)
    for pool in pools:  # beyond capacity: the quota onto added nodes, or nodes alone
        yield from _raises(policy, team, workload, pool, nodes=True)
    for pool in pools:  # Kueue admits in an earlier flavor whose nodes cannot hold a pod
        yield from _first(policy, team, workload, pool)


def _first(
    policy: Policy, team: Team, workload: Workload, pool: Pool
) -> Iterator[tuple[Edit, ...]]:
    """The pool's quota entry first in the team's list (raised within capacity if short)."""
    index = next((i for i, q in enumerate(team.quotas) if q.pool == pool.name), None)
    short = _need(policy, team, workload, pool)
    if index == 0 or short is None:
        return
    offered = _offered(policy, pool)
    room = {r: offered[r] - capacity.pool_quota_total(policy, pool, r) for r in short}
    if any(short[r] > room[r] for r in short):
        return
    if index is None:
        raised = _quota_edits(policy, team, pool, short)
        if raised:
            (entry,) = raised
            value = entry.value
            yield (
                add_quota(
                    team, pool.name, cards=value.get("cards", 0), mig=value.get("mig"), first=True
                ),
            )
        return
    raised = _quota_edits(policy, team, pool, short)
    if raised is not None:
        yield (*raised, move_first(team, index))


def _need(policy: Policy, team: Team, workload: Workload, pool: Pool) -> dict[str, int] | None:
    """Units of each accelerator resource the team's nominal quota in `pool` lacks for the
    whole job to fit there (every pod set, the earlier ones included), counting the cpu and
    memory that come with each unit; None when the pool offers not all the job asks."""
    card = policy.card_type_of(pool)
    offered = _offered(policy, pool)
    asked: dict[str, int] = {}
    for pod_set in workload.pod_sets:
        for resource in _asked(pod_set):
            asked[resource] = asked.get(resource, 0) + pod_set.total(resource)
    if card is None or not asked or any(r not in offered for r in asked):
        return None
    held = any(q.pool == pool.name for q in team.quotas)
    found = reach(policy)
    short = {
        r: max(0, n - ((found.most(team, pool, r) or 0) if held else 0)) for r, n in asked.items()
    }
    first = next(iter(asked))
    weight = capacity.unit_weight(pool, card, first, policy.fleet)
    for host, rate in zip(HOST_RESOURCES, per_card(policy, team), strict=True):
        need = sum(ps.total(host) for ps in workload.pod_sets if _asked(ps))
        most = (found.most(team, pool, host) or 0) if held else 0
        per_unit = kueue_amount(host, rate) * weight
        if need > most and per_unit > 0:
            short[first] = max(short[first], math.ceil((need - most) / per_unit))
    return short


def _quota_edits(
    policy: Policy, team: Team, pool: Pool, raise_by: dict[str, int]
) -> tuple[Edit, ...] | None:
    """The quota edits that raise the team's nominal in `pool` by `raise_by` units."""
    card = policy.card_type_of(pool)
    if card is None:
        return None
    index = next((i for i, q in enumerate(team.quotas) if q.pool == pool.name), None)
    wanted = {r: n for r, n in raise_by.items() if n > 0}
    if not wanted:
        return ()
    if index is None:
        carved = {r: capacity.mig_profiles(pool, card, r, policy.fleet) for r in wanted}
        if all(carved.values()):
            counts = {carved[r][0]: n for r, n in wanted.items()}
            return (add_quota(team, pool.name, mig=counts),)
        if len(wanted) > 1:
            return None
        return (add_quota(team, pool.name, cards=next(iter(wanted.values()))),)
    quota = team.quotas[index]
    edits = []
    for resource, amount in wanted.items():
        profiles = capacity.mig_profiles(pool, card, resource, policy.fleet)
        held = [p for p in profiles if p in quota.mig]
        if profiles:
            profile = (held or profiles)[0]
            count = quota.mig.get(profile, 0) + amount
            edits.append(set_quota(team, index, ("mig", profile), count))
        elif quota.cards is not None:
            edits.append(set_quota(team, index, ("cards",), quota.cards - quota.granted + amount))
        elif quota.normalized is not None and card.performance is not None:
            cards = capacity.quota_cards(quota, card) + amount
            value = round(cards * card.performance.coefficient, 6)
            edits.append(set_quota(team, index, ("normalized",), value))
        elif quota.normalized is None:  # an entry of MIG slices only: whole cards beside them
            edits.append(set_quota(team, index, ("cards",), amount))
        else:
            return None
    return tuple(edits)


def _raises(
    policy: Policy, team: Team, workload: Workload, pool: Pool, *, nodes: bool
) -> Iterator[tuple[Edit, ...]]:
    short = _need(policy, team, workload, pool)
    if short is None:
        return
    offered = _offered(policy, pool)
    room = {r: offered[r] - capacity.pool_quota_total(policy, pool, r) for r in short}
    steps = (0, 1, 2, 4, 8)
    if not nodes:
        for step in steps:
            raise_by = {r: n + step if n else 0 for r, n in short.items()}
            if any(raise_by[r] > room[r] for r in raise_by):
                break
            edits = _quota_edits(policy, team, pool, raise_by)
            if edits:
                yield edits
        return
    template = max(pool.nodes, key=lambda n: n.cards, default=None)
    card = policy.card_type_of(pool)
    if template is None or card is None:
        return
    units = capacity.node_units(pool, card, policy.fleet, template.cards, replicas="shared")
    pods = max(ps.count for ps in workload.pod_sets)
    for step in steps:
        raise_by = {r: n + step if n else 0 for r, n in short.items()}
        over = [
            math.ceil((raise_by[r] - room[r]) / units[r])
            for r in raise_by
            if raise_by[r] > room[r] and units.get(r)
        ]
        if any(raise_by[r] > room[r] and not units.get(r) for r in raise_by):
            return
        edits = _quota_edits(policy, team, pool, raise_by)
        if edits is None:
            return
        least = max(over, default=1 if not any(raise_by.values()) else 0)
        for count in sorted({least, least + 1, *(range(1, pods + 1) if not edits else ())}):
            if count > 0:
                yield (*edits, add_nodes(pool, count, template))


def _borrowing(
    policy: Policy, team: Team, workload: Workload, pool: Pool
) -> Iterator[tuple[Edit, ...]]:
    """A higher borrowingLimit, where the limit and not the cohort's lending bounds the team."""
    index = next((i for i, q in enumerate(team.quotas) if q.pool == pool.name), None)
    short = _need(policy, team, workload, pool)
    if index is None or short is None or team.cohort is None or pool.isolated:
        return
    quota = team.quotas[index]
    if quota.borrowing_limit is None or not any(short.values()):
        return
    extra = max(short.values())
    for step in (0, 1, 2, 4, 8):
        yield (set_quota(team, index, ("borrowingLimit",), quota.borrowing_limit + extra + step),)


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
