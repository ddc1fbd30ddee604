"""Explain stage: the namespace's ResourceQuota that `render` writes (core target,
`hetgitops-accelerators`: each accelerator capped at what the team can ever be admitted,
`plan.quota_plan.admissible`), applied to a job's pods as the API server's quota admission does when
they are created (k8s.io/apiserver pkg/admission/plugin/resourcequota/controller.go CheckRequest: a
pod whose `requests.<resource>` would take the namespace's used past the hard limit is refused,
`exceeded quota: <name>, requested: ..., used: ..., limited: ...`, with the exceeded resources
only). Pods refused there never exist: koord-scheduler never counts them.

Koordinator's view needs it (a pod of koord-scheduler is not held back by Kueue first): a leaf's max
is the team's ceiling in one pool and the ResourceQuota the same ceiling summed over its pools, so
pods over a one-pool team's max are refused at creation, not left pending (found by
tests/sim/test_sim_koordinator_explain.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hetgitops.compilers.core import QUOTA_NAME
from hetgitops.explain.kueue_messages import fmt
from hetgitops.explain.workload import Workload
from hetgitops.model.policy import Policy
from hetgitops.plan import dra
from hetgitops.plan.quota_plan import admissible


@dataclass(frozen=True)
class Created:
    """How many of the job's pods the API server creates, and why not the next one."""

    pods: int
    message: str = ""  # the refusal of the first pod not created ("" when all are)
    quota: str = ""


def _hard(policy: Policy, namespace: str | None) -> tuple[str, dict[str, int]]:
    fleet = policy.fleet
    if fleet is None or "core" not in fleet.targets or namespace is None:
        return "", {}
    team = next((t for t in policy.teams.values() if namespace in t.namespaces), None)
    if team is None:
        return "", {}
    caps = {r: n for r, n in admissible(policy, team).items()
            if dra.namespace_quota_key(policy, r) is None}  # fmt: skip
    return team.namespace_quota_name or QUOTA_NAME, caps


def created(policy: Policy, workload: Workload, used: Mapping[str, int] | None = None) -> Created:
    """The job's pods in creation order against the namespace's ResourceQuota; `used`: what
    the namespace's pods already request (live mode; nothing on the empty fleet)."""
    name, hard = _hard(policy, workload.namespace)
    pods = [ps.requests for ps in workload.pod_sets for _ in range(ps.count)]
    if not hard:
        return Created(len(pods))
    held = {r: (used or {}).get(r, 0) for r in hard}
    for number, request in enumerate(pods):
        over = sorted(r for r in hard if request.get(r, 0) and held[r] + request[r] > hard[r])
        if over:
            return Created(
                number, _refusal(workload, number, name, over, request, held, hard), name
            )
        for r in hard:
            held[r] += request.get(r, 0)
    return Created(len(pods))


def _refusal(
    workload: Workload,
    number: int,
    name: str,
    over: list[str],
    request: Mapping[str, int],
    held: Mapping[str, int],
    hard: Mapping[str, int],
) -> str:
    def listed(values: Mapping[str, int]) -> str:
        return ",".join(f"requests.{r}={fmt(r, values[r])}" for r in over)

    pod = workload.name if workload.kind == "Pod" else f"{workload.name}-<pod {number + 1}>"
    return (
        f'pods "{pod}" is forbidden: exceeded quota: {name}, requested: {listed(request)}, '
        f"used: {listed(held)}, limited: {listed(hard)}"
    )
