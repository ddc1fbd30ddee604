"""Hand-written clusters, generated (tests/generated/clustergen.py): the shapes (cards, pools,
the dump) and a seed's Nodes and GPU Operator configs, which the queues are drawn over."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import yaml

from tests import fastyaml

Obj = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"
VOLCANO = "scheduling.volcano.sh/v1beta1"
OPERATOR_NS = "gpu-operator"


@dataclass(frozen=True)
class Card:
    product: str
    device: str  # PCI device id, as mig-parted's device-filter spells it
    memory: int  # MiB, GFD's nvidia.com/gpu.memory
    layouts: tuple[dict[str, int], ...]  # MIG layouts that fit (model/mig.py's packing)


_A100 = ({"1g.5gb": 7}, {"3g.20gb": 2}, {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2})
_H100 = ({"1g.10gb": 7}, {"3g.40gb": 2}, {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})
CARDS = {
    "a100": Card("NVIDIA-A100-SXM4-40GB", "0x20B010DE", 40960, _A100),
    "h100": Card("NVIDIA-H100-80GB-HBM3", "0x233010DE", 81559, _H100),
    "l40s": Card("NVIDIA-L40S", "", 46068, ()),
}
_PURPOSE = ("train", "infer", "batch", "research", "shared", "dev", "prod")


@dataclass
class Pool:
    name: str
    card: str
    mode: str  # whole | mig | timeslice
    nodes: list[str]
    per_node: int
    layout: dict[str, int] = field(default_factory=dict)
    replicas: int = 1
    taint: str = ""  # the taint key, when the pool is tainted
    selector: dict[str, str] = field(default_factory=dict)

    def resources(self) -> dict[str, int]:
        """What one node advertises (MIG: every GPU in the layout, mixed strategy)."""
        if self.mode == "mig":
            return {f"nvidia.com/mig-{p}": n * self.per_node for p, n in self.layout.items()}
        return {"nvidia.com/gpu": self.per_node * self.replicas}


@dataclass
class Cluster:
    seed: int
    objects: list[Obj]
    constructs: list[str]  # what the seed drew, in drawing order
    unsayable: dict[str, list[str]]  # construct -> "Kind name" each finding must name
    # construct -> "Kind name" the written policy must render as the cluster has it (a
    # construct that became sayable: the sweep asserts it is kept, not merely named)
    sayable: dict[str, list[str]] = field(default_factory=dict)

    def text(self) -> str:
        return fastyaml.dump({"apiVersion": "v1", "kind": "List", "items": self.objects})


def meta(name: str, namespace: str = "", **labels: str) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


class Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.objects: list[Obj] = []
        self.constructs: list[str] = []
        self.unsayable: dict[str, list[str]] = {}
        self.sayable: dict[str, list[str]] = {}

    def drew(self, construct: str, *, unsayable: str = "", kept: str = "") -> None:
        if construct not in self.constructs:
            self.constructs.append(construct)
        if kept:
            self.sayable.setdefault(construct, []).append(kept)
        if unsayable:
            self.unsayable.setdefault(construct, []).append(unsayable)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # -- pools and nodes -----------------------------------------------------------------
    def pools(self) -> list[Pool]:
        count = self.rng.randint(1, 4)
        pools: list[Pool] = []
        used: set[str] = set()
        for index in range(count):
            card = self.rng.choice(sorted(CARDS))
            modes = ["whole", "timeslice"] if not CARDS[card].layouts else ["whole", "mig"]
            mode = self.rng.choice(modes)
            name = self._pool_name(card, used)
            ec2 = self.chance(0.3)
            nodes = [
                f"ip-10-{index}-{i}-{self.rng.randint(2, 250)}.ec2.internal"
                if ec2
                else f"{name}-{i:02d}"
                for i in range(self.rng.randint(1, 4))
            ]
            pool = Pool(name, card, mode, sorted(set(nodes)), self.rng.choice((4, 8)))
            if mode == "mig":
                pool.layout = dict(self.rng.choice(CARDS[card].layouts))
                self.drew("mig-mixed-layout" if len(pool.layout) > 1 else "mig-single-layout")
            elif mode == "timeslice":
                pool.replicas = self.rng.choice((2, 4))
                self.drew("time-slicing")
            else:
                self.drew("whole-gpus")
            if self.chance(0.3):
                pool.taint = self.rng.choice(("dedicated", "nvidia.com/gpu", "workload"))
                self.drew("tainted-pool")
            pools.append(pool)
        by_card = [p.card for p in pools]
        for pool in pools:
            if by_card.count(pool.card) > 1 or self.chance(0.3):
                pool.selector = {"node-pool": pool.name}  # their own pool label
                self.drew("own-pool-label")
            else:
                pool.selector = {"nvidia.com/gpu.product": CARDS[pool.card].product}
        return pools

    def _pool_name(self, card: str, used: set[str]) -> str:
        while True:
            purpose = self.rng.choice(_PURPOSE)
            name = self.rng.choice(
                (f"{card}-{purpose}", f"gpu-{card}-{purpose}", f"{purpose}-{card}")
            )
            if name not in used:
                used.add(name)
                return name

    def node(self, pool: Pool, name: str) -> Obj:
        card = CARDS[pool.card]
        labels = {
            "kubernetes.io/hostname": name,
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": card.product,
            "nvidia.com/gpu.count": str(pool.per_node),
            "nvidia.com/gpu.memory": str(card.memory),
            **pool.selector,
        }
        if pool.mode == "mig":
            labels["nvidia.com/mig.config"] = f"{pool.name}-layout"
            labels["nvidia.com/mig.strategy"] = "mixed"
            labels["nvidia.com/mig.capable"] = "true"
            for profile, n in pool.layout.items():
                labels[f"nvidia.com/mig-{profile}.count"] = str(n * pool.per_node)
        if pool.mode == "timeslice":
            labels["nvidia.com/device-plugin.config"] = f"{pool.name}-sharing"
            labels["nvidia.com/gpu.replicas"] = str(pool.replicas)
            labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
        allocatable = {
            "cpu": "96",
            "memory": "1Ti",
            "pods": "110",
            **{k: str(v) for k, v in pool.resources().items()},
        }
        node: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
        }
        if pool.taint:
            node["spec"] = {
                "taints": [{"key": pool.taint, "value": pool.name, "effect": "NoSchedule"}]
            }
        node["status"] = {"allocatable": allocatable, "nodeInfo": {"kubeletVersion": "v1.33.2"}}
        return node

    # -- the GPU Operator's configs ------------------------------------------------------
    def operator(self, pools: list[Pool]) -> None:
        mig = [p for p in pools if p.mode == "mig"]
        shared = [p for p in pools if p.mode == "timeslice"]
        if not mig and not shared:
            return
        # The fields the GPU Operator's CRD requires, as a minimal Helm install has them: the
        # dump must be what the real API server accepts (the live import sweep creates it).
        required = ("daemonsets", "driver", "toolkit", "dcgm", "dcgmExporter", "devicePlugin")
        policy: Obj = {
            "operator": {"defaultRuntime": "containerd"},
            **{field: {} for field in (*required, "gfd", "nodeStatusExporter")},
            "mig": {"strategy": "mixed"},
        }
        if mig:
            configs: Obj = {"all-disabled": [{"devices": "all", "mig-enabled": False}]}
            for pool in mig:
                devices = {str(p): n for p, n in pool.layout.items()}
                entry = {
                    "device-filter": CARDS[pool.card].device,
                    "devices": "all",
                    "mig-enabled": True,
                    "mig-devices": devices,
                }
                configs[f"{pool.name}-layout"] = [entry]
            text = yaml.safe_dump({"version": "v1", "mig-configs": configs})
            self.configmap("custom-mig-config", {"config.yaml": text})
            policy["migManager"] = {
                "config": {"name": "custom-mig-config", "default": "all-disabled"}
            }
        if shared:
            data = {"default": yaml.safe_dump({"version": "v1", "flags": {"migStrategy": "mixed"}})}
            for pool in shared:
                sharing = {
                    "timeSlicing": {
                        "resources": [{"name": "nvidia.com/gpu", "replicas": pool.replicas}]
                    }
                }
                data[f"{pool.name}-sharing"] = yaml.safe_dump(
                    {"version": "v1", "flags": {"migStrategy": "mixed"}, "sharing": sharing}
                )
            self.configmap("time-slicing-config", data)
            policy["devicePlugin"] = {
                "config": {"name": "time-slicing-config", "default": "default"}
            }
        self.objects.append(
            {
                "apiVersion": "nvidia.com/v1",
                "kind": "ClusterPolicy",
                "metadata": {"name": "cluster-policy"},
                "spec": policy,
            }
        )

    def configmap(self, name: str, data: dict[str, str]) -> None:
        self.objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta(name, OPERATOR_NS),
                "data": data,
            }
        )

    def without_gpu_configs(self) -> None:
        """The dump as `kubectl get nodes,clusterqueues,...` without configmaps writes it: the
        first node naming each MIG or device-plugin config must be named by import."""
        kinds = ("ConfigMap", "ClusterPolicy")
        if not any(o["kind"] in kinds for o in self.objects):
            return
        self.objects = [o for o in self.objects if o["kind"] not in kinds]
        named: set[str] = set()
        for node in (o for o in self.objects if o["kind"] == "Node"):
            labels = node["metadata"]["labels"]
            for label in ("nvidia.com/mig.config", "nvidia.com/device-plugin.config"):
                if label in labels and labels[label] not in named:
                    named.add(labels[label])
                    self.drew(
                        "dump-without-gpu-configs", unsayable=f"Node {node['metadata']['name']}"
                    )
