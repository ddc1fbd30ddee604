"""Seeded generator of valid policies across the policy language (issue 32, item 1).

    from generated.policygen import generate, write_policy
    docs = generate(7)                      # {relative file name: [documents]}
    folder = write_policy(7, tmp_path / "p")   # the same, written as YAML files

As a script (from the repository root):

    python tests/generated/policygen.py 7 /tmp/p && hetgitops validate /tmp/p

The fixed vocabulary it draws from (card types, MIG layouts, job kinds) is in policy_parts.py.

Unlike bench/fleetgen.py (one regular shape, scaled), every seed draws a different fleet:
card types of several vendors (NVIDIA whole, MIG single or mixed with mixed layouts,
time-slicing, MPS; AMD, Ascend, Cambricon), whole and partitioned GPUs in one pool, a
Topology or none, cohort trees 1-3 deep, borrowing and lending limits, isolated and tainted
pools (half of them with flavorNodeTaints), tiers, fair sharing and preemption settings, a
profile of every job kind, and the volcano and koordinator targets. Quotas are sized against
what each pool offers, so the policy validates with no errors (warnings may remain). Only
`random.Random(seed)` decides (and, for flavorNodeTaints, a `random.Random` seeded with the
seed and the pool's name): the same seed gives the same bytes on any machine.
"""

from __future__ import annotations

import random
import sys
from decimal import Decimal
from pathlib import Path

if __package__ in (None, ""):  # run as a script: tests/ on the path, as pytest puts it
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fastyaml

from generated.policy_parts import (
    CARDS,
    FRAMEWORKS,
    HEADER,
    IMAGES,
    INTEGRATIONS,
    LAYOUTS,
    MEM,
    Doc,
)


def _doc(kind: str, name: str, spec: Doc) -> Doc:
    return {**HEADER, "kind": kind, "metadata": {"name": name}, "spec": spec}


