"""Compile stage, `monitoring` target: the promtool scenarios of the pool alerts: capacity
below the committed quota (with a second kube-state-metrics replica as a double-counting
trap), idle GPUs (`DCGM_FI_DEV_GPU_UTIL` on MIG GPUs as a trap: not reported there
upstream), a transition pool in use before its expiry, and nodes off their MIG layout."""

from __future__ import annotations

from fractions import Fraction

from hetgitops.compilers import nvidia
from hetgitops.compilers.monitoring import alerts as a
from hetgitops.compilers.monitoring import names, scenarios_dra
from hetgitops.compilers.monitoring.facts import PoolFacts, TeamFacts
from hetgitops.compilers.monitoring.promtests import SAMPLE, Case, Fired
from hetgitops.compilers.monitoring.scenario_base import (
    LEADER,
    Scene,
    cards,
    minutes,
    nominal_resource,
)
from hetgitops.model.policy import Node
from hetgitops.plan.capacity import covered_gpus, node_units


def capacity(scene: Scene, alert: a.Alert) -> list[Case]:
    committed = [p for p in scene.facts.pools.values() if p.committed_cards > 0]
    chosen = [p for p in committed if p.dra][:1]  # a DRA pool's capacity has its own source
    chosen += [p for p in committed if p not in chosen][: SAMPLE - len(chosen)]
    cases: list[Case] = []
    for pool in chosen:
        for degraded in (False, True):
            cases.append(_capacity_case(scene, alert, pool, committed, degraded=degraded))
    return cases


def _capacity_case(
    scene: Scene, alert: a.Alert, pool: PoolFacts, committed: list[PoolFacts], *, degraded: bool
) -> Case:
    case = Case(f"pool {pool.name} {'degraded' if degraded else 'ready'}", minutes(alert.duration))
    nodes = scene.policy.pools[pool.name].nodes
    live = sum((_node_cards(scene, pool, n) for n in nodes), Fraction(0))
    cordoned: set[str] = set()
    for node in nodes if degraded else ():
        if live < pool.committed_cards:
            break
        cordoned.add(node.name)
        live -= _node_cards(scene, pool, node)
    replicas = ("ksm-0", "ksm-1") if degraded else ("ksm-0",)
    for node in nodes:
        scene.node(case, pool, node.name)
        if pool.dra:
            _dcgm_gpus(scene, case, pool, node)
        for instance in replicas:
            for resource, count in _allocatable(scene, pool, node).items():
                case.add(
                    names.NODE_ALLOCATABLE,
                    count,
                    node=node.name,
                    instance=instance,
                    resource=names.sanitise(resource),
                    unit="integer",
                )
            case.add(
                names.NODE_ALLOCATABLE,
                64,
                node=node.name,
                instance=instance,
                resource="cpu",
                unit="core",
            )
            case.add(
                names.NODE_UNSCHEDULABLE,
                int(node.name in cordoned),
                node=node.name,
                instance=instance,
            )
    ids = {"pool": pool.name, "card_type": pool.card_type}
    if live < pool.committed_cards:
        case.fired.append(Fired(ids, float(live)))
    # Pools without nodes in this test have no schedulable cards at all.
    for other in committed:
        if other.name != pool.name:
            case.fired.append(Fired({"pool": other.name, "card_type": other.card_type}, 0.0))
    return case


def _node_cards(scene: Scene, pool: PoolFacts, node: Node) -> Fraction:
    """The cards a schedulable node gives its pool: its units (what its device plugin
    advertises, or on DRA the GPUs and MIG instances dcgm-exporter sees) weighed into cards,
    a MIG instance its share of a card on either path."""
    return cards(_units(scene, pool, node), pool.node_weights)


def _allocatable(scene: Scene, pool: PoolFacts, node: Node) -> dict[str, int]:
    """kube_node_status_allocatable's accelerators: none for DRA devices (the Node never
    lists them), but a node of a pool still moving off the device plugin advertises its GPUs
    there as well (a trap: they are the GPUs dcgm-exporter sees, counted once)."""
    policy_pool = scene.policy.pools[pool.name]
    if not pool.dra:
        return _units(scene, pool, node)
    card = scene.policy.card_type_of(policy_pool)
    if card and policy_pool.migrating_from and node.name == policy_pool.nodes[0].name:
        return {card.resource_name: node.cards}
    return {}


def _dcgm_gpus(scene: Scene, case: Case, pool: PoolFacts, node: Node) -> None:
    """dcgm-exporter's series on a DRA node: one per whole GPU, one per MIG instance on the
    GPUs the pool's layout partitions (with the parent's `gpu` index, GPU_I_PROFILE and
    GPU_I_ID); GR_ENGINE_ACTIVE in MIG pools, GPU_UTIL elsewhere, as the utilisation rule
    reads them."""
    policy_pool = scene.policy.pools[pool.name]
    layout = covered_gpus(policy_pool, node.cards) if pool.mig else {}
    metric = names.GR_ENGINE_ACTIVE if pool.mig else names.GPU_UTIL
    for gpu in range(node.cards):
        ids = {"gpu": str(gpu), "UUID": f"GPU-{node.name}-{gpu}", "Hostname": node.name}
        mine = [p for p, n in sorted(layout.get(gpu, {}).items()) for _ in range(n)]
        for number, profile in enumerate(mine):
            case.add(metric, 0.5, **ids, GPU_I_PROFILE=profile, GPU_I_ID=str(number))
        if not mine:
            case.add(metric, 0.5 if pool.mig else 50, **ids)


