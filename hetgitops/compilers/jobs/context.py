"""Compile stage, `jobs`: the plain-data context (dicts, lists, strings, ints) a template renders.

Every decision is taken here, so templates only place values: which queue, which labels, which
pods get probes. Keys of the context (documented for `--templates` authors):

- `job`: name, namespace, labels, annotations, selector, gang, workers (= gang - 1), scheduler
  (`kueue`, `volcano`, `koordinator` or `default`), queue (LocalQueue, Volcano leaf queue or
  Koordinator leaf ElasticQuota; "" for default),
  priority_class, suspend (bool: Kueue admits by un-suspending), port
- `leader`, `worker`: pod settings of rank 0 and of the other pods (see `_pod`); only the
  leader listens on the rendezvous port, so only it gets probes
- `profile`, `team`, `card`, `fleet`: names and facts for custom templates
- `ray`: None, or a Ray profile's cluster (see ray_context.py)
"""

from __future__ import annotations

import hashlib
from typing import Any

from hetgitops.compilers.dra import CLAIM
from hetgitops.compilers.kueue_queues import local_queue_name
from hetgitops.model.policy import Policy, WorkloadProfile
from hetgitops.plan.dra_claims import pod_claim
from hetgitops.plan.flavors import toleration
from hetgitops.plan.job_targets import KOORDINATOR, KUEUE, VOLCANO, JobTarget
from hetgitops.plan.koordinator_priority import koord_tiers
from hetgitops.plan.koordinator_quota import leaf_quota_name
from hetgitops.plan.node_labels import domain, pool_node_labels, topology_label
from hetgitops.plan.ray import (
    ELASTIC_ANNOTATION,
    VOLCANO_PRIORITY_LABEL,
    VOLCANO_QUEUE_LABEL,
    is_ray,
)
from hetgitops.plan.routing import pod_request
from hetgitops.plan.volcano_quota import leaf_queue_name

SERVING = frozenset({"deployment", "leaderworkerset"})
OWN_QUEUE = frozenset({"volcano-job", "pytorchjob"})
# Frameworks whose gang is a leader pod set plus a worker pod set.
TWO_POD_SETS = frozenset({"jobset", "pytorchjob", "leaderworkerset"})
# Kueue's webhook suspends these itself, but a job created suspended never races admission.
SUSPENDABLE = frozenset({"job", "jobset", "pytorchjob", "rayjob", "raycluster"})
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
TAS_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TAS_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
TAS_GROUP = "kueue.x-k8s.io/podset-group-name"
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"
VOLCANO_MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
# Koordinator v1.8.0: the pod's quota (apis/extension/elastic_quota.go:38) and its gang
# (apis/extension/coscheduling.go:28-33); koord-scheduler is the chart's scheduler name.
KOORD_QUOTA = "quota.scheduling.koordinator.sh/name"
KOORD_GANG = "gang.scheduling.koordinator.sh/name"
KOORD_GANG_MIN = "gang.scheduling.koordinator.sh/min-available"
KOORD_SCHEDULER = "koord-scheduler"
NAME_LABEL = "app.kubernetes.io/name"  # on every pod; a Deployment selects its pods by it
READINESS_PERIOD = 10


class ContextError(ValueError):
    """The policy lacks something a template needs (reported as `job-template`)."""


# The one rule for a job's name, which is also its pods' `app.kubernetes.io/name` and the stem of
# every name its controller derives. The tightest is JobSet's webhook: the longest pod name,
# `<name>-workers-0-<index>-<5 random>`, must be a DNS-1035 label (<= 63); with a gang of up to
# 100,000 (a 5-digit index) that leaves 41 characters.
MAX_JOB_NAME = 63 - len("-workers-0-") - 5 - len("-abcde")
_HASH = 8


def job_name(target: JobTarget) -> str:
    """`<profile>-<card>`, or when that is longer than MAX_JOB_NAME its start and a hash of the
    whole (two long names that share a start stay apart, and the same name always hashes alike)."""
    full = f"{target.profile.name}-{target.card.name}"
    if len(full) <= MAX_JOB_NAME:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:_HASH]
    return f"{full[: MAX_JOB_NAME - _HASH - 1].rstrip('-')}-{digest}"


