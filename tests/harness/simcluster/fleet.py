"""Fleet stage: the kwok Nodes and NodeFeature objects of a policy's pools.

One Node per policy node with what its device plugin would advertise (counted by hetgitops'
own plan/capacity.py, so the fleet holds exactly what the policy says; on a DRA pool nothing
unless the device plugin still runs there, `dra.py`), the pool's taints, and
only the labels a kubelet sets itself, and on NVIDIA nodes GPU feature discovery's product and
count (`gfd_labels`). Every other label must come from nfd-master, which reads the NodeFeature
object published here the way nfd-worker would.

Node agents are DaemonSets: they run only where they tolerate the node's taints. nfd-worker's
tolerations are the rendered NFD values' `worker.tolerations` (chart default: none); the NVIDIA
device plugin's are the rendered GPU Operator values' `daemonsets.tolerations` (chart default:
`nvidia.com/gpu` only). A node an agent does not tolerate gets no NodeFeature (so no NFD
labels) or no `nvidia.com/*` capacity, as on a real cluster. Ascend and Cambricon device plugins
are outside the render; their capacity is always advertised.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from hetgitops.compilers import gpu_operator
from hetgitops.compilers.nodes import nfd_helm_values
from hetgitops.model import quantities
from hetgitops.model.policy import Node, Policy, Pool, Taint
from hetgitops.plan.capacity import pool_resources
from hetgitops.plan.dra import on_dra

from . import dra

NFD_NAMESPACE = "node-feature-discovery"
NFD_NODE_LABEL = "nfd.node.kubernetes.io/node-name"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# Beyond the accelerators' share: what DaemonSets and system pods of a real node would use.
_SPARE_CPU = Decimal(8)
_SPARE_MEMORY = Decimal(32 * 2**30)
_MAX_PODS = 110
# PCI vendor ids, as nfd-worker reports them (pci.device instances, `vendor` attribute).
_PCI_VENDORS = {"nvidia": "10de", "huawei": "19e5", "cambricon": "cabc", "amd": "1002"}


# Chart defaults when the rendered values say nothing (NFD chart values.yaml worker.tolerations;
# GPU Operator chart values.yaml daemonsets.tolerations).
NFD_WORKER_DEFAULT: list[dict[str, Any]] = []
GPU_OPERATOR_DEFAULT = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def tolerates(tolerations: list[dict[str, Any]], taints: tuple[Taint, ...]) -> bool:
    """Whether a pod with `tolerations` may run on a node with `taints` (the scheduler's rule
    for NoSchedule/NoExecute; PreferNoSchedule never keeps a DaemonSet pod away)."""
    return all(
        any(_tolerates(t, taint) for t in tolerations)
        for taint in taints
        if taint.effect in ("NoSchedule", "NoExecute")
    )


def _tolerates(toleration: dict[str, Any], taint: Taint) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.key
    return toleration.get("key") == taint.key and (toleration.get("value") or "") == (
        taint.value or ""
    )


def nfd_worker_runs(policy: Policy, pool: Pool) -> bool:
    worker = nfd_helm_values(policy).get("worker", {})
    return tolerates(worker.get("tolerations", NFD_WORKER_DEFAULT), pool.taints)


def nvidia_plugin_runs(policy: Policy, pool: Pool) -> bool:
    if policy.card_types[pool.card_type].vendor != "nvidia":
        return True  # the GPU Operator's DaemonSets serve NVIDIA nodes only; nothing to tolerate
    if policy.fleet is None or "gpu-operator" not in policy.fleet.targets:
        return True  # the GPU software is installed some other way: assume it runs
    values = gpu_operator.helm_values(policy, policy.fleet)
    daemonsets = values.get("daemonsets", {})
    return tolerates(daemonsets.get("tolerations", GPU_OPERATOR_DEFAULT), pool.taints)


def node_resources(
    policy: Policy,
    pool: Pool,
    node: Node,
    *,
    plugin_runs: bool | None = None,
    per_card: tuple[Decimal, Decimal] | None = None,
) -> dict[str, str]:
    """status.capacity (= allocatable) of one node: the pool's per-node accelerators, exactly as
    plan/capacity.py counts them for the policy, plus cpu, memory and pods. `plugin_runs` and
    `per_card` are facts of the pool and of the policy: a caller that builds many nodes passes
    them once computed (both walk the whole fleet)."""
    card = policy.card_types[pool.card_type]
    single = dataclasses.replace(pool, nodes=(node,))
    if pool.retiring_replicas:  # a staged reduction: the device plugin keeps the old count
        single = dataclasses.replace(
            single,
            time_slicing_replicas=pool.retiring_replicas if pool.time_slicing_replicas else None,
            mps_replicas=None if pool.time_slicing_replicas else pool.retiring_replicas,
            retiring_replicas=None,
        )
    accelerators = pool_resources(single, card, policy.fleet)
    if on_dra(pool):  # DRA devices are ResourceSlices, never allocatable (dra.py)
        view = dra.plugin_view(single)
        accelerators = pool_resources(view, card, policy.fleet) if view else {}
    if not (nvidia_plugin_runs(policy, pool) if plugin_runs is None else plugin_runs):
        accelerators = {k: v for k, v in accelerators.items() if not k.startswith("nvidia.com/")}
    cpu, memory = per_card or _per_card(policy)
    resources = {name: str(count) for name, count in accelerators.items()}
    resources["cpu"] = quantities.canonical(cpu * node.cards + _SPARE_CPU)
    resources["memory"] = quantities.canonical(memory * node.cards + _SPARE_MEMORY, binary=True)
    resources["pods"] = str(_MAX_PODS)
    return dict(sorted(resources.items()))


def _per_card(policy: Policy) -> tuple[Decimal, Decimal]:
    """The largest cpu and memory per card any team or profile asks for: a node must never run
    out of cpu or memory before it runs out of accelerators, or a test would fail for a reason
    the policy does not model."""
    fleet = policy.fleet
    cpus = [fleet.cpu_per_card] if fleet else ["12"]
    memories = [fleet.memory_per_card] if fleet else ["96Gi"]
    for owner in [*policy.teams.values(), *policy.profiles.values()]:
        cpus += [owner.cpu_per_card] if owner.cpu_per_card else []
        memories += [owner.memory_per_card] if owner.memory_per_card else []
    return max(map(quantities.value_of, cpus)), max(map(quantities.value_of, memories))


def kwok_node(
    policy: Policy,
    pool: Pool,
    node: Node,
    *,
    plugin_runs: bool | None = None,
    per_card: tuple[Decimal, Decimal] | None = None,
) -> dict[str, Any]:
    runs = nvidia_plugin_runs(policy, pool) if plugin_runs is None else plugin_runs
    resources = node_resources(policy, pool, node, plugin_runs=runs, per_card=per_card)
    taints = [
        {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}
        for t in pool.taints
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            # kwok manages only nodes with this annotation (--manage-nodes-with-annotation-selector)
            "annotations": {KWOK_ANNOTATION: "fake"},
            # What a kubelet sets on registration; nothing else, so NFD's labels stand out.
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": node.name,
                "kubernetes.io/os": "linux",
                "type": "kwok",
                **gfd_labels(policy, pool, node, plugin_runs=runs),
            },
        },
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": resources, "allocatable": resources},
    }


def gfd_labels(policy: Policy, pool: Pool, node: Node, *, plugin_runs: bool) -> dict[str, str]:
    """What the GPU Operator's GPU feature discovery writes on an NVIDIA node (product name and
    GPU count; a GPU Operator operand, so only where the operands run, like the device
    plugin's capacity). Nothing in hetgitops' render reads them; `hetgitops import` matches a
    node's card by them, as on a real GPU Operator cluster."""
    card = policy.card_types[pool.card_type]
    if card.vendor != "nvidia" or not plugin_runs or not node.cards:
        return {}
    labels = {"nvidia.com/gpu.count": str(node.cards)}
    if card.product_names:
        labels["nvidia.com/gpu.product"] = card.product_names[0]
    return labels


