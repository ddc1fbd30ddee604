"""Compile stage, `monitoring` target: the idle-GPU scenarios of DRA pools, fed as dcgm-exporter
4.5.3-4.8.2 publishes a GPU given by DRA (docs/upstream.md): with `KUBERNETES_ENABLE_DRA` its
series is copied once per pod holding the GPU, with `namespace`, `pod`, `container` and the
`dra_*` labels of the claim's device; a MIG instance is never labelled (its pods are looked up
as `<gpu>-<instance>`, DRA devices are keyed by the parent GPU's UUID). No pod requests a
claimed GPU, so kube-state-metrics shows no request.

Traps: a GPU of the node nobody holds (no pod labels) idling beside a busy team, and on a
MIG pool its MIG instances idle without pod labels, as upstream reports them."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.compilers.monitoring import alerts as a
from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring.facts import PoolFacts, TeamFacts
from hetgitops.compilers.monitoring.promtests import SAMPLE, Case, Fired
from hetgitops.compilers.monitoring.scenario_base import Scene, minutes
from hetgitops.model.policy import Node
from hetgitops.plan import dra
from hetgitops.plan.capacity import covered_gpus

DRIVER = dra.DRIVER  # the only driver dcgm-exporter maps (const.go DRAGPUDriverName)


def _holders(scene: Scene) -> Iterator[tuple[TeamFacts, PoolFacts, Node, list[int]]]:
    """(team, DRA pool, node, the node's whole GPUs) where the team holds whole-card quota
    in the pool: only whole GPUs are ever attributed to a pod."""
    for team in scene.facts.teams.values():
        for flavor, name in team.pools.items():
            pool = scene.facts.pools[name]
            held = team.nominal.get(flavor, {})
            if not (pool.nvidia and pool.dra) or not any(
                n for r, n in held.items() if r not in pool.slices
            ):
                continue
            policy_pool = scene.policy.pools[name]
            for node in policy_pool.nodes:
                layout = covered_gpus(policy_pool, node.cards) if pool.mig else {}
                whole = [g for g in range(node.cards) if g not in layout]
                if whole:
                    yield team, pool, node, whole
                    break


def idle(scene: Scene, alert: a.Alert) -> list[Case]:
    threshold = scene.fleet.monitoring.idle_percent
    cases = []
    for team, pool, node, whole in list(_holders(scene))[:SAMPLE]:
        for busy in (False, True):
            percent = (threshold + 100) / 2 if busy else threshold / 2
            cases.append(_case(scene, alert, team, pool, node, whole, percent, fires=not busy))
    return cases


def _case(
    scene: Scene,
    alert: a.Alert,
    team: TeamFacts,
    pool: PoolFacts,
    node: Node,
    whole: list[int],
    percent: float,
    *,
    fires: bool,
) -> Case:
    state = "idle" if fires else "busy"
    threshold = scene.fleet.monitoring.idle_percent
    case = Case(f"team {team.name} in DRA pool {pool.name} {state}", minutes(alert.duration))
    scene.node(case, pool, node.name)
    namespace, pod = team.namespaces[0], "work-0"
    card = scene.policy.card_types[scene.policy.pools[pool.name].card_type]
    model = card.product_names[0] if card.product_names else card.model
    metric = names.GR_ENGINE_ACTIVE if pool.mig else names.GPU_UTIL
    scale = 1 / 100 if pool.mig else 1

    def ids(gpu: int) -> dict[str, str]:
        return {
            "gpu": str(gpu),
            "UUID": f"GPU-{node.name}-{gpu}",
            "pci_bus_id": f"00000000:{gpu + 1:02X}:00.0",
            "device": f"nvidia{gpu}",
            "modelName": model,
            "Hostname": node.name,
        }

    held, free = whole[:-1] or whole, whole[-1:] if len(whole) > 1 else []
    for gpu in held:
        claim = {
            "namespace": namespace,
            "pod": pod,
            "container": "main",
            "dra_claim_name": f"{pod}-gpu",
            "dra_claim_namespace": namespace,
            "dra_driver_name": DRIVER,
            "dra_pool_name": node.name,
            "dra_device_name": f"gpu-{gpu}",
        }
        case.add(metric, percent * scale, **ids(gpu), **claim)
    for gpu in free:  # trap: a GPU nobody holds, idle beside a busy team
        case.add(metric, threshold / 2 * scale, **ids(gpu))
    layout = covered_gpus(scene.policy.pools[pool.name], node.cards) if pool.mig else {}
    for gpu, profiles in sorted(layout.items()):  # trap: instances, never labelled with pods
        for number, profile in enumerate(p for p, n in sorted(profiles.items()) for _ in range(n)):
            case.add(
                metric, threshold / 200, **ids(gpu), GPU_I_PROFILE=profile, GPU_I_ID=str(number)
            )
    case.add(names.POD_PHASE, 1, namespace=namespace, pod=pod, phase="Running")
    if fires:
        labels = {"team": team.name, "pool": pool.name, "card_type": pool.card_type}
        case.fired.append(Fired(labels, percent / 100))
    return case