def _written(profile: WorkloadProfile, *path: str) -> bool:
    origin = profile.origin
    return (*origin.base, *path) in origin.source.values


def _image(target: JobTarget) -> str:
    key = target.profile.image
    if key is None:
        raise ContextError(
            f"profile '{target.profile.name}' sets no spec.image; a job template needs one of "
            f"card type '{target.card.name}''s images ({', '.join(target.card.images) or 'none'})"
        )
    image = target.card.images.get(key)
    if image is None:
        raise ContextError(f"card type '{target.card.name}' has no '{key}' image")
    return image


def _resources(policy: Policy, target: JobTarget) -> dict[str, Any]:
    """Requests == limits for everything: the pod is Guaranteed QoS, last to be evicted under
    node pressure, and extended resources must be equal anyway."""
    amounts = pod_request(policy, target.team, target.profile, target.route)
    if _claim(target) is None:
        return {"requests": dict(amounts), "limits": dict(amounts)}
    # On the DRA claims path the card comes from the pod's claim, not an extended resource.
    amounts.pop(target.route.resource)
    return {"requests": dict(amounts), "limits": dict(amounts), "claims": [{"name": CLAIM}]}


def _claim(target: JobTarget) -> list[dict[str, str]] | None:
    """The pod's `resourceClaims` on the DRA claims path (plan/dra.py), else None."""
    claim = pod_claim(target)
    if claim is None:
        return None
    return [{"name": CLAIM, "resourceClaimTemplateName": claim[0]}]


def _probes(target: JobTarget) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(liveness, readiness) of the leader. tcpSocket, never exec: exec probes time out and
    kill pods under load. Training jobs get one only when the profile asks (`probes`), since a
    batch job need not listen on a port; servers always do."""
    profile = target.profile
    serving = profile.framework in SERVING
    if not serving and not _written(profile, "spec", "probes"):
        return None, None
    socket = {"port": profile.port}
    liveness = {
        "tcpSocket": socket,
        "initialDelaySeconds": profile.probe_initial_delay,
        "periodSeconds": profile.probe_period,
        "failureThreshold": profile.probe_failure_threshold,
    }
    readiness = {"tcpSocket": socket, "periodSeconds": READINESS_PERIOD} if serving else None
    return liveness, readiness


def _node_selector(policy: Policy, target: JobTarget) -> dict[str, str]:
    """The card-type label of the pool's nodes, plus the pool when only one is eligible: the
    same values the Kueue flavors inject, so admission never conflicts with them."""
    labels = pool_node_labels(policy, target.route.pool)
    keys = [f"{domain(policy)}/card-type"]
    if target.pinned:
        keys.append(f"{domain(policy)}/pool")
    return {key: labels[key] for key in sorted(keys) if key in labels}


def _tolerations(target: JobTarget) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    for route in target.routes:
        for taint in route.pool.taints:
            if toleration(taint) not in found:
                found.append(toleration(taint))
    return found


def _topology(policy: Policy, profile: WorkloadProfile) -> dict[str, str]:
    """Kueue TAS annotations; levels the Fleet's Topology lacks are dropped (and reported)."""
    fleet = policy.fleet
    if fleet is None or not fleet.topology_name:
        return {}
    wanted = (
        (TAS_REQUIRED, profile.topology_required),
        (TAS_PREFERRED, profile.topology_preferred),
    )
    return {
        key: topology_label(policy, level)
        for key, level in wanted
        if level is not None and level in fleet.topology_levels
    }


