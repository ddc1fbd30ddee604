"""Compile stage, `monitoring` target: the policy's own numbers as recorded series.

Each fact is a recording rule `vector(N)` with labels, so the joins and the alerts read the
policy like any other series: a quota change shows in `diff` as one rule's expression, and a
dashboard can plot capacity against commitment without a second source.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring.facts import Facts

DECLARED = "hetgitops:pool_declared_cards"
COMMITTED = "hetgitops:pool_committed_cards"
FLAVOR_INFO = "hetgitops:flavor_info"
FLAVOR_WEIGHT = "hetgitops:flavor_resource_cards"
NODE_WEIGHT = "hetgitops:node_resource_cards"
MIG_WEIGHT = "hetgitops:pool_mig_profile_cards"
FLAVOR_COST = "hetgitops:flavor_resource_cost_per_hour"
TEAM_INFO = "hetgitops:team_info"
TEAM_CARD_TYPES = "hetgitops:team_card_type_info"
TEAM_NOMINAL = "hetgitops:team_flavor_nominal_cards"
NAMESPACE_TEAM = "hetgitops:namespace_team"
BUDGET = "hetgitops:team_budget_monthly"
OBJECTIVE = "hetgitops:tier_admission_objective_seconds"
EXPIRY = "hetgitops:pool_expiry_timestamp_seconds"
MIG_CONFIG = "hetgitops:pool_mig_config_info"
VOLCANO_QUEUE = "hetgitops:volcano_queue_info"


def number(value: float | Fraction | int) -> str:
    """A constant as PromQL reads it back exactly: integers bare, others as the shortest text
    that round-trips the float (so the tests' arithmetic and Prometheus' agree)."""
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def fact(record: str, value: float | Fraction | int, **labels: str) -> dict[str, Any]:
    return {"record": record, "expr": f"vector({number(value)})", "labels": labels}


def _pools(facts: Facts) -> Iterator[dict[str, Any]]:
    for p in facts.pools.values():
        ids = {"pool": p.name, "card_type": p.card_type}
        yield fact(DECLARED, p.declared_cards, **ids)
        yield fact(COMMITTED, p.committed_cards, **ids)
        yield fact(FLAVOR_INFO, 1, flavor=p.flavor, **ids)
        for resource, weight in p.weights.items():
            yield fact(FLAVOR_WEIGHT, weight, flavor=p.flavor, resource=resource)
            held = p.node_weights[resource]
            yield fact(NODE_WEIGHT, held, pool=p.name, resource=names.sanitise(resource))
            if p.cost_per_hour is not None:
                cost = p.cost_per_hour * float(weight)
                yield fact(FLAVOR_COST, cost, flavor=p.flavor, resource=resource)
        for profile, weight in p.profile_weights.items():
            yield fact(MIG_WEIGHT, weight, pool=p.name, mig_profile=profile)
        if p.expires is not None:
            epoch = calendar.timegm(p.expires.timetuple())
            yield fact(EXPIRY, epoch, pool=p.name)
        for config in p.mig_configs:
            yield fact(MIG_CONFIG, 1, pool=p.name, mig_config=config)


def _teams(facts: Facts) -> Iterator[dict[str, Any]]:
    claimed: set[str] = set()
    for t in facts.teams.values():
        ids = {"team": t.name, "cluster_queue": t.cluster_queue}
        yield fact(TEAM_INFO, 1, root_cohort=t.root_cohort, **ids)
        types = sorted({facts.pools[pool].card_type for pool in t.pools.values()})
        for card_type in types if t.root_cohort else ():
            yield fact(TEAM_CARD_TYPES, 1, root_cohort=t.root_cohort, card_type=card_type, **ids)
        for flavor, counts in t.nominal.items():
            pool = facts.pools[t.pools[flavor]]
            cards = sum((n * pool.weights.get(r, Fraction(1)) for r, n in counts.items()), 0)
            yield fact(TEAM_NOMINAL, cards, flavor=flavor, pool=pool.name, **ids)
        for namespace in t.namespaces:
            if namespace not in claimed:  # a namespace two teams list is a validate error
                claimed.add(namespace)
                yield fact(NAMESPACE_TEAM, 1, namespace=namespace, team=t.name)
        if t.budget_monthly is not None:
            yield fact(BUDGET, t.budget_monthly, team=t.name)
        if facts.volcano:
            for queue, pool_name in t.volcano_queues.items():
                yield fact(
                    VOLCANO_QUEUE, 1, queue=queue, queue_name=queue, team=t.name, pool=pool_name
                )


def policy_group(facts: Facts) -> dict[str, Any]:
    rules = [*_pools(facts), *_teams(facts)]
    rules += [fact(OBJECTIVE, s, priority_class=tier) for tier, s in facts.tiers.items()]
    return {"name": "hetgitops-policy", "rules": rules}
