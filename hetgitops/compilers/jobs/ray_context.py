"""Compile stage, `jobs`: the `ray` part of a template's context (RayJob, RayCluster, RayService).

Keys of `ray` (for `--templates` authors): name, suspend, autoscaling, submitter (bool: a
K8sJobMode RayJob), submission_mode, entrypoint, serve_config, head and submitter_pod (pods,
see below; submitter_pod None unless `submitter`) and
groups (each a pod plus group_name, replicas, min_replicas, max_replicas). A Ray pod has the
keys of a `leader`/`worker` pod plus container, ports ([{name, containerPort}]) and
ray_start_params. Upstream rules met here (KubeRay ray-operator v1.6.2, Kueue v0.19.2) are
cited in hetgitops/plan/ray.py.
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from hetgitops.compilers.jobs.context import (
    KOORD_GANG,
    KOORD_GANG_MIN,
    KOORD_QUOTA,
    NAME_LABEL,
    ContextError,
    _pod,
)
from hetgitops.model import quantities
from hetgitops.model.policy import Policy
from hetgitops.plan.flavors import toleration
from hetgitops.plan.job_targets import KOORDINATOR, VOLCANO, GroupTarget, JobTarget
from hetgitops.plan.koordinator_quota import leaf_quota_name
from hetgitops.plan.node_labels import domain, pool_node_labels
from hetgitops.plan.quota_plan import per_card
from hetgitops.plan.ray import (
    CLIENT_PORT,
    DASHBOARD_PORT,
    GCS_PORT,
    MAX_NAME,
    ray_name,
    ray_resource_name,
    submitter,
)


def _group_target(target: JobTarget, group: GroupTarget) -> JobTarget:
    profile = dataclasses.replace(target.profile, gang=group.replicas)
    return dataclasses.replace(target, profile=profile, card=group.card, routes=group.routes)


def _start_params(target: JobTarget) -> dict[str, str]:
    """`rayStartParams` declaring an accelerator Ray does not recognise (KubeRay derives
    `--num-gpus` only for `*gpu` and plain MIG limits, pod.go:1023-1070): `num-gpus` for an
    NVIDIA MIG profile it misses, else a custom Ray resource, as KubeRay itself writes one."""
    route = target.route
    wanted = ray_resource_name(target.profile, target.card, route.resource)
    if wanted is None:
        return {}
    if wanted == "":
        raise ContextError(
            f"Ray does not recognise '{route.resource}' and hetgitops knows no Ray resource "
            f"name for vendor '{target.card.vendor}'; set spec.ray.resourceName"
        )
    if wanted == "GPU":
        return {"num-gpus": str(route.per_pod)}
    return {"resources": f"'{{\"{wanted}\": {route.per_pod}}}'"}


def _ray_pod(pod: dict[str, Any], name: str, container: str) -> dict[str, Any]:
    labels = dict(pod["labels"], **{NAME_LABEL: name})
    return dict(pod, labels=dict(sorted(labels.items())), container=container, restart_policy="")


def _worker(policy: Policy, target: JobTarget, group: GroupTarget, queue: str) -> dict[str, Any]:
    """A worker group's pod: its card type's selector, tolerations, image and accelerators;
    no probes of ours (KubeRay adds its own health probes to a Ray container without one,
    pod.go:521)."""
    one = _group_target(target, group)
    pod = _ray_pod(_pod(policy, one, queue, leader=False), _name(target), "ray-worker")
    autoscaling = bool(target.profile.ray and target.profile.ray.autoscaling)
    return dict(
        pod,
        group_name=group.name,
        replicas=group.replicas,
        min_replicas=0 if autoscaling else group.replicas,
        max_replicas=group.replicas,
        ports=[],
        ray_start_params=_start_params(one),
        liveness_probe=None,
        readiness_probe=None,
    )


def _head(policy: Policy, target: JobTarget, queue: str) -> dict[str, Any]:
    """The CPU-only head, placed in `head_pool` (the first group's pool unless the profile
    names one) with that pool's selector and tolerations: Kueue gives the head pod set the
    first flavor whose node labels its selector matches, and only that pool's nodes take it."""
    profile, pool = target.profile, target.head_pool or target.route.pool
    first = _group_target(target, target.groups[0])
    pod = _ray_pod(_pod(policy, first, queue, leader=True), _name(target), "ray-head")
    labels = pool_node_labels(policy, pool)
    keys = (f"{domain(policy)}/card-type", f"{domain(policy)}/pool")
    cpu, memory = per_card(policy, target.team, pool.name)
    ray = profile.ray
    amounts = {
        "cpu": quantities.normalize((ray.head_cpu if ray else None) or profile.cpu_per_card or cpu),
        "memory": (ray.head_memory if ray else None) or profile.memory_per_card or memory,
    }
    card_label = f"{domain(policy)}/card-type"
    pod_labels = dict(pod["labels"])
    if card_label in pod_labels and card_label in labels:
        pod_labels[card_label] = labels[card_label]
    ports = [
        {"name": "gcs-server", "containerPort": GCS_PORT},
        {"name": "dashboard", "containerPort": DASHBOARD_PORT},
        {"name": "client", "containerPort": CLIENT_PORT},
    ]
    readiness = None
    if profile.framework == "rayservice":
        ports.append({"name": "serve", "containerPort": profile.port})
        readiness = {"tcpSocket": {"port": profile.port}, "periodSeconds": 10}
    return dict(
        pod,
        labels=dict(sorted(pod_labels.items())),
        node_selector={k: labels[k] for k in keys if k in labels},
        tolerations=[toleration(t) for t in pool.taints],
        resources={"requests": dict(amounts), "limits": dict(amounts)},
        ports=ports,
        # The head takes no Ray tasks: the work belongs on the card groups.
        ray_start_params={"num-cpus": "0"},
        liveness_probe={
            "tcpSocket": {"port": GCS_PORT},
            "initialDelaySeconds": profile.probe_initial_delay,
            "periodSeconds": profile.probe_period,
            "failureThreshold": profile.probe_failure_threshold,
        },
        readiness_probe=readiness,
    )


