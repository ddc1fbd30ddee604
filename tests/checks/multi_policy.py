"""The rule tests' minimal policy made multi-cluster: a manager `hub` and two workers, `east`
(the H100 pool) and `west` (the L40S pool)."""

from __future__ import annotations

from tests.checks.conftest import BASE, HEADER, PolicyText

CLUSTERS = f"""\
{HEADER}kind: Cluster
metadata:
  name: hub
spec:
  role: manager
---
{HEADER}kind: Cluster
metadata:
  name: east
spec:
  role: worker
  credentials: {{secret: east-kubeconfig}}
  dispatchOrder: 1
---
{HEADER}kind: Cluster
metadata:
  name: west
spec:
  role: worker
  credentials: {{clusterProfile: west}}
  dispatchOrder: 2
"""


def multi_policy() -> PolicyText:
    policy = PolicyText({**BASE, "clusters.yaml": CLUSTERS})
    policy.replace(
        "pools.yaml", "  cardType: h100-80gb\n", "  cluster: east\n  cardType: h100-80gb\n"
    )
    policy.replace(
        "pools.yaml", "  cardType: l40s-48gb\n", "  cluster: west\n  cardType: l40s-48gb\n"
    )
    return policy
