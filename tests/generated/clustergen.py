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
cannot say yet (issue 32 item 5), each with the objects import must name in a finding;
`Cluster.sayable` those it now says (a flavor's `nodeTaints`, a queue's coveredResources and
limits on every resource), each with the objects the
written policy must render as the cluster has them.

Reproduce a seed: `python -m tests.generated.clustergen 17 > dump.yaml`, then
`hetgitops import -f dump.yaml -o out/`.
"""

from __future__ import annotations

import sys

from tests.generated.clusterbase import (
    KUEUE,
    VOLCANO,
    Cluster,
    Gen,
    Obj,
    Pool,
    meta,
)

_TEAMS = ("vision", "nlp", "speech", "recsys", "search", "ads", "robotics", "genai", "ml-platform")
_COHORTS = ("research", "product", "org", "engineering")
# The ClusterQueue constructs the language says since issue 32 item 5 (quota entries'
# hostLimits, cpuPerCard / memoryPerCard, migBorrowingLimits, limitsCoverAll; a team's
# kueue.coveredResources).
QUEUE_CONSTRUCTS = (
    "gpu-only-borrowing-limit",
    "gpu-only-borrowing-limit-mig",
    "per-pool-cpu",
    "borrowing-limit-all-resources",
    "covered-resources-fleet",
)


def _covers_more(pools: list[Pool], held: dict[str, int]) -> bool:
    """Whether the queue's coveredResources differ from what the render lists by itself:
    a MIG pool without quota (its slices listed at 0, its card resource not) or a cluster of
    MIG pools only (no `nvidia.com/gpu`)."""
    mig = [p for p in pools if p.mode == "mig"]
    return bool(mig) and (len(mig) == len(pools) or any(not held[p.name] for p in mig))


class _Gen(Gen):
    """The Kueue, priority and Volcano objects of a seed, over its pools (clusterbase.Gen)."""

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
                self.drew("flavor-node-taints", kept=f"ResourceFlavor {pool.name}")
        self.objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "ResourceFlavor",
                "metadata": meta(pool.name),
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
            {"apiVersion": KUEUE, "kind": "Cohort", "metadata": meta(root), "spec": {}}
        )
        for leaf in leaves:
            self.objects.append(
                {
                    "apiVersion": KUEUE,
                    "kind": "Cohort",
                    "metadata": meta(leaf),
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
            # Said since issue 32 item 5 (a quota entry's cpuPerCard, hostLimits and
            # limitsCoverAll, the team's kueue.coveredResources): the queue comes back as it is.
            kept = f"ClusterQueue {name}"
            if (
                per_pool
                and held[pools[-1].name]
                and len(pools) > 1
                and any(held[p.name] for p in pools[:-1])
            ):
                self.drew("per-pool-cpu", kept=kept)
            whole = any(held[p.name] for p in pools if p.mode != "mig")
            if limits == "gpu-only" and whole:  # a MIG-only queue's cpu limits follow its slices
                self.drew("gpu-only-borrowing-limit", kept=kept)
            elif limits == "gpu-only" and any(held.values()):
                self.drew("gpu-only-borrowing-limit-mig", kept=kept)
            elif limits == "all" and any(held.values()):
                self.drew("borrowing-limit-all-resources", kept=kept)
            if _covers_more(pools, held):
                self.drew("covered-resources-fleet", kept=kept)
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
                {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": meta(name), "spec": spec}
            )
            teams.append((name, held))
        return teams

    def namespaces(self, team: str, spec: Obj) -> Obj:
        namespace = self.rng.choice((team, f"team-{team}", f"{team}-jobs"))
        held = any(  # only a queue holding accelerators must come back with its namespace
            int(e["nominalQuota"])
            for f in spec["resourceGroups"][0]["flavors"]
            for e in f["resources"]
            if e["name"] not in ("cpu", "memory")
        )
        labelled = self.chance(0.5)
        labels = {"team": team} if labelled else {}
        self.objects.append(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(namespace, **labels)}
        )
        queue = self.rng.choice(("default", "main", team))
        self.objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": meta(queue, namespace),
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
                    "metadata": meta(f"{team}-gpus", namespace),
                    "spec": {"hard": hard},
                }
            )
            self.drew("resource-quota", kept=f"ResourceQuota {namespace}/{team}-gpus" * held)
        if labelled:
            self.drew("namespace-selector-labels", kept=f"Namespace {namespace}" * held)
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
                    "metadata": meta(name),
                    "value": value,
                    "description": text,
                }
            )
            other = text
            if self.chance(0.3):
                other = f"Kueue: {text}, admitted in order"
                self.drew("priority-descriptions-differ", kept=f"WorkloadPriorityClass {name}")
            self.objects.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "WorkloadPriorityClass",
                    "metadata": meta(name),
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
                    "metadata": meta(queue[0]),
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
                    "metadata": meta(parent),
                    "spec": {"weight": 1},
                }
            )
        self.drew(f"volcano-{shape}")
        for index, (team, held) in enumerate(teams):
            if shape == "spanning":
                gpus = sum(held[p.name] for p in pools if p.mode == "whole")
                spec: Obj = {"weight": 1, "capability": {"nvidia.com/gpu": str(gpus * 2)}}
                if index % 2:  # every other team also says what it deserves (no draw: the
                    spec["deserved"] = {"nvidia.com/gpu": str(gpus)}  # seeds stay as they were)
                self.queue(team, spec)
                self.drew("volcano-spanning", kept=f"Queue {team}")
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
                self.drew("volcano-deserved-gpu-only", kept=f"Queue {team}-{pool.name}")

    def queue(self, name: str, spec: Obj) -> None:
        self.objects.append(
            {"apiVersion": VOLCANO, "kind": "Queue", "metadata": meta(name), "spec": spec}
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
    if "dump-without-gpu-configs" in gen.constructs:
        # The pools' layouts are unknown: the queues' quotas cannot come back as they are.
        for construct in QUEUE_CONSTRUCTS:
            gen.sayable.pop(construct, None)
    return Cluster(seed, gen.objects, gen.constructs, gen.unsayable, gen.sayable)


if __name__ == "__main__":
    sys.stdout.write(cluster(int(sys.argv[1])).text())
