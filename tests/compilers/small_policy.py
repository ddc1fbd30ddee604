"""A small policy as YAML text for the core/kueue compiler tests (imported by module name)."""

from __future__ import annotations

from typing import Any

from hetgitops import api
from hetgitops.compilers import compile_policy
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest

FLEET = """\
apiVersion: hetgitops.io/v1alpha1
kind: Fleet
metadata: {name: test}
spec:
  cluster: test-cluster
  versions: {kubernetes: "1.33", kueue: "KUEUE"}
  targets: [core, kueue]
  labelDomain: example.io
  gpuOperator: {migStrategy: mixed}
  cohorts: [{name: root}, {name: child, parent: root}]
  topology: {name: topo, levels: [hostname, zone, rack]}
  defaults: {cpuPerCard: 12, memoryPerCard: 96Gi}
"""
CARDS = """\
apiVersion: hetgitops.io/v1alpha1
kind: CardType
metadata: {name: h100}
spec:
  vendor: nvidia
  model: H100-SXM5-80GB
  resourceName: nvidia.com/gpu
  memoryGiB: 80
  mig: {profileTable: H100-80GB}
  lifecycle: production
---
apiVersion: hetgitops.io/v1alpha1
kind: CardType
metadata: {name: l40s}
spec: {vendor: nvidia, model: L40S, resourceName: nvidia.com/gpu, memoryGiB: 48,
       lifecycle: production}
---
apiVersion: hetgitops.io/v1alpha1
kind: CardType
metadata: {name: ascend}
spec: {vendor: huawei, model: Ascend910B3, resourceName: huawei.com/Ascend910, memoryGiB: 64,
       lifecycle: production}
"""
POOLS = """\
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata: {name: h100-pool}
spec:
  cardType: h100
  purpose: inference
  cardsPerNode: 8
  nodes: [{names: "h-[1:2]", zone: z1, rack: r1}]
  mig:
    devices: [{gpus: [0, 1], profiles: {1g.10gb: 7}}]
  lending: {maxPercent: 50}
---
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata: {name: l40s-pool}
spec:
  cardType: l40s
  purpose: training
  cardsPerNode: 8
  nodes: [{names: "l-[1:2]", zone: z1, rack: r2}]
  taints: [{key: example.io/pool, value: l40s-pool, effect: NoSchedule}]
---
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata: {name: ascend-pool}
spec:
  cardType: ascend
  purpose: training
  cardsPerNode: 8
  nodes: [{names: a-1, zone: z2, rack: r3}]
  isolated: true
  taints: [{key: example.io/dedicated, effect: NoSchedule}]
"""
TEAMS = """\
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata: {name: alpha}
spec:
  namespaces: [alpha, alpha-dev]
  cohort: child
  quotas:
    - {pool: l40s-pool, cards: 8, borrowingLimit: 4, lendingLimit: 2}
    - {pool: h100-pool, cards: 4, mig: {1g.10gb: 7}}
    - {pool: ascend-pool, cards: 8}
  tiers: [dev]
  preemption: {withinClusterQueue: LowerPriority}
---
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata: {name: beta}
spec:
  namespaces: [beta]
  quotas: [{pool: l40s-pool, cards: 8}]
  tiers: [dev]
  cpuPerCard: 500m
  memoryPerCard: 1024Mi
---
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata: {name: gamma}
spec:
  namespaces: [gamma]
  cohort: root
  quotas: [{pool: h100-pool, cards: 4}]
  tiers: [dev]
---
apiVersion: hetgitops.io/v1alpha1
kind: PriorityTier
metadata: {name: dev}
spec: {value: 100, preemptionPolicy: Never, description: Experiments.}
"""


def build(
    *, kueue: str = "0.19.2", fleet: str = FLEET, extra: str = "", teams: str = TEAMS
) -> Policy:
    """The policy of the documents above (schema-valid; semantic findings are not our concern)."""
    docs = [fleet.replace("KUEUE", kueue), CARDS, POOLS, teams] + ([extra] if extra else [])
    text = "---\n".join(docs)
    result = api.validate_sources([("test.yaml", text.encode())], api.Options(check_output=False))
    assert not [d for d in result.diagnostics if d.rule == "schema"], result.diagnostics
    assert result.policy is not None
    return result.policy


Objects = dict[tuple[str, str], dict[str, Any]]


def objects(manifests: list[Manifest]) -> Objects:
    """(kind, name or namespace/name) -> object."""
    return {
        (m.kind, f"{m.namespace}/{m.name}" if m.namespace else m.name): dict(m.obj)
        for m in manifests
    }


def delta(quotas: str) -> str:
    """Team delta (namespace delta, cohort child, tier dev) holding `quotas`: its quota
    entries as YAML lines under `quotas:`."""
    return (
        "apiVersion: hetgitops.io/v1alpha1\nkind: Team\nmetadata: {name: delta}\nspec:\n"
        "  namespaces: [delta]\n  cohort: child\n  quotas:\n" + quotas + "  tiers: [dev]\n"
    )


def queue_resources(policy: Policy, team: str, prefix: str = "") -> dict[str, dict[str, Any]]:
    """The resources of the team's ClusterQueue (as the kueue compiler writes it) in its first
    flavor whose name starts with `prefix`, by resource name."""
    found = objects(compile_policy(policy, ("kueue",)))
    flavors = found["ClusterQueue", team]["spec"]["resourceGroups"][0]["flavors"]
    flavor = next(f for f in flavors if f["resources"] and f["name"].startswith(prefix))
    return {r["name"]: r for r in flavor["resources"]}
