"""The nodes of a pool as kube-scheduler and Kueue's topology-aware scheduling see them: labels
(taxonomy + hostname), taints, and what each offers per accelerator resource.

Accelerator units per node come from plan/capacity (`node_units` at the replicas the device
plugin advertises, as drift counts them); cpu and memory per node are not in the policy, so a node
is taken to hold the cpu and memory its cards come with (as the simulated fleet builds them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hetgitops.compilers.nvidia import is_nvidia, node_nvidia_labels
from hetgitops.model import mig
from hetgitops.model.node_selection import requirement_holds
from hetgitops.model.policy import CardType, Node, Policy, Pool, Taint, derived
from hetgitops.model.tolerations import tolerates
from hetgitops.plan.capacity import (
    covered_gpus,
    main_resource,
    mig_strategy,
    node_units,
)
from hetgitops.plan.flavors import HOSTNAME
from hetgitops.plan.node_labels import node_labels
from hetgitops.plan.quota_plan import kueue_amount


@dataclass(frozen=True)
class NodeView:
    name: str
    pool: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    units: Mapping[str, int]  # accelerator resource -> allocatable units
    # cpu (milli) and memory (bytes) the node is taken to hold: its cards times the largest
    # cpu / memory per card the fleet, a team or a profile asks for (a node never runs out
    # of either before its cards; the policy does not say more).
    host: Mapping[str, int] = dataclasses.field(default_factory=dict)


def pool_nodes(policy: Policy, pool: Pool) -> list[NodeView]:
    """Every node of the pool, computed once per policy and pool."""
    return derived(policy, ("explain_nodes", pool.name), lambda: _nodes(policy, pool))


def _nodes(policy: Policy, pool: Pool) -> list[NodeView]:
    card = policy.card_types.get(pool.card_type)
    if card is None:
        return []
    per_size: dict[int, dict[str, int]] = {}
    cpu, memory = derived(policy, "explain_host_per_card", lambda: _host_per_card(policy))
    found = []
    for node in pool.nodes:
        if node.cards not in per_size:
            # What the node holds: the device plugin's replicas, as drift counts them.
            units = node_units(pool, card, policy.fleet, node.cards, replicas="advertised")
            per_size[node.cards] = {
                name: count
                for name, count in sorted(units.items())
                if count or name == main_resource(pool, card)
            }
        labels = {
            **_device_labels(policy, pool, card, node, per_size[node.cards]),
            **node_labels(policy, pool, node),
            HOSTNAME: node.name,
        }
        host = {"cpu": cpu * node.cards, "memory": memory * node.cards}
        found.append(
            NodeView(node.name, pool.name, labels, pool.taints, per_size[node.cards], host)
        )
    return found


# GPU feature discovery's gpu.family for the catalogue's architectures where they differ.
_FAMILIES = {"ada": "ada-lovelace"}


def _device_labels(
    policy: Policy, pool: Pool, card: CardType, node: Node, units: Mapping[str, int]
) -> dict[str, str]:
    """The labels NFD, GPU feature discovery and the GPU Operator put on the node, as the real
    nodes carry them, so a job selecting on them (the standard `nvidia.com/gpu.product`)
    matches: NFD's PCI vendor label for every card type; for NVIDIA cards GFD's product
    (`CardType.productNames`, `-MIG-<profile>` under the single strategy, `-SHARED` for
    time-sliced replicas not renamed), count, memory (MiB, from memoryGiB: GFD reads the
    driver's figure, a little less), family, replicas, MIG capability, strategy and
    per-profile counts, and the config labels hetgitops writes (`node_nvidia_labels`).
    GFD reads replicas and `-SHARED` from the device plugin's config, which during a staged
    sharing reduction still holds the retiring replicas (`Pool.advertised_replicas`)."""
    labels = {
        f"feature.node.kubernetes.io/pci-{pci[-4:].lower()}.present": "true"
        for pci in card.pci_device_ids
        if len(pci) >= 4
    }
    if not is_nvidia(card):
        return labels
    product = card.product_names[0] if card.product_names else card.model
    strategy = mig_strategy(policy.fleet)
    mig_units = {r: n for r, n in units.items() if r.startswith(mig.resource_name(""))}
    layout = covered_gpus(pool, node.cards) if pool.mig and strategy != "none" else {}
    profiles = {p for gpu in layout.values() for p in gpu}
    if strategy == "single" and len(layout) == node.cards and len(profiles) == 1:
        product += f"-MIG-{next(iter(profiles))}"
    elif pool.advertised_replicas > 1 and main_resource(pool, card) == card.resource_name:
        product += "-SHARED"
    sharing = "time-slicing" if pool.time_slicing_replicas else "mps" if pool.mps_replicas else ""
    labels.update(
        {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.count": str(node.cards),
            "nvidia.com/gpu.memory": str(int(card.memory_gib * 1024)),
            "nvidia.com/gpu.family": _FAMILIES.get(card.architecture, card.architecture),
            "nvidia.com/gpu.replicas": str(pool.advertised_replicas),
            "nvidia.com/gpu.sharing-strategy": sharing or "none",
            "nvidia.com/mig.capable": "true" if card.mig_table else "false",
        }
    )
    if card.mig_table:
        labels["nvidia.com/mig.strategy"] = strategy
    for resource, count in mig_units.items():
        labels[f"{resource}.count"] = str(count)
    labels.update(node_nvidia_labels(policy, pool, node))
    return labels


def _host_per_card(policy: Policy) -> tuple[int, int]:
    """The largest cpu (milli) and memory (bytes) per card of the fleet, teams and profiles."""
    fleet = policy.fleet
    cpus = [fleet.cpu_per_card] if fleet else ["12"]
    memories = [fleet.memory_per_card] if fleet else ["96Gi"]
    for team in policy.teams.values():
        cpus += [team.cpu_per_card] if team.cpu_per_card else []
        memories += [team.memory_per_card] if team.memory_per_card else []
        cpus += [q.cpu_per_card for q in team.quotas if q.cpu_per_card]
        memories += [q.memory_per_card for q in team.quotas if q.memory_per_card]
    for profile in policy.profiles.values():
        cpus += [profile.cpu_per_card] if profile.cpu_per_card else []
        memories += [profile.memory_per_card] if profile.memory_per_card else []
    return (
        max(kueue_amount("cpu", str(c)) for c in cpus),
        max(kueue_amount("memory", str(m)) for m in memories),
    )


def limiting(node: NodeView, requests: Mapping[str, int], free: Mapping[str, int]) -> str:
    """The resource Kueue's topology placement names when a node holds no pod: the one with
    the fewest pods, ties to the smaller name, so a pod larger than the whole node is short
    of "cpu" first (SliceRequests.CountInWithLimitingResource, slice_requests.go:351-380;
    tas_flavor_snapshot.go:1913-1919). cpu and memory: what `free` says (live mode reads
    them), else the node's whole `host`."""
    counts = []
    for resource, amount in requests.items():
        if amount <= 0 or resource in ("pods", "ephemeral-storage"):
            continue
        if resource in ("cpu", "memory") and resource not in free:
            have = node.host.get(resource, 0)
        else:
            have = free.get(resource, 0)
        counts.append((have // amount, resource))
    return min(counts)[1] if counts else ""


def tolerated(taint: Taint, tolerations: Iterable[Mapping[str, Any]]) -> bool:
    """kube-scheduler's TaintToleration rule for one NoSchedule/NoExecute taint."""
    return tolerates(tolerations, taint.key, taint.value, taint.effect)


def untolerated(node: NodeView, tolerations: Iterable[Mapping[str, Any]]) -> Taint | None:
    listed = list(tolerations)
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not tolerated(taint, listed):
            return taint
    return None


def taint_text(taint: Taint) -> str:
    """A taint as Kubernetes prints it (`key=value:Effect`)."""
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


Terms = tuple[tuple[Mapping[str, Any], ...], ...]


def affinity_holds(terms: Terms | None, labels: Mapping[str, str]) -> bool:
    """Required node affinity: any term whose expressions all hold (no terms: any node)."""
    if terms is None:
        return True
    return any(term and all(requirement_holds(r, labels) for r in term) for term in terms)


def admits(selector: Mapping[str, str], terms: Terms | None, labels: Mapping[str, str]) -> bool:
    """A node kube-scheduler's NodeAffinity filter lets the pod onto: nodeSelector and the
    required node affinity both hold."""
    return selects(selector, labels) and affinity_holds(terms, labels)


def slots(node: NodeView, requests: Mapping[str, int], free: Mapping[str, int] | None) -> int:
    """How many pods of `requests` fit the node's accelerators (free units when given); a pod
    that asks no accelerator is bounded only by the 110 pods a node runs."""
    units = node.units if free is None else free
    counts = [
        units.get(resource, 0) // amount
        for resource, amount in requests.items()
        if amount > 0
        and resource not in ("pods", "ephemeral-storage")
        # cpu and memory count where the caller knows them (live mode reads them)
        and (resource not in ("cpu", "memory") or resource in units)
    ]
    return min(counts, default=110)
