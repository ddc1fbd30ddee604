"""Synthetic fleets for benchmarks and scale tests: valid by construction, many teams, any size.

As a module (the diff and drift tests use it too):

    from bench.fleetgen import FleetSpec, LARGE, write_policy
    write_policy(LARGE, tmp_path / "policy")          # a policy folder, ~40+ files
    docs = generate(FleetSpec(nodes=200, teams=12))   # {relative file name: [documents]}

As a script, writing a policy folder:

    python bench/fleetgen.py /tmp/large                          # the large fleet
    python bench/fleetgen.py /tmp/f --nodes 20000 --teams 1000 --pools 160 --cards 20
    python bench/fleetgen.py /tmp/f --scale 4                    # 4x large (all dimensions)
    python bench/fleetgen.py /tmp/f --ray --koordinator          # + Ray profiles, koordinator

The shape follows the bundled fleet: card types cycle through a few families (MIG-capable
80 GB NVLink cards, PCIe inference cards, dev cards); pools cycle through training, inference
(MIG-partitioned), dev (time-sliced) and isolated pools; teams hang from the leaves of a cohort
tree `cohort_depth` levels deep and hold quotas in `quotas_per_team` pools each, sized so that
no pool is over-committed. Nothing is random: the same spec always gives the same bytes.

`hetgitops validate` on any generated fleet reports no errors and no warnings (a test in
tests/test_bench.py holds the generator to that at several shapes).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HEADER = {"apiVersion": "hetgitops.io/v1alpha1"}
NODES_PER_RACK = 16
CARDS_PER_NODE = 8


@dataclass(frozen=True)
class FleetSpec:
    """What to generate. Counts are totals across the fleet."""

    nodes: int = 5000
    pools: int = 40
    teams: int = 300
    cards: int = 20  # card types
    quotas_per_team: int = 2
    mig_every: int = 4  # every n-th pool is MIG-partitioned (0: none)
    timeslice_every: int = 5  # every n-th pool is a time-sliced dev pool (0: none)
    isolated_every: int = 10  # every n-th pool is isolated (0: none)
    cohort_depth: int = 2  # levels of cohorts below the root (0: teams join the root)
    cohort_fanout: int = 4  # children per cohort
    teams_per_file: int = 10
    pools_per_file: int = 5
    cluster: str = "synthetic"
    # Off in LARGE, so the existing bench cases read the same bytes; on in the fleet of the
    # newer commands' cases (bench/newcases.py `newer`: jobs-ray, explain-koordinator, ...).
    ray: bool = False  # Ray profiles (RayJob, RayCluster, RayService) and a `ray` image per card
    koordinator: bool = False  # the `koordinator` target beside Kueue and Volcano

    def scaled(
        self, factor: float, *, nodes: bool = True, teams: bool = True, pools: bool = True
    ) -> FleetSpec:
        """This spec with nodes, teams and pools (each optionally) multiplied by `factor`."""
        return dataclasses.replace(
            self,
            nodes=round(self.nodes * factor) if nodes else self.nodes,
            teams=round(self.teams * factor) if teams else self.teams,
            pools=round(self.pools * factor) if pools else self.pools,
        )


LARGE = FleetSpec()
SMALL = FleetSpec(nodes=200, pools=10, teams=24, cards=6)


def _doc(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {**HEADER, "kind": kind, "metadata": {"name": name}, "spec": spec}


# -- card types ----------------------------------------------------------------------------------

# (model, memory GiB, interconnect, MIG profile table or None, coefficient)
_FAMILIES = (
    ("H100-SXM5-80GB", 80, "nvlink", "H100-80GB", 2.9),
    ("L40S", 48, "pcie", None, 0.75),
    ("A100-SXM4-80GB", 80, "nvlink", "A100-80GB", 1.0),
    ("GeForce-RTX-4090", 24, "pcie", None, 0.45),
)
MIG_FAMILIES = tuple(i for i, family in enumerate(_FAMILIES) if family[3])


def _card_name(i: int) -> str:
    return f"card-{i:03d}"


def _card(i: int, ray: bool = False) -> dict[str, Any]:
    model, memory, interconnect, mig, coefficient = _FAMILIES[i % len(_FAMILIES)]
    spec: dict[str, Any] = {
        "vendor": "nvidia",
        "model": f"{model}-v{i:03d}",
        "resourceName": "nvidia.com/gpu",
        "productNames": [f"NVIDIA-{model}-v{i:03d}"],
        "memoryGiB": memory,
        "interconnect": interconnect,
        "precisions": ["fp32", "fp16", "bf16", "int8"],
        "performance": {
            "coefficient": round(coefficient + i / 1000, 3),
            "reference": "A100-SXM4-80GB",
            "coefficientSet": "2026.2",
        },
        "cost": {"perCardHour": 1.5},
        "lifecycle": "production",
        "images": {
            "pytorch": "nvcr.io/nvidia/pytorch:25.08-py3",
            "vllm": "vllm/vllm-openai:v0.11.0",
        },
    }
    if ray:
        spec["images"]["ray"] = "rayproject/ray:2.49.0-py312-gpu"
    if mig:
        spec["mig"] = {"profileTable": mig}
    return _doc("CardType", _card_name(i), spec)


# -- pools ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PoolShape:
    index: int
    kind: str  # training | inference-mig | dev-timesliced | isolated
    card: int
    nodes: int


def _pool_shapes(spec: FleetSpec) -> list[_PoolShape]:
    shapes = []
    base, extra = divmod(spec.nodes, spec.pools)
    mig_cards = [c for c in range(spec.cards) if c % len(_FAMILIES) in MIG_FAMILIES]
    for i in range(spec.pools):
        kind = "training"
        if spec.isolated_every and i % spec.isolated_every == spec.isolated_every - 1:
            kind = "isolated"
        elif spec.timeslice_every and i % spec.timeslice_every == spec.timeslice_every - 1:
            kind = "dev-timesliced"
        elif spec.mig_every and mig_cards and i % spec.mig_every == spec.mig_every - 1:
            kind = "inference-mig"
        card = mig_cards[i % len(mig_cards)] if kind == "inference-mig" else i % spec.cards
        shapes.append(_PoolShape(i, kind, card, max(1, base + (1 if i < extra else 0))))
    return shapes


def _pool_name(i: int) -> str:
    return f"pool-{i:04d}"


def _node_entries(shape: _PoolShape) -> list[dict[str, Any]]:
    entries = []
    for start in range(0, shape.nodes, NODES_PER_RACK):
        end = min(start + NODES_PER_RACK, shape.nodes)
        rack = start // NODES_PER_RACK
        entries.append(
            {
                "names": f"p{shape.index:04d}-n[{start + 1:04d}:{end:04d}]",
                "zone": f"zone-{(shape.index + rack) % 4}",
                "rack": f"rack-{shape.index:04d}-{rack:03d}",
            }
        )
    return entries


def _pool(shape: _PoolShape) -> dict[str, Any]:
    name = _pool_name(shape.index)
    purpose = {"training": "training", "isolated": "training", "inference-mig": "inference"}
    spec: dict[str, Any] = {
        "cardType": _card_name(shape.card),
        "purpose": purpose.get(shape.kind, "dev"),
        "cardsPerNode": CARDS_PER_NODE,
        "nodes": _node_entries(shape),
    }
    if shape.kind == "isolated":
        spec["isolated"] = True
        spec["taints"] = [{"key": "hetgitops.io/pool", "value": name, "effect": "NoSchedule"}]
    else:
        spec["lending"] = {"maxPercent": 50}
    if shape.kind == "inference-mig":
        spec["mig"] = {
            "devices": [
                {"gpus": [0, 1], "profiles": {"1g.10gb": 7}},
                {"gpus": [2, 3], "profiles": {"3g.40gb": 2}},
            ]
        }
    if shape.kind == "dev-timesliced":
        spec["timeSlicing"] = {"replicas": 4}
    return _doc("Pool", name, spec)


def pool_capacity(shape: _PoolShape) -> int:
    """Whole cards (time-sliced: replicas) a pool offers to cards quotas."""
    cards = shape.nodes * CARDS_PER_NODE
    if shape.kind == "inference-mig":
        cards = shape.nodes * (CARDS_PER_NODE - 4)  # GPUs 0-3 are MIG-partitioned
    if shape.kind == "dev-timesliced":
        cards *= 4
    return cards


# -- cohorts and teams ---------------------------------------------------------------------------


def _cohorts(spec: FleetSpec) -> tuple[list[dict[str, Any]], list[str]]:
    """The cohort tree (Fleet.spec.cohorts) and its leaves, in order."""
    cohorts: list[dict[str, Any]] = [{"name": "root"}]
    level = ["root"]
    for depth in range(spec.cohort_depth):
        children = []
        for parent in level:
            for k in range(spec.cohort_fanout):
                child = f"c{depth}-{len(children):03d}" if parent == "root" else f"{parent}-{k}"
                children.append(child)
                cohorts.append({"name": child, "parent": parent})
        level = children
    return cohorts, level


def _team_pools(spec: FleetSpec, shapes: list[_PoolShape], team: int) -> list[_PoolShape]:
    """The pools a team holds quota in: consecutive shareable pools, plus an isolated one for
    every tenth team (isolated pools take no borrowing, so those quotas stay plain)."""
    shareable = [s for s in shapes if s.kind != "isolated"]
    isolated = [s for s in shapes if s.kind == "isolated"]
    count = min(spec.quotas_per_team, len(shareable))
    chosen = [shareable[(team * count + k) % len(shareable)] for k in range(count)]
    if isolated and team % 10 == 0:
        chosen.append(isolated[(team // 10) % len(isolated)])
    return chosen


def _holders(spec: FleetSpec, shapes: list[_PoolShape]) -> dict[int, int]:
    holders: dict[int, int] = {}
    for team in range(spec.teams):
        for shape in _team_pools(spec, shapes, team):
            holders[shape.index] = holders.get(shape.index, 0) + 1
    return holders


def _quota(shape: _PoolShape, holders: int) -> dict[str, Any]:
    share = max(1, pool_capacity(shape) // max(1, holders) // 2)  # half: room to lend and borrow
    quota: dict[str, Any] = {"pool": _pool_name(shape.index)}
    if shape.kind == "inference-mig":
        slices = max(1, shape.nodes * 2 * 7 // max(1, holders) // 2)
        quota["cards"] = share
        quota["mig"] = {"1g.10gb": slices}
        return quota
    quota["cards"] = share
    if shape.kind != "isolated":
        # Enough to admit the 2 x 8-card gang however thinly the pool is shared.
        quota["borrowingLimit"] = max(2 * CARDS_PER_NODE, share // 2)
    return quota


def _team(
    spec: FleetSpec, i: int, shapes: list[_PoolShape], holders: dict[int, int], leaves: list[str]
) -> dict[str, Any]:
    name = f"team-{i:04d}"
    mine = _team_pools(spec, shapes, i)
    return _doc(
        "Team",
        name,
        {
            "namespaces": [name],
            "cohort": leaves[i % len(leaves)],
            "quotas": [_quota(s, holders[s.index]) for s in mine],
            "tiers": ["training", "dev", "online-inference"],
            "budget": {"monthly": 100_000_000, "currency": "USD"},
            "preemption": {
                "withinClusterQueue": "LowerPriority",
                "reclaimWithinCohort": "LowerPriority",
            },
        },
    )


# -- fleet, tiers, profiles ----------------------------------------------------------------------


def _fleet(spec: FleetSpec, cohorts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    fleet = _doc(
        "Fleet",
        spec.cluster,
        {
            "cluster": f"{spec.cluster}-prod",
            "versions": {
                "kubernetes": "1.33",
                "kueue": "0.19.2",
                "volcano": "1.15.1",
                "gpuOperator": "26.7.0",
            },
            "targets": ["core", "kueue", "volcano", "nodes", "gpu-operator"]
            + (["koordinator"] if spec.koordinator else []),
            "gpuOperator": {"namespace": "gpu-operator", "migStrategy": "mixed"},
            "cohorts": cohorts,
            "topology": {"name": "fleet-topology", "levels": ["zone", "rack", "hostname"]},
            "defaults": {"cpuPerCard": 12, "memoryPerCard": "96Gi"},
            "currency": "USD",
        },
    )
    labels = [
        {"key": f"hetgitops.io/{name}", "from": name}
        for name in ("card-type", "vendor", "pool", "purpose", "rack")
    ]
    labels.append({"key": "topology.kubernetes.io/zone", "from": "zone"})
    return [fleet, _doc("LabelTaxonomy", "node-labels", {"labels": labels})]


def _tiers() -> list[dict[str, Any]]:
    return [
        _doc("PriorityTier", name, {"value": value, "preemptionPolicy": policy})
        for name, value, policy in (
            ("online-inference", 100000, "PreemptLowerPriority"),
            ("training", 10000, "PreemptLowerPriority"),
            ("dev", 100, "Never"),
        )
    ]


def _profiles(shapes: list[_PoolShape]) -> list[dict[str, Any]]:
    """Training profiles always; the MIG-slice and notebook profiles when such pools exist."""
    kinds = {shape.kind for shape in shapes}

    def profile(name: str, **spec: Any) -> dict[str, Any]:
        return _doc("WorkloadProfile", name, {"image": "pytorch", **spec})

    profiles = [
        profile(
            "train-gang",
            framework="jobset",
            tier="training",
            requirements={
                "cardsPerNode": 8,
                "gang": 2,
                "minMemoryGiB": 80,
                "interconnect": ["nvlink"],
                "purposes": ["training"],
            },
            command=[
                "torchrun",
                "--nnodes=2",
                "--nproc-per-node=8",
                "--rdzv-backend=c10d",
                "--rdzv-endpoint=$(MASTER_ADDR):$(MASTER_PORT)",
                "train.py",
            ],
            env={"NCCL_SOCKET_IFNAME": "eth0"},
            topology={"preferred": "rack"},
        ),
        profile(
            "train-single",
            framework="job",
            tier="training",
            requirements={"cardsPerNode": 1, "purposes": ["training"]},
            command=["python", "train.py"],
            cpuPerCard=8,
            memoryPerCard="64Gi",
        ),
    ]
    if "inference-mig" in kinds:
        profiles.append(
            profile(
                "serve-slice",
                framework="deployment",
                tier="online-inference",
                image="vllm",
                requirements={"cardsPerNode": 1, "migProfile": "1g.10gb"},
                port=8000,
                cpuPerCard="1500m",
                memoryPerCard="12Gi",
            )
        )
    if "dev-timesliced" in kinds:
        profiles.append(
            profile(
                "notebook",
                framework="job",
                tier="dev",
                requirements={"cardsPerNode": 1, "purposes": ["dev"]},
                command=["sleep", "infinity"],
                cpuPerCard=2,
                memoryPerCard="16Gi",
            )
        )
    return profiles


def _ray_profiles(shapes: list[_PoolShape]) -> list[dict[str, Any]]:
    """One profile of each KubeRay kind, shaped like the bundled policies/profiles/ray.yaml: a
    RayJob whose two worker groups sit on two training card types (one template per team that
    holds both), a RayService per inference card type, a RayCluster per dev card type."""
    kinds = {shape.kind for shape in shapes}
    training = [s.card for s in shapes if s.kind == "training"]
    pair = [training[0], next((c for c in training if c != training[0]), training[0])]
    profiles = [
        _doc(
            "WorkloadProfile",
            "ray-rlhf",
            {
                "framework": "rayjob",
                "tier": "training",
                "requirements": {"cardsPerNode": 8},
                "ray": {
                    "workerGroups": [
                        {"name": "policy", "cardType": _card_name(pair[0]), "replicas": 2},
                        {"name": "rollout", "cardType": _card_name(pair[1]), "replicas": 1},
                    ],
                    "head": {"cpu": 8, "memory": "64Gi"},
                },
                "image": "ray",
                "command": ["python", "rlhf.py"],
                "env": {"NCCL_SOCKET_IFNAME": "eth0"},
            },
        ),
        _doc(
            "WorkloadProfile",
            "ray-train",
            {
                "framework": "rayjob",
                "tier": "training",
                "requirements": {"cardsPerNode": 8, "gang": 2, "purposes": ["training"]},
                "image": "ray",
                "command": ["python", "train.py"],
            },
        ),
    ]
    if "inference-mig" in kinds:
        profiles.append(
            _doc(
                "WorkloadProfile",
                "ray-serve",
                {
                    "framework": "rayservice",
                    "tier": "online-inference",
                    "requirements": {"cardsPerNode": 1, "gang": 2, "purposes": ["inference"]},
                    "image": "ray",
                    "port": 8000,
                    "cpuPerCard": 8,
                    "memoryPerCard": "64Gi",
                },
            )
        )
    if "dev-timesliced" in kinds:
        profiles.append(
            _doc(
                "WorkloadProfile",
                "ray-dev",
                {
                    "framework": "raycluster",
                    "tier": "dev",
                    "requirements": {"cardsPerNode": 1, "gang": 2, "purposes": ["dev"]},
                    "image": "ray",
                    "cpuPerCard": 2,
                    "memoryPerCard": "16Gi",
                },
            )
        )
    return profiles


# -- assembly ------------------------------------------------------------------------------------


def generate(spec: FleetSpec) -> dict[str, list[dict[str, Any]]]:
    """The fleet as {relative file name: documents}, in a stable order."""
    shapes = _pool_shapes(spec)
    holders = _holders(spec, shapes)
    cohorts, leaves = _cohorts(spec)
    files: dict[str, list[dict[str, Any]]] = {
        "fleet.yaml": _fleet(spec, cohorts),
        "tiers.yaml": _tiers(),
        "profiles.yaml": _profiles(shapes) + (_ray_profiles(shapes) if spec.ray else []),
        "cards.yaml": [_card(i, spec.ray) for i in range(spec.cards)],
    }
    for start in range(0, spec.pools, spec.pools_per_file):
        chunk = shapes[start : start + spec.pools_per_file]
        files[f"pools/pools-{start:04d}.yaml"] = [_pool(s) for s in chunk]
    for start in range(0, spec.teams, spec.teams_per_file):
        end = min(start + spec.teams_per_file, spec.teams)
        files[f"teams/teams-{start:04d}.yaml"] = [
            _team(spec, i, shapes, holders, leaves) for i in range(start, end)
        ]
    return files


def write_policy(spec: FleetSpec, folder: Path) -> Path:
    """Write the fleet as a policy folder (created if needed); returns `folder`."""
    for name, docs in generate(spec).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False, width=100)
        path.write_text(text, encoding="utf-8")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a synthetic hetgitops policy folder.")
    parser.add_argument("folder", type=Path)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply the large fleet's nodes, teams and pools"
    )
    for field in dataclasses.fields(FleetSpec):
        if field.type in ("int", int):
            flag = "--" + field.name.replace("_", "-")
            parser.add_argument(flag, type=int, dest=field.name, help=f"default {field.default}")
        elif field.type in ("bool", bool):
            flag = "--" + field.name.replace("_", "-")
            parser.add_argument(flag, action="store_true", default=None, dest=field.name)
    args = parser.parse_args(argv)
    overrides = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(FleetSpec)
        if getattr(args, f.name, None) is not None
    }
    spec = dataclasses.replace(LARGE.scaled(args.scale), **overrides)
    write_policy(spec, args.folder)
    print(f"{args.folder}: {spec}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