class _Gen:
    """One seed's draw; each method adds one kind of document."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        # The language's later fields draw from their own stream, so a seed's other draws (and
        # the explain differential's tables over them) stay what they were.
        self.said = random.Random(f"said-{seed}")
        # The quota entries' host fields draw from a stream of their own, so adding them kept
        # every other draw of a seed (and what earlier sweeps found on it) as it was.
        self.host_r = random.Random(seed * 7919 + 1)
        # kueue.coveredResources and limitsCoverAll (issue 32 item 5): a stream of their own.
        self.covered_r = random.Random(f"covered-{seed}")
        self.seed = seed
        self.targets = ["core", "kueue", "nodes", "gpu-operator"]
        self.mig_strategy = "mixed"
        self.topology: list[str] = []
        self.cohorts: list[str] = []
        self.cards: list[str] = []
        self.pools: dict[str, Doc] = {}
        self.free: dict[str, dict[str, int]] = {}  # pool -> resource -> what is left to quota
        self.tiers: list[str] = []
        self.team_tiers: dict[str, list[str]] = {}
        self.mig_teams: dict[str, list[str]] = {}  # MIG profile -> teams holding instances
        self.whole: dict[str, int] = {}  # card type -> the fewest whole cards a node of it has
        self.held: dict[str, dict[str, int]] = {}  # card type -> team -> whole cards quota
        self.fair = False

    # -- fleet -----------------------------------------------------------------------------

    def fleet(self) -> Doc:
        r = self.r
        if r.random() < 0.75:
            self.targets.append("volcano")
        if r.random() < 0.4:
            self.targets.append("koordinator")
        if r.random() < 0.2:
            self.targets.append(r.choice(["monitoring", "drift-rbac"]))
        self.mig_strategy = r.choice(["mixed", "mixed", "single"])
        self.fair = r.random() < 0.4
        spec: Doc = {
            "cluster": f"gen-{self.seed}",
            "versions": {"kubernetes": "1.33", "kueue": "0.19.2", "gpuOperator": "26.7.0"},
            "targets": self.targets,
            "gpuOperator": {"namespace": "gpu-operator", "migStrategy": self.mig_strategy},
            "kueue": {
                "queueingStrategy": r.choice(["StrictFIFO", "BestEffortFIFO"]),
                "configuration": {"integrations": list(INTEGRATIONS), "fairSharing": self.fair},
            },
            "defaults": {"cpuPerCard": r.choice([8, 12, 16]),
                         "memoryPerCard": r.choice(["64Gi", "96Gi", "128Gi"])},
        }  # fmt: skip
        if r.random() < 0.5:
            spec["kueue"]["flavorFungibility"] = {
                "whenCanBorrow": r.choice(["MayStopSearch", "TryNextFlavor"]),
                "whenCanPreempt": r.choice(["MayStopSearch", "TryNextFlavor"]),
            }
        if "volcano" in self.targets:
            spec["versions"]["volcano"] = "1.15.1"
            spec["volcano"] = {
                "actions": ["enqueue", "allocate", "preempt", "reclaim", "backfill"],
                "queuePlugin": "capacity",
                "hierarchy": r.random() < 0.5,
            }
        spec["cohorts"] = self._cohort_tree()
        if r.random() < 0.6:
            self.topology = r.choice([["zone", "rack", "hostname"], ["rack", "hostname"],
                                      ["zone", "hostname"]])  # fmt: skip
            spec["topology"] = {"name": "gen-topology", "levels": self.topology}
        return _doc("Fleet", f"gen-{self.seed}", spec)

    def _cohort_tree(self) -> list[Doc]:
        r = self.r
        depth = r.randint(1, 3)
        entries: list[Doc] = [{"name": "root"}]
        level = ["root"]
        for d in range(1, depth):
            below = []
            for parent in level:
                for i in range(r.randint(1, 2)):
                    name = f"c{d}-{parent}-{i}".replace("root", "r")
                    entries.append({"name": name, "parent": parent})
                    below.append(name)
            level = below
        if self.fair:
            for entry in entries:
                if r.random() < 0.5:
                    entry["fairSharingWeight"] = r.choice([1, 2, "500m"])
        self.cohorts = [e["name"] for e in entries]
        return entries

    # -- cards and pools -------------------------------------------------------------------

    def card_types(self) -> list[Doc]:
        r = self.r
        mig = [c for c, v in CARDS.items() if v[6]]
        other = [c for c, v in CARDS.items() if not v[6]]
        self.cards = sorted({r.choice(mig), *r.sample(other, r.randint(1, 3))})
        if r.random() < 0.4:
            self.cards = sorted({*self.cards, r.choice(mig)})
        docs = []
        for name in self.cards:
            vendor, model, resource, product, memory, link, table, coeff = CARDS[name]
            spec: Doc = {
                "vendor": vendor, "model": model, "resourceName": resource,
                "productNames": [product], "memoryGiB": memory, "interconnect": link,
                "precisions": ["fp32", "fp16", "bf16", "int8"],
                "performance": {"coefficient": coeff, "reference": "A100-SXM4-80GB",
                                "coefficientSet": "2026.2"},
                "cost": {"perCardHour": round(0.5 + coeff, 2)},
                "lifecycle": "production",
                "images": dict(IMAGES),
            }  # fmt: skip
            if table:
                spec["mig"] = {"profileTable": table}
            docs.append(_doc("CardType", name, spec))
        return docs

    def pool_docs(self) -> list[Doc]:
        for i, card in enumerate(self.cards):
            for j in range(self.r.randint(1, 2)):
                self._pool(f"p{i}{j}-{card.split('-')[0]}", card)
        return list(self.pools.values())

    def _pool(self, name: str, card: str) -> None:
        r = self.r
        vendor, _, _, _, _, link, table, _ = CARDS[card]
        per_node = r.choice([4, 8])
        count = r.randint(1, 4)
        kinds = ["whole", "whole", "isolated", "tainted"]
        if table:
            kinds += ["mig", "mig", "mig"]
        if vendor == "nvidia":
            kinds.append("timeslicing")
        if vendor == "nvidia" and self.mig_strategy == "single":
            kinds.append("mps")  # the device plugin refuses MPS under migStrategy mixed
        kind = r.choice(kinds)
        spec: Doc = {
            "cardType": card,
            "purpose": r.choice(["training", "inference", "batch", "dev"]),
            "cardsPerNode": per_node,
            "nodes": self._nodes(name, count, link),
        }
        if r.random() < 0.3:
            spec["placement"] = r.choice(["binpack", "spread"])
        if kind in ("isolated", "tainted"):
            spec["taints"] = [{"key": "hetgitops.io/pool", "value": name, "effect": "NoSchedule"}]
            # The flavor lists the taint too, half the time; drawn apart from self.r so every
            # other draw of a seed stays as it was (seeds named in docs/testing.md).
            if random.Random(f"{self.seed}/{name}/flavorNodeTaints").random() < 0.5:
                spec["kueue"] = {"flavorNodeTaints": True}
        if kind == "isolated":
            spec["isolated"] = True
        elif r.random() < 0.7:
            spec["lending"] = {"maxPercent": r.choice([0, 25, 50, 100])}
            if r.random() < 0.3:
                spec["lending"]["reclaim"] = True
        cards = per_node * count
        free = {"cards": cards}
        whole = per_node
        if kind == "mig" and table:
            free = self._mig(spec, table, per_node, count)
            whole = free["cards"] // count
        elif kind in ("timeslicing", "mps"):
            replicas = r.choice([2, 4])
            spec["timeSlicing" if kind == "timeslicing" else "mps"] = {"replicas": replicas}
            if kind == "timeslicing" and r.random() < 0.3:
                spec["timeSlicing"]["renameByDefault"] = True
            free = {"cards": cards * replicas}
        self.whole[card] = min(self.whole.get(card, whole), whole)
        self.pools[name] = _doc("Pool", name, spec)
        self.free[name] = free

    def _nodes(self, pool: str, count: int, link: str) -> list[Doc]:
        entries = []
        for i in range(count):
            entry: Doc = {"names": f"{pool}-n{i + 1}", "zone": f"zone-{i % 2}",
                          "rack": f"rack-{pool}-{i // 2}"}  # fmt: skip
            if link == "nvlink" and self.r.random() < 0.5:
                entry["nvlinkDomain"] = f"nvl-{pool}-{i // 2}"
            entries.append(entry)
        return entries

    def _mig(self, spec: Doc, table: str, per_node: int, count: int) -> dict[str, int]:
        """A MIG layout: under single, every GPU one profile; under mixed, 1-2 layouts over
        some GPUs, the rest left whole."""
        r = self.r
        mem = MEM[table]
        if self.mig_strategy == "single":
            kind, n = r.choice([("1g", 7), ("2g", 3), ("3g", 2), ("7g", 1)])
            layouts = [(list(range(per_node)), {kind: n})]
        else:
            split = r.randint(1, per_node)
            gpus = list(range(split))
            cut = r.randint(1, len(gpus)) if len(gpus) > 1 and r.random() < 0.5 else len(gpus)
            layouts = [(gpus[:cut], r.choice(LAYOUTS))]
            if gpus[cut:]:
                layouts.append((gpus[cut:], r.choice(LAYOUTS)))
        devices, free = [], {"cards": 0}
        for gpus, layout in layouts:
            profiles = {f"{k}.{mem[k]}gb": n for k, n in layout.items()}
            all_gpus = self.mig_strategy == "single"
            devices.append({"gpus": "all" if all_gpus else gpus, "profiles": profiles})
            for profile, n in profiles.items():
                free[profile] = free.get(profile, 0) + n * len(gpus) * count
        free["cards"] = (per_node - sum(len(g) for g, _ in layouts)) * count
        spec["mig"] = {"devices": devices}
        return free

    # -- tiers, teams, profiles ------------------------------------------------------------

    def tier_docs(self) -> list[Doc]:
        r = self.r
        names = ["serving", "training", "dev"][: r.randint(1, 3)]
        self.tiers = names
        values = {"serving": 100000, "training": 10000, "dev": 100}
        docs = []
        for name in names:
            spec: Doc = {"value": values[name], "description": f"The {name} tier."}
            if name == "dev":
                spec.update(preemptionPolicy="Never", preemptible=True)
            elif r.random() < 0.5:
                spec["preemptionPolicy"] = "PreemptLowerPriority"
            if self.said.random() < 0.3:
                spec["workloadDescription"] = f"Kueue: the {name} tier, admitted in order."
            docs.append(_doc("PriorityTier", name, spec))
        return docs

    def team_docs(self) -> list[Doc]:
        r = self.r
        teams = []
        for i in range(r.randint(2, 6)):
            name = f"team-{i}"
            cohort = r.choice(self.cohorts) if r.random() < 0.85 else None
            quotas = [q for p in r.sample(sorted(self.pools), min(len(self.pools), 3))
                      if (q := self._quota(p, name, cohort)) is not None]  # fmt: skip
            if not quotas:
                continue
            spec: Doc = {
                "namespaces": [f"{name}-ns"] + ([f"{name}-dev"] if r.random() < 0.3 else []),
                "quotas": quotas,
                "tiers": r.sample(self.tiers, r.randint(1, len(self.tiers))),
            }
            self.team_tiers[name] = spec["tiers"]
            if cohort:
                spec["cohort"] = cohort
            if r.random() < 0.6:
                spec["preemption"] = self._preemption(cohort)
            if r.random() < 0.3:
                spec["queueingStrategy"] = r.choice(["StrictFIFO", "BestEffortFIFO"])
            if "volcano" in self.targets and r.random() < 0.5:
                spec["volcano"] = {"weight": r.randint(1, 4)}
                # The queue layouts hand-written clusters have, from the weight drawn (no
                # draw of their own: every seed's other draws stay as they were).
                weight = spec["volcano"]["weight"]
                if weight in (2, 4):
                    spec["volcano"]["layout"] = "team"
                if weight in (3, 4):
                    spec["volcano"]["resources"] = "accelerators"
            if self.fair and r.random() < 0.5:
                spec["kueue"] = {"fairSharingWeight": r.choice([1, 2, 3])}
            if self.said.random() < 0.2:  # a quota of the cluster's own, above any reach
                spec["namespaceQuota"] = {"accelerators": {"nvidia.com/gpu": 100000}}
            if self.said.random() < 0.3:  # namespaces labelled as a cluster's selector names them
                spec["namespaceLabels"] = {"team": name, "gpu": "true"}
                if self.said.random() < 0.5:
                    selector = {"matchLabels": {"team": name}}
                    spec["kueue"] = {**spec.get("kueue", {}), "namespaceSelector": selector}
            self._covered(spec)
            teams.append(_doc("Team", name, spec))
        return teams

    def _covered(self, spec: Doc) -> None:
        """Sometimes the queue covers only the resources its quotas claim (a hand-written
        queue's own list, here in reverse order), and an entry's limits bound every other
        resource it lists at 0."""
        c = self.covered_r
        for entry in spec["quotas"]:
            if ("borrowingLimit" in entry or "lendingLimit" in entry) and c.random() < 0.4:
                entry["limitsCoverAll"] = True
        # Without the unclaimed resources every resource of a limited entry may be limited,
        # which then bounds its cpu and memory too (hostLimits): a queue without limits only.
        limits = ("borrowingLimit", "lendingLimit", "migBorrowingLimits")
        free = not any(k in entry for entry in spec["quotas"] for k in limits)
        claimed = self._claimed(spec["quotas"]) if free else []
        if claimed and c.random() < 0.3:
            listed = {"coveredResources": claimed[::-1]}
            spec["kueue"] = {**spec.get("kueue", {}), **listed}

    def _claimed(self, quotas: list[Doc]) -> list[str]:
        """The resources the quotas claim, where their names are plain (no sharing, MIG
        under the mixed strategy); none otherwise."""
        found: set[str] = set()
        for entry in quotas:
            spec = self.pools[entry["pool"]]["spec"]
            if "timeSlicing" in spec or "mps" in spec:
                return []
            if "mig" in spec and self.mig_strategy != "mixed":
                return []
            found |= {f"nvidia.com/mig-{p}" for p in entry.get("mig", {})}
            if "cards" in entry or "normalized" in entry:
                found.add(CARDS[spec["cardType"]][2])
        return sorted(found)

    def _quota(self, pool: str, team: str, cohort: str | None) -> Doc | None:
        r = self.r
        free = self.free[pool]
        entry: Doc = {"pool": pool}
        cards = free["cards"]
        if cards > 0 and (r.random() < 0.8 or len(free) == 1):
            take = r.randint(1, cards)
            free["cards"] -= take
            entry["cards"] = take
            coefficient = CARDS[self.pools[pool]["spec"]["cardType"]][7]
            if len(free) == 1 and take > 1 and r.random() < 0.2:
                # performance units: floor(units / coefficient) cards, here `take` exactly
                entry["normalized"] = float(Decimal(take) * Decimal(str(coefficient)))
                del entry["cards"]
        mig = {p: n for p, n in free.items() if p != "cards" and n > 0}
        if mig and r.random() < 0.8:
            chosen = {}
            for profile in r.sample(sorted(mig), r.randint(1, len(mig))):
                take = r.randint(1, mig[profile])
                free[profile] -= take
                chosen[profile] = take
            entry["mig"] = chosen
            for profile in chosen:
                self.mig_teams.setdefault(profile, []).append(team)
        if len(entry) == 1:
            return None
        card = self.pools[pool]["spec"]["cardType"]
        if "cards" in entry:
            held = self.held.setdefault(card, {})
            held[team] = max(held.get(team, 0), entry["cards"])  # one pool admits a job
        limits = cohort and "cards" in entry and not self.pools[pool]["spec"].get("isolated")
        if limits and r.random() < 0.4:
            entry["borrowingLimit"] = r.randint(0, entry["cards"])
        if limits and r.random() < 0.4:
            entry["lendingLimit"] = r.randint(0, entry["cards"])
        bounded = cohort and not self.pools[pool]["spec"].get("isolated")
        self._host_fields(entry, mixed=bool(bounded) and self.mig_strategy == "mixed")
        return entry

    def _host_fields(self, entry: Doc, *, mixed: bool) -> None:
        """Sometimes GPU-only limits, per-profile MIG limits, and a pool's own cpu / memory per
        card (never one of the Fleet defaults' values, which the team also has)."""
        h = self.host_r
        # migLendingLimits is not drawn: import reads a pool's lending percentage from the
        # same lendingLimits and cannot yet tell the two apart (docs/adopt.md).
        if mixed and entry.get("mig") and h.random() < 0.3:
            limits = {p: h.randint(0, n) for p, n in sorted(entry["mig"].items())}
            entry["migBorrowingLimits"] = limits
        if ("borrowingLimit" in entry or "lendingLimit" in entry) and h.random() < 0.4:
            entry["hostLimits"] = False
        if "cards" in entry and h.random() < 0.2:
            entry["cpuPerCard"] = h.choice([6, 20, 24])
        if "cards" in entry and h.random() < 0.1:
            entry["memoryPerCard"] = h.choice(["48Gi", "160Gi"])

    def _preemption(self, cohort: str | None) -> Doc:
        r = self.r
        out: Doc = {
            "withinClusterQueue": r.choice(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
            "reclaimWithinCohort": r.choice(["Never", "LowerPriority", "Any"]),
        }
        if cohort and out["reclaimWithinCohort"] != "Never" and r.random() < 0.5:
            out["borrowWithinCohort"] = {"policy": r.choice(["Never", "LowerPriority"])}
        return out

    def profile_docs(self) -> list[Doc]:
        docs = [p for f in FRAMEWORKS if (p := self._profile(f)) is not None]
        if self.mig_teams:  # one job on a MIG slice a team holds
            profile = self.r.choice(sorted(self.mig_teams))
            team = self.r.choice(self.mig_teams[profile])
            spec: Doc = {
                "framework": self.r.choice(["deployment", "job"]),
                "tier": self.r.choice(self.team_tiers[team]),
                "requirements": {"cardsPerNode": 1, "migProfile": profile},
                "image": "vllm", "cpuPerCard": 1, "memoryPerCard": "8Gi",
            }  # fmt: skip
            docs.append(_doc("WorkloadProfile", "mig-slice", spec))
        return docs

    def _profile(self, framework: str) -> Doc | None:
        """A profile some team can run; None for a Ray kind when no team holds whole NVIDIA
        cards (Ray sees no other accelerator, and a MIG slice is not a card)."""
        r = self.r
        ray = framework.startswith("ray")
        # the card types a team holds whole cards of (Ray: NVIDIA's only, the ones it sees)
        held = sorted((c, team, n) for c, teams in self.held.items() for team, n in teams.items()
                      if self.whole[c] and (not ray or CARDS[c][0] == "nvidia"))  # fmt: skip
        if ray and not held:
            return None
        card, team, most = r.choice(held) if held else (None, sorted(self.team_tiers)[0], 1)
        most = min(most, self.whole.get(card or "", 1))
        per_node = r.choice([n for n in (1, 1, 2, 4) if n <= most])
        gang = r.randint(1, max(1, min(2, most // per_node)))
        spec: Doc = {
            "framework": framework,
            "tier": r.choice(self.team_tiers[team]),
            "requirements": {"cardsPerNode": per_node, "gang": gang},
            "image": "ray" if framework.startswith("ray") else r.choice(["pytorch", "vllm"]),
            "cpuPerCard": 2,
            "memoryPerCard": "16Gi",
        }
        if framework in ("job", "jobset", "pytorchjob", "volcano-job", "rayjob"):
            spec["command"] = ["python", "train.py"]
        if framework in ("deployment", "rayservice", "leaderworkerset"):
            spec["port"] = 8000
        if card:
            spec["cardTypes"] = [card]
        if ray:
            spec["requirements"]["vendors"] = ["nvidia"]
        if framework == "rayjob" and card:
            spec["ray"] = {"workerGroups": [{"name": "workers", "cardType": card, "replicas": 1}],
                           "head": {"cpu": 2, "memory": "8Gi"}}  # fmt: skip
            spec["requirements"]["cardsPerNode"] = 1
        if self.topology and r.random() < 0.4:
            spec["topology"] = {r.choice(["preferred", "required"]): r.choice(self.topology)}
        return _doc("WorkloadProfile", f"{framework}-profile", spec)


def generate(seed: int) -> dict[str, list[Doc]]:
    """The policy of `seed`: {relative file name: [documents]}, deterministic."""
    gen = _Gen(seed)
    fleet = gen.fleet()
    cards = gen.card_types()
    pools = gen.pool_docs()
    tiers = gen.tier_docs()
    return {
        "fleet.yaml": [fleet],
        "cards.yaml": cards,
        "pools.yaml": pools,
        "tiers.yaml": tiers,
        "teams.yaml": gen.team_docs(),
        "profiles.yaml": gen.profile_docs(),
    }


def dump(docs: list[Doc]) -> str:
    return fastyaml.dump_all(docs, sort_keys=False, default_flow_style=False)


def write_policy(seed: int, folder: Path) -> Path:
    """Write seed's policy as YAML files under `folder` (created); returns `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, docs in generate(seed).items():
        (folder / name).write_text(dump(docs))
    return folder


if __name__ == "__main__":
    write_policy(int(sys.argv[1]), Path(sys.argv[2]))