def _pod_annotations(policy: Policy, target: JobTarget, queue: str) -> dict[str, str]:
    profile = target.profile
    if target.scheduler == KUEUE:
        found = _topology(policy, profile)
        # Leader and workers are two PodSets; without a group Kueue may put them in
        # different racks. Kueue groups exactly two PodSets, one of them a single pod.
        if found and profile.gang > 1 and profile.framework in TWO_POD_SETS:
            found[TAS_GROUP] = job_name(target)
        return dict(sorted(found.items()))
    # Volcano Jobs and PyTorchJobs name their queue in their own spec; other pods are grouped
    # by the podgroup controller, which reads the queue from the pod annotation only.
    if target.scheduler == VOLCANO and profile.framework not in OWN_QUEUE:
        return {VOLCANO_QUEUE: queue}
    if target.scheduler == KOORDINATOR and profile.gang > 1:
        return {KOORD_GANG: job_name(target), KOORD_GANG_MIN: str(profile.gang)}
    return {}


def _scheduler_name(target: JobTarget) -> str:
    return {VOLCANO: VOLCANO, KOORDINATOR: KOORD_SCHEDULER}.get(target.scheduler, "")


def _priority_class(policy: Policy, target: JobTarget) -> str:
    """The tier's PriorityClass; under Koordinator the one inside its bands
    (plan/koordinator_priority.py), since a value outside them is no priority class there."""
    tier = target.profile.tier
    if target.scheduler == KOORDINATOR and tier in koord_tiers(policy):
        return koord_tiers(policy)[tier].name
    return tier


def _pod_labels(policy: Policy, target: JobTarget, queue: str) -> dict[str, str]:
    """The identity labels; under Koordinator also the quota the pod counts against, only
    ever a leaf the policy defines (a misspelled name falls silently into the default quota,
    pkg/scheduler/plugins/elasticquota/plugin_helper.go:84-115)."""
    labels = {**_identity(policy, target), NAME_LABEL: job_name(target)}
    if target.scheduler == KOORDINATOR:
        labels[KOORD_QUOTA] = queue
    return dict(sorted(labels.items()))


def _pod(policy: Policy, target: JobTarget, queue: str, *, leader: bool) -> dict[str, Any]:
    profile = target.profile
    liveness, readiness = _probes(target) if leader else (None, None)
    return {
        "labels": _pod_labels(policy, target, queue),
        "annotations": _pod_annotations(policy, target, queue),
        "scheduler_name": _scheduler_name(target),
        "priority_class_name": _priority_class(policy, target),
        "node_selector": _node_selector(policy, target),
        "tolerations": _tolerations(target),
        "image": _image(target),
        "command": list(profile.command),
        "env": _env(target, leader=leader),
        "port": profile.port,
        "resources": _resources(policy, target),
        "resource_claims": _claim(target),
        "liveness_probe": liveness,
        "readiness_probe": readiness,
    }


