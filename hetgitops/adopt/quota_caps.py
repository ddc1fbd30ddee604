"""Adopt stage: a team namespace's ResourceQuota that caps accelerators otherwise than the
queue's reach (whole GPUs only beside MIG quota, or a lower count) is kept as the team's
`namespaceQuota.accelerators`. The reach is known only once the written policy is built
(`plan.namespace_quota.caps_of`), so this runs after the first render: where the cluster's caps
are the reach, nothing is written (and the render stands); where they differ, the caps are
written and the policy rendered again."""

from __future__ import annotations

from decimal import Decimal

from hetgitops.adopt.infer.documents import Inferred
from hetgitops.model import quantities
from hetgitops.model.policy import Policy
from hetgitops.plan.namespace_quota import caps_of


def _values(caps: dict[str, str]) -> dict[str, Decimal] | None:
    try:
        return {k: quantities.value_of(v) for k, v in caps.items()}
    except ValueError:
        return None  # a quantity the API server would not take: the round trip names it


def keep_caps(inferred: Inferred, policy: Policy) -> bool:
    """Write `namespaceQuota.accelerators` for each team whose adopted quota caps other
    accelerators, or other amounts, than its queue's reach; True when one was written."""
    written = False
    for doc in inferred.teams:
        name = doc["metadata"]["name"]
        cluster, team = inferred.quota_caps.get(name), policy.teams.get(name)
        if cluster is None or team is None:
            continue
        said = _values(cluster)
        if said is None or said == _values(caps_of(policy, team)):
            continue
        quota = doc["spec"].setdefault("namespaceQuota", {})
        quota["accelerators"] = {k: quantities.normalize(v) for k, v in cluster.items()}
        written = True
    return written
