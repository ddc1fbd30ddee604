"""Hand-written clusters, generated: what `hetgitops import` meets on a fleet it did not render.

`cluster(seed)` returns one cluster dump (a `kind: List`, as `kubectl get ... -o yaml` writes
it) shaped as platform teams write their objects, not as hetgitops renders them: their own
names (no digests, no hetgitops labels), Nodes with GPU feature discovery's labels and the
kubelet's allocatable, the GPU Operator's mig-parted and device-plugin ConfigMaps, Kueue
flavors (some tainted, some with `nodeTaints`), ClusterQueues in flat or nested cohorts with
GPU-only limits or per-pool cpu, LocalQueues in labelled Namespaces, ResourceQuotas,
PriorityClasses beside WorkloadPriorityClasses, and Volcano queues per team. Deterministic per
seed (one `random.Random(seed)`, no clock, no hash order). `Cluster.constructs` names what the
seed drew, for the sweep's table; `Cluster.unsayable` the constructs the policy language
cannot say yet (issue 32 item 5), each with the objects import must name in a finding.

Reproduce a seed: `python -m tests.generated.clustergen 17 > dump.yaml`, then
`hetgitops import -f dump.yaml -o out/`.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

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
_TEAMS = ("vision", "nlp", "speech", "recsys", "search", "ads", "robotics", "genai", "ml-platform")
_COHORTS = ("research", "product", "org", "engineering")


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

    def text(self) -> str:
        return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": self.objects})


def _meta(name: str, namespace: str = "", **labels: str) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.objects: list[Obj] = []
        self.constructs: list[str] = []
        self.unsayable: dict[str, list[str]] = {}

    def drew(self, construct: str, *, unsayable: str = "") -> None:
        if construct not in self.constructs:
            self.constructs.append(construct)
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
        policy: Obj = {"operator": {"defaultRuntime": "containerd"}, "mig": {"strategy": "mixed"}}
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
                "metadata": _meta(name, OPERATOR_NS),
                "data": data,
            }
        )

    # -- Kueue ---------------------------------------------------------------------------
    def flavor(self, pool: Pool) -> None:
        spec: Obj = {"nodeLabels": dict(pool.selector)}
        if pool.taint:
            toleration = {
                "key": pool.taint,
                "operator": "Equal",
                "value": pool.name,
                "effect": "NoSchedule",
            }
            spec["tolerations"] = [toleration]
            if self.chance(0.4):
                spec["nodeTaints"] = [
                    {"key": pool.taint, "value": pool.name, "effect": "NoSchedule"}
                ]
                self.drew("flavor-node-taints", unsayable=f"ResourceFlavor {pool.name}")
        self.objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "ResourceFlavor",
                "metadata": _meta(pool.name),
                "spec": spec,
            }
        )

    def cohorts(self) -> list[str]:
        """The cohorts teams join: one flat cohort, or a tree of Cohort objects two deep."""
        if self.chance(0.5):
            self.drew("cohort-flat")
            return [self.rng.choice(_COHORTS)]
        self.drew("cohort-nested")
        root, *leaves = self.rng.sample(_COHORTS, 3)
        self.objects.append(
            {"apiVersion": KUEUE, "kind": "Cohort", "metadata": _meta(root), "spec": {}}
        )
        for leaf in leaves:
            self.objects.append(
                {
                    "apiVersion": KUEUE,
                    "kind": "Cohort",
                    "metadata": _meta(leaf),
                    "spec": {"parentName": root},
                }
            )
        return leaves

    def teams(self, pools: list[Pool]) -> list[tuple[str, dict[str, int]]]:
        """ClusterQueues, their LocalQueues, Namespaces and ResourceQuotas; returns each team
        with the cards it holds per pool."""
        cohorts = self.cohorts()
        resources = sorted({r for p in pools for r in p.resources()})
        names = self.rng.sample(_TEAMS, self.rng.randint(1, min(5, len(_TEAMS))))
        cpu_per_card = self.rng.choice((8, 12, 16))
        per_pool = self.chance(0.25)
        limits = self.rng.choice(("none", "none", "gpu-only", "all"))
        teams = []
        free = {p.name: len(p.nodes) for p in pools}  # nominal quotas fit the nodes, in nodes
        for name in names:
            held = {}
            for pool in pools:
                take = self.rng.randint(0, free[pool.name])
                free[pool.name] -= take
                held[pool.name] = take * pool.per_node
            flavors = []
            for pool in pools:
                per = pool.resources()
                cards = held[pool.name] // pool.per_node
                cpu = cpu_per_card * held[pool.name] * (2 if per_pool and pool is pools[-1] else 1)
                entries = [
                    {"name": "cpu", "nominalQuota": str(cpu)},
                    {"name": "memory", "nominalQuota": f"{cpu * 8}Gi"},
                ]
                entries += [
                    {"name": r, "nominalQuota": str(per.get(r, 0) * cards)} for r in resources
                ]
                if limits != "none" and held[pool.name]:
                    for entry in entries:
                        if entry["name"] in pool.resources() or limits == "all":
                            entry["borrowingLimit"] = entry["nominalQuota"]
                flavors.append({"name": pool.name, "resources": entries})
            if (
                per_pool
                and held[pools[-1].name]
                and len(pools) > 1
                and any(held[p.name] for p in pools[:-1])
            ):
                self.drew("per-pool-cpu", unsayable=f"ClusterQueue {name}")
            whole = any(held[p.name] for p in pools if p.mode != "mig")
            if limits == "gpu-only" and whole:  # a MIG-only queue's cpu limits follow its slices
                self.drew("gpu-only-borrowing-limit", unsayable=f"ClusterQueue {name}")
            elif limits == "gpu-only" and any(held.values()):
                self.drew("gpu-only-borrowing-limit-mig")
            elif limits == "all" and any(held.values()):
                self.drew("borrowing-limit-all-resources")
            spec: Obj = {
                "cohortName": self.rng.choice(cohorts),
                "resourceGroups": [
                    {"coveredResources": ["cpu", "memory", *resources], "flavors": flavors}
                ],
            }
            spec["namespaceSelector"] = self.namespaces(name, spec)
            if self.chance(0.5):
                spec["preemption"] = {
                    "reclaimWithinCohort": "Any",
                    "withinClusterQueue": "LowerPriority",
                }
                self.drew("preemption")
            self.objects.append(
                {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": _meta(name), "spec": spec}
            )
            teams.append((name, held))
        return teams

    def namespaces(self, team: str, spec: Obj) -> Obj:
        namespace = self.rng.choice((team, f"team-{team}", f"{team}-jobs"))
        labelled = self.chance(0.5)
        labels = {"team": team} if labelled else {}
        self.objects.append(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace, **labels)}
        )
        queue = self.rng.choice(("default", "main", team))
        self.objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": _meta(queue, namespace),
                "spec": {"clusterQueue": team},
            }
        )
        if self.chance(0.3):
            gpus = sum(
                int(e["nominalQuota"])
                for f in spec["resourceGroups"][0]["flavors"]
                for e in f["resources"]
                if e["name"] == "nvidia.com/gpu"
            )
            hard = {"requests.nvidia.com/gpu": str(gpus), "pods": "200"}
            self.objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "ResourceQuota",
                    "metadata": _meta(f"{team}-gpus", namespace),
                    "spec": {"hard": hard},
                }
            )
            self.drew("resource-quota")
        if labelled:
            self.drew("namespace-selector-labels")
            return {"matchLabels": dict(labels)}
        return {}

    def priorities(self) -> None:
        for name, value in self.rng.sample(
            (("low", 100), ("normal", 1000), ("high", 10000), ("critical", 100000)), 2
        ):
            text = f"{name} priority work"
            self.objects.append(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": _meta(name),
                    "value": value,
                    "description": text,
                }
            )
            other = text
            if self.chance(0.3):
                other = f"Kueue: {text}, admitted in order"
                self.drew("priority-descriptions-differ", unsayable=f"WorkloadPriorityClass {name}")
            self.objects.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "WorkloadPriorityClass",
                    "metadata": _meta(name),
                    "value": value,
                    "description": other,
                }
            )
        self.drew("priority-classes")

    # -- Volcano -------------------------------------------------------------------------
    def volcano(self, pools: list[Pool], teams: list[tuple[str, dict[str, int]]]) -> None:
        shape = self.rng.choice(("none", "none", "per-pool", "spanning", "hierarchical"))
        if shape == "none":
            return
        for queue in (("root", False), ("default", True)):
            self.objects.append(
                {
                    "apiVersion": VOLCANO,
                    "kind": "Queue",
                    "metadata": _meta(queue[0]),
                    "spec": {"weight": 1, "reclaimable": queue[1]},
                }
            )
        parent = ""
        if shape == "hierarchical":
            parent = "gpu-teams"
            self.objects.append(
                {
                    "apiVersion": VOLCANO,
                    "kind": "Queue",
                    "metadata": _meta(parent),
                    "spec": {"weight": 1},
                }
            )
        self.drew(f"volcano-{shape}")
        for team, held in teams:
            if shape == "spanning":
                gpus = sum(held[p.name] for p in pools if p.mode == "whole")
                spec: Obj = {"weight": 1, "capability": {"nvidia.com/gpu": str(gpus * 2)}}
                self.queue(team, spec)
                self.drew("volcano-spanning", unsayable=f"Queue {team}")
                continue
            for pool in pools:
                if not held[pool.name] or pool.mode != "whole":
                    continue
                for n in self.objects:
                    if n["kind"] == "Node" and n["metadata"]["name"] in pool.nodes:
                        n["metadata"]["labels"]["volcano.sh/nodegroup-name"] = pool.name
                deserved = {"nvidia.com/gpu": str(held[pool.name])}
                spec = {
                    "weight": 1,
                    "deserved": deserved,
                    "affinity": {
                        "nodeGroupAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [pool.name]
                        }
                    },
                }
                if parent:
                    spec["parent"] = parent
                self.queue(f"{team}-{pool.name}", spec)

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

    def queue(self, name: str, spec: Obj) -> None:
        self.objects.append(
            {"apiVersion": VOLCANO, "kind": "Queue", "metadata": _meta(name), "spec": spec}
        )


def cluster(seed: int) -> Cluster:
    """The cluster of `seed`: the same objects, in the same order, every time."""
    gen = _Gen(seed)
    pools = gen.pools()
    for pool in pools:
        gen.objects.extend(gen.node(pool, name) for name in pool.nodes)
    gen.operator(pools)
    for pool in pools:
        gen.flavor(pool)
    teams = gen.teams(pools)
    gen.priorities()
    gen.volcano(pools, teams)
    if gen.chance(0.15):  # docs/adopt.md's first dump command took no ConfigMaps
        gen.without_gpu_configs()
    return Cluster(seed, gen.objects, gen.constructs, gen.unsayable)


if __name__ == "__main__":
    sys.stdout.write(cluster(int(sys.argv[1])).text())