def node_feature(policy: Policy, pool: Pool, node: Node) -> dict[str, Any]:
    """The NodeFeature nfd-worker would publish: system.name (what hetgitops' rules match on),
    the kernel and OS, and the accelerators as PCI devices."""
    card = policy.card_types[pool.card_type]
    vendor = _PCI_VENDORS.get(card.vendor, "ffff")
    devices = (
        [
            {
                "attributes": {
                    "class": "1200" if card.vendor != "nvidia" else "0302",
                    "vendor": vendor,
                    "device": _device_id(card.pci_device_ids),
                }
            }
        ]
        if node.cards
        else []
    )
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {
            "name": node.name,
            "namespace": NFD_NAMESPACE,
            "labels": {NFD_NODE_LABEL: node.name},
        },
        "spec": {
            "features": {
                "attributes": {
                    "system.name": {"elements": {"nodename": node.name}},
                    "system.osrelease": {"elements": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
                    "kernel.version": {
                        "elements": {
                            "full": "6.8.0-kwok",
                            "major": "6",
                            "minor": "8",
                            "revision": "0",
                        }
                    },
                },
                "instances": {"pci.device": {"elements": devices}},
            }
        },
    }


def _device_id(ids: tuple[str, ...]) -> str:
    # hetgitops writes 0xDDDDVVVV (device, vendor); nfd-worker reports the 4-digit device id.
    return ids[0].lower().removeprefix("0x")[:4] if ids else "0000"


def fleet_objects(policy: Policy) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Nodes, NodeFeatures) of every node of every pool, in policy order; NodeFeatures only
    where nfd-worker would run. Whether the agents run is decided once per pool and the cpu and
    memory per card once per policy: each walks the whole fleet, so per node they made a
    5,000-node fleet quadratic (minutes of Python)."""
    per_card = _per_card(policy)
    nodes: list[dict[str, Any]] = []
    features: list[dict[str, Any]] = []
    for pool in policy.pools.values():
        plugin_runs = nvidia_plugin_runs(policy, pool)
        worker_runs = nfd_worker_runs(policy, pool)
        for node in pool.nodes:
            nodes.append(kwok_node(policy, pool, node, plugin_runs=plugin_runs, per_card=per_card))
            if worker_runs:
                features.append(node_feature(policy, pool, node))
    return nodes, features