# What Kueue assumes for KubeRay's default submitter (kueue rayjob_controller.go:252-263); as
# requests == limits, so the pod is Guaranteed like every other pod of the templates.
SUBMITTER_RESOURCES = {"cpu": "500m", "memory": "512Mi"}


def _submitter(head: dict[str, Any]) -> dict[str, Any]:
    """The K8sJobMode submitter pod beside the head (same pool, selector and tolerations), so
    Kueue's `submitter` pod set takes the head's flavor instead of the first one its lack of
    tolerations allows; KubeRay fills in the `ray job submit` command (rayjob_controller.go:
    607-620)."""
    amounts = dict(SUBMITTER_RESOURCES)
    gangless = {
        k: v for k, v in head["annotations"].items() if k not in (KOORD_GANG, KOORD_GANG_MIN)
    }
    return dict(
        head,
        annotations=gangless,
        container="ray-job-submitter",
        env=[],
        ports=[],
        resources={"requests": dict(amounts), "limits": dict(amounts)},
        restart_policy="Never",
        liveness_probe=None,
        readiness_probe=None,
    )


def _name(target: JobTarget) -> str:
    return ray_name(target.profile, None if target.mixed else target.card.name)


def _check(target: JobTarget) -> None:
    name, framework = _name(target), target.profile.framework
    if len(name) > MAX_NAME[framework]:
        raise ContextError(
            f"the {framework} name '{name}' has {len(name)} characters; KubeRay accepts at "
            f"most {MAX_NAME[framework]}"
        )
    if target.scheduler == VOLCANO:
        pools = {r.pool.name for g in target.groups for r in g.routes}
        pools.add((target.head_pool or target.route.pool).name)
        if len(pools) > 1:
            raise ContextError(
                "Volcano queues a Ray cluster in one leaf queue, bound to one pool; worker "
                f"groups on pools {', '.join(sorted(pools))} need Kueue"
            )
    if target.profile.framework == "rayjob" and not target.profile.command:
        raise ContextError("a RayJob needs spec.command (its entrypoint)")


def ray_values(policy: Policy, target: JobTarget, queue: str) -> dict[str, Any]:
    """The `ray` key of the context; raises ContextError when KubeRay would refuse the job."""
    _check(target)
    profile, ray = target.profile, target.profile.ray
    head = _head(policy, target, queue)
    groups = [_worker(policy, target, g, queue) for g in target.groups]
    if target.scheduler == KOORDINATOR:
        head, groups = _koordinator(target, head, groups)
    return {
        "name": _name(target),
        "autoscaling": bool(ray and ray.autoscaling),
        "submitter": submitter(profile),
        "submission_mode": ray.submission_mode if ray else "K8sJobMode",
        "entrypoint": shlex.join(profile.command),
        "serve_config": (ray.serve_config if ray else None) or "",
        "head": head,
        "submitter_pod": _submitter(head) if submitter(profile) else None,
        "groups": groups,
    }


def _koordinator(
    target: JobTarget, head: dict[str, Any], groups: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Under koord-scheduler each pod counts against the leaf quota of its own pool (a worker
    group on another card type than the head is another pool's leaf; the quota webhook binds a
    pod to the quota its label names, pod_check.go:55-58), and the Ray cluster is one gang:
    the head and every worker, so no group starts without the others (coscheduling.go:28-33).
    The K8sJobMode submitter is created only once the cluster is ready, so it is no member."""
    team = target.team.name
    head_pool = (target.head_pool or target.route.pool).name
    members = 1 + sum(int(g["min_replicas"]) for g in groups)
    gang = {KOORD_GANG: _name(target), KOORD_GANG_MIN: str(members)} if members > 1 else {}

    def placed(pod: dict[str, Any], pool: str) -> dict[str, Any]:
        labels = dict(pod["labels"], **{KOORD_QUOTA: leaf_quota_name(team, pool)})
        return dict(pod, labels=dict(sorted(labels.items())), annotations=dict(gang))

    pools = [g.routes[0].pool.name for g in target.groups]
    return placed(head, head_pool), [placed(g, p) for g, p in zip(groups, pools, strict=True)]
