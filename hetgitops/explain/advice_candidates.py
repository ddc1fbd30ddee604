"""Explain stage, advice: the candidate edits for a job Kueue does not admit, least invasive
first, from plan/'s facts (`advice.py` checks each before it is given): the team's quota
raised in a pool within what the pool offers (`capacity.pool_resources` less
`capacity.pool_quota_total`, the arithmetic of `quota-exceeds-capacity`), every pod set
counted and the cpu and memory each unit brings; a higher borrowingLimit; nodes added to the
pool and the raise onto them; the pool's entry moved first."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from hetgitops.explain.advice_edits import (
    Edit,
    add_nodes,
    add_quota,
    move_first,
    set_quota,
)
from hetgitops.explain.nodes import admits, pool_nodes
from hetgitops.explain.workload import PodSet, Workload
from hetgitops.model.policy import Policy, Pool, Team
from hetgitops.plan import capacity
from hetgitops.plan.quota_plan import HOST_RESOURCES, kueue_amount, per_card, reach

# Requests no quota or node count covers in the policy's terms.
SKIPPED = ("pods", "ephemeral-storage")


def asked_units(pod_set: PodSet) -> dict[str, int]:
    """A pod's accelerator requests (what nodes and quotas count in units)."""
    return {
        r: n
        for r, n in sorted(pod_set.requests.items())
        if n > 0 and r not in HOST_RESOURCES and r not in SKIPPED
    }


def offered_by(policy: Policy, pool: Pool) -> dict[str, int]:
    card = policy.card_type_of(pool)
    return capacity.pool_resources(pool, card, policy.fleet) if card else {}


def _pools(policy: Policy, team: Team, workload: Workload) -> Iterator[Pool]:
    """Pools with a node every pod set's selector matches and whose units hold one of its
    pods: the team's, in its quota order, then the others by name."""
    held = [q.pool for q in team.quotas if q.pool in policy.pools]
    order = list(dict.fromkeys([*held, *sorted(policy.pools)]))
    for name in order:
        pool = policy.pools[name]
        nodes = pool_nodes(policy, pool)
        if all(
            any(
                admits(ps.node_selector, ps.node_affinity, n.labels)
                and all(n.units.get(r, 0) >= a for r, a in asked_units(ps).items())
                for n in nodes
            )
            for ps in workload.pod_sets
            if ps.count and asked_units(ps)
        ):
            yield pool


def candidates(policy: Policy, team: Team, workload: Workload) -> Iterator[tuple[Edit, ...]]:
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
    """The pool's quota entry first in the team's list, raised (onto added nodes) if short:
    Kueue admits in an earlier flavor whose nodes cannot hold a pod."""
    index = next((i for i, q in enumerate(team.quotas) if q.pool == pool.name), None)
    if index == 0:
        return
    if index is not None:
        yield (move_first(team, index),)
    for nodes in (False, True):
        for edits in _raises(policy, team, workload, pool, nodes=nodes):
            if index is None:  # the new entry, appended last, goes first
                yield (*edits, move_first(team, len(team.quotas), pool.name))
            else:
                yield (*edits, move_first(team, index))


def _need(policy: Policy, team: Team, workload: Workload, pool: Pool) -> dict[str, int] | None:
    """Units of each accelerator resource the team's nominal quota in `pool` lacks for the
    whole job to fit there (every pod set, the earlier ones included), counting the cpu and
    memory that come with each unit; None when the pool offers not all the job asks."""
    card = policy.card_type_of(pool)
    offered = offered_by(policy, pool)
    asked: dict[str, int] = {}
    for pod_set in workload.pod_sets:
        for resource in asked_units(pod_set):
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
    for host, rate in zip(HOST_RESOURCES, per_card(policy, team, pool.name), strict=True):
        need = sum(ps.total(host) for ps in workload.pod_sets if asked_units(ps))
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
    offered = offered_by(policy, pool)
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
    placed = _nodes_for_pods(policy, workload, pool, units)
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
        least = max([*over, placed], default=1 if not any(raise_by.values()) else 0)
        cap = added_nodes_cap(pool)
        if least > cap:
            return  # e.g. 2^31 cpus asked: no node count is advice (found by the manifest fuzz)
        more = range(1, min(pods, cap) + 1) if not edits else ()
        for count in sorted({least, least + 1, *more}):
            if 0 < count <= cap:
                yield (*edits, add_nodes(pool, count, template))


def added_nodes_cap(pool: Pool) -> int:
    """The most nodes advice adds to a pool: twice what it has, at least 64. Beyond that the
    request, not the pool, is what to change (a job asking 2^31 cpus would otherwise be told to
    add millions of nodes, and building that edit alone takes minutes)."""
    return max(64, 2 * len(pool.nodes))


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


def _nodes_for_pods(
    policy: Policy, workload: Workload, pool: Pool, units: Mapping[str, int]
) -> int:
    """Nodes like the pool's biggest to add so that every pod has a node (on the empty
    cluster), by the pods each node holds: a quota raise in units alone can leave a pod of
    5 cards per 8-card node without one."""
    need = 0
    for pod_set in workload.pod_sets:
        asked = asked_units(pod_set)
        if not pod_set.count or not asked:
            continue
        per_node = min(units.get(r, 0) // a for r, a in asked.items())
        have = sum(
            min(n.units.get(r, 0) // a for r, a in asked.items())
            for n in pool_nodes(policy, pool)
            if admits(pod_set.node_selector, pod_set.node_affinity, n.labels)
        )
        if per_node:
            need += max(0, math.ceil((pod_set.count - have) / per_node))
    return need