def _units(scene: Scene, pool: PoolFacts, node: Node) -> dict[str, int]:
    """What kube_node_status_allocatable shows for `node`: the plan's count of the units it
    holds (`plan.capacity.node_units` at the replicas the device plugin advertises, as drift
    and explain read it), under the resource names quotas use."""
    policy_pool = scene.policy.pools[pool.name]
    card = scene.policy.card_type_of(policy_pool)
    if card is None:
        return {}
    units = node_units(policy_pool, card, scene.fleet, node.cards, replicas="advertised")
    return {r: n for r, n in sorted(units.items()) if n}


def idle(scene: Scene, alert: a.Alert) -> list[Case]:
    pairs = [
        (team, scene.facts.pools[pool])
        for team in scene.facts.teams.values()
        for flavor, pool in team.pools.items()
        if scene.facts.pools[pool].nvidia
        and not scene.facts.pools[pool].dra  # no pod requests a DRA GPU: scenarios_dra
        and nominal_resource(team, flavor, scene.facts)
    ]
    chosen = [p for p in pairs if p[1].mig][:1]
    chosen += [p for p in pairs if not p[1].mig][: SAMPLE - len(chosen)]
    threshold = scene.fleet.monitoring.idle_percent
    cases = []
    for team, pool in chosen:
        for busy in (False, True):
            percent = (threshold + 100) / 2 if busy else threshold / 2
            cases.append(_idle_case(scene, alert, team, pool, percent, fires=not busy))
    return cases + scenarios_dra.idle(scene, alert)


def _idle_case(
    scene: Scene, alert: a.Alert, team: TeamFacts, pool: PoolFacts, percent: float, *, fires: bool
) -> Case:
    state = "idle" if fires else "busy"
    case = Case(f"team {team.name} in {pool.name} {state}", minutes(alert.duration))
    node = scene.policy.pools[pool.name].nodes[0]
    scene.node(case, pool, node.name)
    namespace, pod = team.namespaces[0], "work-0"
    owner = {"namespace": namespace, "pod": pod, "container": "main"}
    card = scene.policy.card_types[scene.policy.pools[pool.name].card_type]
    model = card.product_names[0] if card.product_names else card.model
    for gpu in range(node.cards):
        ids = {
            "gpu": str(gpu),
            "UUID": f"GPU-{node.name}-{gpu}",
            "modelName": model,
            "Hostname": node.name,
            **owner,
        }
        if pool.mig:
            case.add(names.GR_ENGINE_ACTIVE, percent / 100, GPU_I_ID="1", GPU_I_PROFILE="1g", **ids)
            case.add(names.GPU_UTIL, 100 - percent, **ids)  # trap: not reported upstream
        else:
            case.add(names.GPU_UTIL, percent, **ids)
    flavor = next(f for f, p in team.pools.items() if p == pool.name)
    resource = nominal_resource(team, flavor, scene.facts)
    case.add(
        names.POD_REQUESTS,
        1,
        node=node.name,
        resource=names.sanitise(resource),
        unit="integer",
        **owner,
    )
    case.add(names.POD_PHASE, 1, namespace=namespace, pod=pod, phase="Running")
    if fires:
        ids = {"team": team.name, "pool": pool.name, "card_type": pool.card_type}
        case.fired.append(Fired(ids, percent / 100))
    return case


def expired(scene: Scene, alert: a.Alert) -> list[Case]:
    """promtool's clock starts at 1970: an expiry date is never reached in a test, so
    the case checks the alert stays silent before expiry and the usage it would read."""
    cases = []
    for pool in [p for p in scene.facts.pools.values() if p.expires][:SAMPLE]:
        user = next((t for t in scene.facts.teams.values() if pool.name in t.pools.values()), None)
        if user is None:
            continue
        flavor = next(f for f, p in user.pools.items() if p == pool.name)
        case = Case(f"pool {pool.name} in use before its expiry", 10)
        for resource, count in user.nominal[flavor].items():
            ids = {"cluster_queue": user.cluster_queue, "flavor": flavor, "resource": resource}
            case.add(names.USAGE, count, **ids, **LEADER)
        used = cards(user.nominal[flavor], pool.weights)
        if used.denominator == 1 and used > 0:
            ids = {"pool": pool.name, "card_type": pool.card_type}
            case.samples.append(("hetgitops:pool_usage_cards", ids, float(used)))
        cases.append(case)
    return cases


def mig(scene: Scene, alert: a.Alert) -> list[Case]:
    cases = []
    for pool in [p for p in scene.facts.pools.values() if p.mig_configs][:SAMPLE]:
        node = scene.policy.pools[pool.name].nodes[0]
        found = nvidia.node_mig_config(scene.policy, scene.policy.pools[pool.name], node)
        declared = found[0] if found else pool.mig_configs[0]
        foreign = "hetgitops-test-foreign"
        for config, state in (
            (declared, "success"),
            (declared, "failed"),
            (foreign, "success"),
        ):
            name = f"pool {pool.name} node {node.name} {config} {state}"
            case = Case(name, minutes(alert.duration))
            scene.node(
                case,
                pool,
                node.name,
                **{
                    names.node_label(names.MIG_CONFIG_LABEL): config,
                    names.node_label(names.MIG_STATE_LABEL): state,
                },
            )
            if state != "success" or config not in pool.mig_configs:
                ids = {
                    "node": node.name,
                    "pool": pool.name,
                    "mig_config": config,
                    "mig_state": state,
                }
                case.fired.append(Fired(ids, 1.0))
            cases.append(case)
    return cases