def _rendezvous(target: JobTarget, *, leader: bool) -> list[dict[str, Any]]:
    """torchrun's rendezvous for a JobSet gang (PyTorchJob, LWS and Volcano inject their own):
    rank 0 is the leader pod `<name>-leader-0-0.<name>`; a worker's rank is its completion
    index plus NODE_RANK_OFFSET."""
    name, profile = job_name(target), target.profile
    if profile.framework != "jobset" or profile.gang < 2:
        return []
    found: list[dict[str, Any]] = [
        {"name": "MASTER_ADDR", "value": f"{name}-leader-0-0.{name}"},
        {"name": "MASTER_PORT", "value": str(profile.port)},
        {"name": "NNODES", "value": str(profile.gang)},
    ]
    if leader:
        return [*found, {"name": "NODE_RANK", "value": "0"}]
    index = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    return [
        *found,
        {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": index}}},
        {"name": "NODE_RANK_OFFSET", "value": "1"},
    ]


def _env(target: JobTarget, *, leader: bool) -> list[dict[str, Any]]:
    """The profile's env, plus rendezvous variables it does not set itself."""
    own = [{"name": k, "value": v} for k, v in sorted(target.profile.env.items())]
    extra = [e for e in _rendezvous(target, leader=leader) if e["name"] not in target.profile.env]
    return own + extra


def _identity(policy: Policy, target: JobTarget) -> dict[str, str]:
    prefix = domain(policy)
    return {
        f"{prefix}/card-type": target.card.name,
        f"{prefix}/profile": target.profile.name,
        f"{prefix}/team": target.team.name,
    }


def _queue(policy: Policy, target: JobTarget) -> str:
    if target.scheduler == KUEUE and policy.fleet is not None:
        return local_queue_name(policy.fleet, target.team)
    if target.scheduler == VOLCANO:
        return leaf_queue_name(target.team, target.route.pool.name)
    if target.scheduler == KOORDINATOR:
        return leaf_quota_name(target.team.name, target.route.pool.name)
    return ""


def _job_labels(policy: Policy, target: JobTarget, queue: str) -> dict[str, str]:
    """Labels of the top-level object. Not `managed-by: hetgitops`: a submitted job belongs to
    its team, and drift treats objects carrying that label as hetgitops' own."""
    labels = _identity(policy, target)
    if policy.fleet is not None:
        labels[policy.fleet.label("fleet")] = policy.fleet.cluster
    if target.scheduler == KUEUE:
        labels |= {KUEUE_QUEUE: queue, KUEUE_PRIORITY: target.profile.tier}
    if target.scheduler == VOLCANO and is_ray(target.profile):
        # KubeRay's Volcano batch scheduler (--batch-scheduler=volcano) builds the PodGroup.
        labels |= {VOLCANO_QUEUE_LABEL: queue, VOLCANO_PRIORITY_LABEL: target.profile.tier}
    return dict(sorted(labels.items()))


def _job_annotations(target: JobTarget) -> dict[str, str]:
    """Volcano's podgroup controller takes the gang size of plain pods from their owner;
    a Ray object asks Kueue for elastic workload slicing by annotation."""
    ray = target.profile.ray
    if is_ray(target.profile):
        elastic = target.scheduler == KUEUE and ray is not None and ray.elastic
        return {ELASTIC_ANNOTATION: "true"} if elastic else {}
    if target.scheduler == VOLCANO and target.profile.framework != "volcano-job":
        return {VOLCANO_MIN_MEMBER: str(target.profile.gang)}
    return {}


def context(policy: Policy, target: JobTarget) -> dict[str, Any]:
    """Everything a template needs; raises ContextError when the policy lacks an input."""
    profile, team, card = target.profile, target.team, target.card
    queue = _queue(policy, target)
    ray: dict[str, Any] | None = None
    if is_ray(profile):
        from hetgitops.compilers.jobs.ray_context import ray_values  # needs this module

        ray = ray_values(policy, target, queue)
    name = ray["name"] if ray else job_name(target)
    job: dict[str, Any] = {
        "name": name,
        "namespace": team.namespaces[0] if team.namespaces else team.name,
        "labels": _job_labels(policy, target, queue),
        "annotations": _job_annotations(target),
        "selector": {NAME_LABEL: name},
        "gang": profile.gang,
        "workers": profile.gang - 1,
        "scheduler": target.scheduler,
        "queue": queue,
        "priority_class": _priority_class(policy, target),
        "suspend": target.scheduler == KUEUE and profile.framework in SUSPENDABLE,
        "port": profile.port,
    }
    return {
        "job": job,
        "leader": _pod(policy, target, queue, leader=True),
        "worker": _pod(policy, target, queue, leader=False),
        "profile": _facts(profile),
        "team": {"name": team.name, "namespaces": list(team.namespaces)},
        "card": {
            "name": card.name,
            "vendor": card.vendor,
            "model": card.model,
            "resource": target.route.resource,
            "pools": [route.pool.name for route in target.routes],
        },
        "fleet": _fleet(policy),
        "ray": ray,
    }


def _facts(profile: WorkloadProfile) -> dict[str, Any]:
    return {
        "name": profile.name,
        "framework": profile.framework,
        "tier": profile.tier,
        "cards_per_node": profile.cards_per_node,
        "gang": profile.gang,
    }


def _fleet(policy: Policy) -> dict[str, str]:
    fleet = policy.fleet
    return {"cluster": fleet.cluster if fleet else "", "domain": domain(policy)}
