"""Explain stage: the namespace's ResourceQuota that `render` writes (core target; its name and
hard limits are `plan.namespace_quota`'s: each accelerator capped at what the team can ever be
admitted, beside an adopted quota's other limits such as cpu or pods), applied to a job's pods
as the API server's quota admission does when they are created: each pod is charged under every
key of the quota that counts pods (one pod under `pods` and `count/pods`, its cpu request under
`cpu` and `requests.cpu`, an extended resource under `requests.<name>`), and a pod that would
take the namespace's used past a hard limit in a key it is charged is refused,
`exceeded quota: <name>, requested: ..., used: ..., limited: ...`, with the exceeded keys only.
Pods refused there never exist: koord-scheduler never counts them. Keys the pod's requests do
not tell (`limits.*`, the devices a DeviceClass's claims take, other objects' counts) are not
applied. docs/upstream.md cites the Kubernetes code.

Koordinator's view needs it (a pod of koord-scheduler is not held back by Kueue first): a leaf's max
is the team's ceiling in one pool and the ResourceQuota the same ceiling summed over its pools, so
pods over a one-pool team's max are refused at creation, not left pending (found by
tests/sim/test_sim_koordinator_explain.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hetgitops.explain.kueue_messages import fmt
from hetgitops.explain.workload import Workload
from hetgitops.model.policy import Policy
from hetgitops.plan.namespace_quota import of_namespace
from hetgitops.plan.quota_plan import kueue_amount

PODS, COUNT_PODS = "pods", "count/pods"  # a pod's own count: not finished / every pod stored
NATIVE = ("cpu", "memory", "ephemeral-storage")
REQUESTS = "requests."
HUGEPAGES = "hugepages-"
DEVICE_CLASS = "deviceclass.resource.kubernetes.io/"


@dataclass(frozen=True)
class Created:
    """How many of the job's pods the API server creates, and why not the next one."""

    pods: int
    message: str = ""  # the refusal of the first pod not created ("" when all are)
    quota: str = ""


def charged_as(key: str) -> str | None:
    """The pod resource a quota key charges a pod for (`pods` and `count/pods` for the pod
    itself), None for a key this view does not apply: the pod evaluator's matching resources
    and usage, requests only."""
    if key in (PODS, COUNT_PODS, *NATIVE) or key.startswith(HUGEPAGES):
        return key
    name = key.removeprefix(REQUESTS)
    if name == key:
        return None
    if name in NATIVE or name.startswith(HUGEPAGES):
        return name
    native = "/" not in name or "kubernetes.io/" in name
    return name if not native or name.startswith(DEVICE_CLASS) else None


def _hard(policy: Policy, namespace: str | None) -> tuple[str, dict[str, tuple[str, str]]]:
    """The quota's name and, per key it charges pods under, (the pod resource, the limit)."""
    quota = of_namespace(policy, namespace)
    if quota is None:
        return "", {}
    hard = {k: (r, v) for k, v in quota.hard.items() if (r := charged_as(k)) is not None}
    return quota.name, hard


def _charge(request: Mapping[str, int], resource: str) -> int:
    return 1 if resource in (PODS, COUNT_PODS) else request.get(resource, 0)


def created(policy: Policy, workload: Workload, used: Mapping[str, int] | None = None) -> Created:
    """The job's pods in creation order against the namespace's ResourceQuota; `used`: what
    the namespace's pods already request (live mode; nothing on the empty fleet)."""
    name, hard = _hard(policy, workload.namespace)
    pods = [ps.requests for ps in workload.pod_sets for _ in range(ps.count)]
    if not hard:
        return Created(len(pods))
    limit = {k: kueue_amount(r, v) for k, (r, v) in hard.items()}
    held = {k: (used or {}).get(r, 0) for k, (r, _) in hard.items()}
    for number, request in enumerate(pods):
        asked = {k: _charge(request, r) for k, (r, _) in hard.items()}
        over = sorted(k for k, n in asked.items() if n and held[k] + n > limit[k])
        if over:
            words = _refusal(workload, number, name, over, asked, held, hard)
            return Created(number, words, name)
        for k, n in asked.items():
            held[k] += n
    return Created(len(pods))


def _refusal(
    workload: Workload,
    number: int,
    name: str,
    over: list[str],
    asked: Mapping[str, int],
    held: Mapping[str, int],
    hard: Mapping[str, tuple[str, str]],
) -> str:
    """The API server's words: the exceeded keys sorted, each `key=quantity`."""

    def listed(values: Mapping[str, int]) -> str:
        return ",".join(f"{k}={fmt(hard[k][0], values[k])}" for k in over)

    limited = ",".join(f"{k}={hard[k][1]}" for k in over)
    pod = workload.name if workload.kind == "Pod" else f"{workload.name}-<pod {number + 1}>"
    return (
        f'pods "{pod}" is forbidden: exceeded quota: {name}, requested: {listed(asked)}, '
        f"used: {listed(held)}, limited: {limited}"
    )
