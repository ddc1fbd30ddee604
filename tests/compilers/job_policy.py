"""A small policy for the `jobs` compiler tests (imported by module name, like small_policy)."""

from __future__ import annotations

from hetgitops import api
from hetgitops.model.policy import Policy

FILE = "jobs.yaml"
FLEET = """\
apiVersion: hetgitops.io/v1alpha1
kind: Fleet
metadata: {name: test}
spec:
  cluster: test-cluster
  versions: {kubernetes: "1.33", kueue: "0.19.2", volcano: "1.15.1"}
  targets: [core, kueue, volcano]
  labelDomain: example.io
  gpuOperator: {migStrategy: mixed}
  volcano: {queuePlugin: capacity, hierarchy: true}
  topology: {name: topo, levels: [zone, rack, hostname]}
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
  interconnect: nvlink
  mig: {profileTable: H100-80GB}
  lifecycle: production
  images: {pytorch: "pt:h100", vllm: "vllm:h100"}
---
apiVersion: hetgitops.io/v1alpha1
kind: CardType
metadata: {name: l40s}
spec:
  vendor: nvidia
  model: L40S
  resourceName: nvidia.com/gpu
  memoryGiB: 48
  interconnect: pcie
  lifecycle: production
  images: {pytorch: "pt:l40s", vllm: "vllm:l40s"}
---
apiVersion: hetgitops.io/v1alpha1
kind: CardType
metadata: {name: ascend}
spec:
  vendor: huawei
  model: Ascend910B3
  resourceName: huawei.com/Ascend910
  memoryGiB: 64
  lifecycle: production
  images: {pytorch: "pt:ascend"}
"""
POOLS = """\
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata: {name: h100-infer}
spec:
  cardType: h100
  purpose: inference
  cardsPerNode: 8
  nodes: [{names: "h-[1:2]", zone: z1, rack: r1}]
  mig:
    devices: [{gpus: [0, 1], profiles: {1g.10gb: 7}}]
---
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata: {name: l40s-a}
spec:
  cardType: l40s
  purpose: training
  cardsPerNode: 8
  nodes: [{names: "la-[1:4]", zone: z1, rack: r2}]
  taints: [{key: example.io/pool, value: l40s-a, effect: NoSchedule}]
---
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata: {name: l40s-b}
spec:
  cardType: l40s
  purpose: training
  cardsPerNode: 8
  nodes: [{names: "lb-[1:2]", zone: z1, rack: r3}]
  taints: [{key: example.io/dedicated, effect: NoSchedule}]
---
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata: {name: ascend}
spec:
  cardType: ascend
  purpose: training
  cardsPerNode: 8
  nodes: [{names: "a-[1:2]", zone: z2, rack: r4}]
  isolated: true
  taints: [{key: example.io/pool, value: ascend, effect: NoSchedule}]
"""
TEAMS = """\
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata: {name: alpha}
spec:
  namespaces: [alpha, alpha-dev]
  quotas:
    - {pool: l40s-b, cards: 16}
    - {pool: l40s-a, cards: 16}
    - {pool: h100-infer, mig: {1g.10gb: 7}}
  tiers: [train, serve]
---
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata: {name: beta}
spec:
  namespaces: [beta]
  quotas:
    - {pool: l40s-a, cards: 16}
    - {pool: ascend, cards: 16}
  tiers: [train]
  cpuPerCard: 500m
  memoryPerCard: 1024Mi
---
apiVersion: hetgitops.io/v1alpha1
kind: Team
metadata: {name: gamma}
spec:
  namespaces: [gamma]
  quotas: [{pool: h100-infer, cards: 8}]
  tiers: [serve]
---
apiVersion: hetgitops.io/v1alpha1
kind: PriorityTier
metadata: {name: train}
spec: {value: 100, preemptionPolicy: Never}
---
apiVersion: hetgitops.io/v1alpha1
kind: PriorityTier
metadata: {name: serve}
spec: {value: 1000}
"""
PROFILES = """\
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: pretrain}
spec:
  framework: pytorchjob
  tier: train
  requirements: {cardsPerNode: 8, gang: 2, vendors: [nvidia]}
  image: pytorch
  command: [torchrun, train.py]
  env: {NCCL_SOCKET_IFNAME: eth0, A_FIRST: "yes"}
  # beta's queue holds 16 x 500m = 8 cpu: the gang's 2 x 8 x 250m = 4 fits.
  cpuPerCard: 250m
  probes: {initialDelaySeconds: 900}
  topology: {preferred: rack}
---
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: mig-serve}
spec:
  framework: deployment
  tier: serve
  requirements: {cardsPerNode: 1, migProfile: 1g.10gb}
  image: vllm
  port: 8000
---
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: npu}
spec:
  framework: volcano-job
  tier: train
  requirements: {cardsPerNode: 8, gang: 2, vendors: [huawei]}
  image: pytorch
---
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: batch}
spec:
  framework: job
  tier: train
  teams: [beta]
  requirements: {cardsPerNode: 1, vendors: [nvidia]}
  image: pytorch
  topology: {preferred: nvlink-domain}
---
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: lws}
spec:
  framework: leaderworkerset
  tier: train
  teams: [beta]
  requirements: {cardsPerNode: 4, gang: 2, vendors: [nvidia]}
  image: vllm
  topology: {required: rack}
---
apiVersion: hetgitops.io/v1alpha1
kind: WorkloadProfile
metadata: {name: split}
spec:
  framework: jobset
  tier: train
  teams: [alpha]
  requirements: {cardsPerNode: 4, gang: 3, vendors: [nvidia]}
  image: pytorch
"""


def text(*, volcano_only: bool = False, extra: str = "") -> str:
    fleet = FLEET.replace("[core, kueue, volcano]", "[core, volcano]") if volcano_only else FLEET
    return "---\n".join([fleet, CARDS, POOLS, TEAMS, PROFILES] + ([extra] if extra else []))


def build(
    *,
    volcano_only: bool = False,
    extra: str = "",
    mig_strategy: str = "mixed",
    edit: tuple[str, str] = ("", ""),
) -> Policy:
    """The model of the documents above (`edit`: one (old, new) replacement): schema-valid
    (semantic findings do not matter here)."""
    body = text(volcano_only=volcano_only, extra=extra)
    if edit[0]:
        assert body.count(edit[0]) == 1, edit
        body = body.replace(*edit)
    source = body.replace("migStrategy: mixed", f"migStrategy: {mig_strategy}").encode()
    result = api.validate_sources([(FILE, source)], api.Options(check_output=False))
    assert not [d for d in result.diagnostics if d.rule == "schema"], result.diagnostics
    assert result.policy is not None
    return result.policy


def line_of(needle: str, after: str = "") -> int:
    """1-based line of the first `needle` after the first `after` in the policy text."""
    body = text()
    start = body.index(after) if after else 0
    return body.count("\n", 0, body.index(needle, start)) + 1
