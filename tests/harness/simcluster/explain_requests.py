"""Requests at the edges Kueue's topology-aware placement decides, for the explain
differential test (issue 20 item 3): a pod at, above and at half a node's units, pod counts
around the pool's node count, and Kueue's podset-required / -preferred topology annotations
(rack, zone). The random mix in `workloads.generate` seldom reaches them; these are the cases
where flavor order, LastTriedFlavorIdx and the domain search decide the verdict."""

from __future__ import annotations

import random

from harness.simcluster.workloads import LABEL, Generated, job
from hetgitops.explain import request as requests
from hetgitops.explain.nodes import pool_nodes
from hetgitops.explain.workload import TAS_PREFERRED, TAS_REQUIRED
from hetgitops.model.policy import Policy
from hetgitops.plan.capacity import main_resource
from hetgitops.plan.quota_plan import team_plan

RACK = "hetgitops.io/rack"
ZONE = "topology.kubernetes.io/zone"


def edge_requests(
    policy: Policy, seed: int, count: int, prefix: str = "sim-edge"
) -> list[Generated]:
    rng = random.Random(seed)
    teams = sorted(policy.teams)
    found: list[Generated] = []
    for _ in range(count * 50):  # a fleet with no whole units to edge yields fewer
        if len(found) >= count:
            break
        team = policy.teams[rng.choice(teams)]
        plans = team_plan(policy, team)
        if not plans:
            continue
        pool = rng.choice(plans).pool
        card = policy.card_types[pool.card_type]
        resource = main_resource(pool, card)
        nodes = pool_nodes(policy, pool)
        largest = max((n.units.get(resource, 0) for n in nodes), default=0)
        if largest == 0:
            continue
        per_pod = rng.choice([largest, largest, largest + 1, max(1, largest // 2)])
        pods = rng.choice([1, 2, 3, len(nodes) // 2 or 1, len(nodes), len(nodes) + 1])
        annotation = rng.choice(
            [None, None, (TAS_REQUIRED, RACK), (TAS_REQUIRED, ZONE), (TAS_PREFERRED, RACK)]
        )
        asked = requests.Request(
            team.name, gpus=per_pod * pods, card=pool.card_type, per_node=per_pod
        )
        workload = requests.from_request(policy, asked)
        obj = job(f"{prefix}-{len(found):04d}", workload, tolerate=True, policy=policy)
        if annotation is not None:
            template = obj["spec"]["template"]
            template.setdefault("metadata", {}).setdefault("annotations", {})[annotation[0]] = (
                annotation[1]
            )
        obj["metadata"]["labels"][LABEL] = "true"
        found.append(Generated(obj["metadata"]["name"], asked, workload, obj, pool.card_type))
    return found
