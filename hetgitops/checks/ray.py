"""Check stage, ray family: what KubeRay v1.6.2 or Kueue v0.19.2 would refuse later about a
Ray profile (RayJob, RayCluster, RayService), said at the policy line. Facts: plan/ray.py."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hetgitops.checks._common import error_at, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy, WorkloadProfile
from hetgitops.plan import routing
from hetgitops.plan.job_targets import KUEUE, VOLCANO, scheduler
from hetgitops.plan.quota_plan import team_plan
from hetgitops.plan.ray import (
    ELASTIC_DEFAULT_ON,
    MAX_NAME,
    MAX_POD_SETS,
    is_ray,
    pod_set_count,
    ray_name,
    ray_resource_name,
    submitter,
)

# KubeRay validates RayCluster/RayJob/RayService names as DNS-1035 labels (validation.go:382).
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _ray_profiles(policy: Policy) -> Iterator[WorkloadProfile]:
    return (p for p in policy.profiles.values() if is_ray(p))


def _groups(profile: WorkloadProfile) -> int:
    return len(profile.ray.groups) if profile.ray and profile.ray.groups else 1


@rule("ray-pod-sets", Severity.ERROR)
def ray_pod_sets(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A Ray profile makes more Kueue pod sets than a Workload holds (18).

    Kueue gives the head, every worker group and a K8sJobMode RayJob's submitter a pod set
    each (kueue pkg/controller/jobs/raycluster/common.go:76-128, rayjob_controller.go:288-310);
    a Workload holds at most 18 (jobframework/constants.go:21, workload_types.go:36). The
    webhook counts only head + groups (common.go:187, :314), so a RayJob with 17 groups and a
    submitter passes it and then fails when Kueue creates its Workload.
    Fails: a `rayjob` with 17 `ray.workerGroups` (K8sJobMode).
    Passes: 16 groups in a RayJob; 17 in a RayCluster.
    Fix: merge worker groups, or use submissionMode HTTPMode (no submitter pod set).
    """
    for profile in _ray_profiles(policy):
        groups = _groups(profile)
        count = pod_set_count(profile, groups)
        if count <= MAX_POD_SETS:
            continue
        extra = " and a submitter" if submitter(profile) else ""
        late = (
            " (Kueue's webhook does not count the submitter, so the job is accepted and its "
            "Workload is refused later)"
            if submitter(profile) and count == MAX_POD_SETS + 1
            else ""
        )
        yield error_at(
            "ray-pod-sets",
            f"profile '{profile.name}' makes {count} Kueue pod sets (head, {groups} worker "
            f"groups{extra}); a Workload holds at most {MAX_POD_SETS}{late}",
            profile.origin,
            "spec",
            "ray",
            "workerGroups",
            key=True,
            hint="merge worker groups, or use submissionMode HTTPMode (no submitter pod set)",
        )


@rule("ray-accelerator-invisible", Severity.ERROR)
def ray_accelerator_invisible(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A Ray profile routes to an accelerator Ray cannot see and no Ray resource name for it.

    KubeRay turns only limits named `*gpu` or `nvidia.com/mig-<n>g.<m>gb` into `--num-gpus`,
    and only Neuron cores and TPUs into custom resources (ray-operator
    controllers/ray/utils/resources.go:8-17, common/pod.go:46-49, :1023-1070). The templates
    declare the others: NVIDIA MIG profiles such as `1g.10gb+me` and Intel GPUs as GPUs, Ascend
    as `NPU`, Gaudi as `HPU`; for other vendors (Cambricon MLU, ...) the profile must name
    one, or Ray tasks asking for the accelerator never schedule.
    Fails: `framework: rayjob` routed to a `cambricon.com/mlu` card without `ray.resourceName`.
    Passes: the same with `ray: {resourceName: MLU}`; any `nvidia.com/gpu` card.
    Fix: set `spec.ray.resourceName` to the Ray resource your tasks request.
    """
    router = routing.router(policy)
    for profile in _ray_profiles(policy):
        seen: set[str] = set()
        for route in router.routes(profile):
            if route.card.name in seen:
                continue
            seen.add(route.card.name)
            if ray_resource_name(profile, route.card, route.resource) != "":
                continue
            yield error_at(
                "ray-accelerator-invisible",
                f"profile '{profile.name}' routes to '{route.resource}' (card type "
                f"'{route.card.name}'), which Ray does not recognise, and names no Ray "
                "resource for it: Ray tasks asking for the accelerator would never schedule",
                profile.origin,
                "spec",
                "framework",
                hint="set spec.ray.resourceName to the Ray resource your tasks request",
            )


@rule("ray-name-too-long", Severity.ERROR)
def ray_name_too_long(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A Ray object's name is longer than KubeRay accepts, or not a DNS-1035 label.

    KubeRay refuses RayClusters over 53 characters and RayJobs and RayServices over 47 (they
    create a RayCluster named `<name>-<5 random>`): ray-operator controllers/ray/utils
    constant.go:296-305, validation.go:32, :280, :379. The name is `<profile>-<card type>`, or
    `<profile>` for heterogeneous worker groups, and must start with a letter.
    Fails: a `rayjob` profile 'distributed-reinforcement-learning' on card type 'a800-80gb'
    (44 characters + 10 = 54).
    Passes: 'ray-rlhf' on 'a800-80gb' (18).
    Fix: shorten the profile name (or the card type's).
    """
    router = routing.router(policy)
    for profile in _ray_profiles(policy):
        if profile.ray and profile.ray.groups:
            names = [ray_name(profile, None)]
        else:
            cards = dict.fromkeys(r.card.name for r in router.routes(profile))
            names = [ray_name(profile, card) for card in cards]
        limit = MAX_NAME[profile.framework]
        for name in names:
            if len(name) <= limit and _DNS_1035.match(name):
                continue
            why = (
                f"has {len(name)} characters; KubeRay accepts at most {limit}"
                if len(name) > limit
                else "is not a DNS-1035 label (it must start with a letter)"
            )
            yield error_at(
                "ray-name-too-long",
                f"the {profile.framework} '{name}' of profile '{profile.name}' {why}",
                profile.origin,
                "metadata",
                "name",
                hint=f"shorten the profile name to at most {limit - len(name) + len(profile.name)} "
                "characters",
            )


@rule("ray-autoscaling-without-slicing", Severity.ERROR)
def ray_autoscaling(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A Kueue-admitted Ray profile autoscales without Kueue's elastic workload slicing.

    Kueue's webhook refuses `enableInTreeAutoscaling` unless the object carries
    `kueue.x-k8s.io/elastic-job: "true"` and the ElasticJobsViaWorkloadSlices gate is on
    (kueue pkg/controller/jobs/raycluster/common.go:301-311, workloadslicing.go:62-67; the gate
    is on by default from Kueue 0.18, features/kube_features.go:712-715).
    Fails: `ray: {autoscaling: true}`; `ray: {autoscaling: true, elasticSlicing: true}` with
    Kueue 0.17.
    Passes: `ray: {autoscaling: true, elasticSlicing: true}` with Kueue 0.19.
    Fix: set `spec.ray.elasticSlicing: true` (on Kueue >= 0.18), or drop autoscaling.
    """
    for profile in _ray_profiles(policy):
        ray = profile.ray
        if ray is None or not ray.autoscaling or scheduler(policy.fleet, profile) != KUEUE:
            continue
        kueue = (policy.fleet.kueue if policy.fleet else None) or ELASTIC_DEFAULT_ON
        if ray.elastic and kueue >= ELASTIC_DEFAULT_ON:
            continue
        why = (
            "without elastic workload slicing (spec.ray.elasticSlicing)"
            if not ray.elastic
            else f"on Kueue {'.'.join(map(str, kueue))}, where elastic workload slicing is "
            "off by default (ElasticJobsViaWorkloadSlices is on from 0.18)"
        )
        yield error_at(
            "ray-autoscaling-without-slicing",
            f"profile '{profile.name}' autoscales {why}: Kueue's webhook refuses the job",
            profile.origin,
            "spec",
            "ray",
            "autoscaling",
            hint="set spec.ray.elasticSlicing: true (Kueue >= 0.18), or drop autoscaling",
        )


@rule("ray-volcano-mixed", Severity.WARNING)
def ray_volcano_mixed(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A heterogeneous Ray profile goes to Volcano, which queues it in one pool's queue.

    KubeRay's Volcano integration makes one PodGroup in the queue named by the object's
    `volcano.sh/queue-name` label (ray-operator batchscheduler/volcano/volcano_scheduler.go:
    253-258); hetgitops' Volcano leaf queues are per team and pool, so worker groups on two
    card types cannot share one. `jobs` renders no template for it.
    Fails: `ray.workerGroups` on two card types in a fleet whose targets have volcano, not kueue.
    Passes: the same with Kueue, which gives each group its own flavor.
    Fix: render Kueue for the fleet, or use one card type (no `workerGroups`).
    """
    for profile in _ray_profiles(policy):
        if not (profile.ray and len({g.card_type for g in profile.ray.groups}) > 1):
            continue
        if scheduler(policy.fleet, profile) != VOLCANO:
            continue
        yield warning_at(
            "ray-volcano-mixed",
            f"profile '{profile.name}' has worker groups on several card types, but its jobs "
            "go to Volcano, which queues a Ray cluster in one pool's queue: no template renders",
            profile.origin,
            "spec",
            "ray",
            "workerGroups",
            key=True,
            hint="render Kueue for the fleet, or use one card type (no workerGroups)",
        )


@rule("ray-head-pool", Severity.ERROR)
def ray_head_pool(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A Ray profile's `spec.ray.head.pool` names no Pool, or one a team that gets its
    template holds no quota in.

    Kueue gives the head pod set a flavor only among the team's ClusterQueue's, and the head's
    selector names the pool: a pool outside them leaves the head (and the whole Ray cluster,
    admitted all at once) pending with NoMatchingFlavor. `jobs` puts such a team's head in the
    first worker group's pool instead, which is not what the profile says.
    Fails: `ray: {head: {pool: cpu-pool}}` when team `ml` gets the template but holds no quota
    in `cpu-pool`.
    Passes: a head pool every such team holds quota in; no `head.pool` (the workers' pool).
    Fix: name a pool those teams hold quota in, give them quota there, or drop `head.pool`.
    """
    router = routing.router(policy)
    for profile in _ray_profiles(policy):
        stated = profile.ray.head_pool if profile.ray else None
        if stated is None:
            continue
        if stated not in policy.pools:
            yield error_at(
                "ray-head-pool",
                f"profile '{profile.name}' places its Ray head in pool '{stated}', which is not "
                "defined",
                profile.origin,
                "spec",
                "ray",
                "head",
                "pool",
                hint="name a defined Pool, or drop head.pool (the workers' pool)",
            )
            continue
        used = {r.pool.name for r in router.routes(profile)}
        missing = []
        for _, team in routing.candidate_teams(policy, profile):
            held = {plan.pool.name for plan in team_plan(policy, team)}
            if held & used and stated not in held:
                missing.append(team.name)
        if missing:
            yield error_at(
                "ray-head-pool",
                f"profile '{profile.name}' places its Ray head in pool '{stated}', where team(s) "
                f"{', '.join(sorted(missing))} hold no quota: Kueue has no flavor there for "
                "their head, so `jobs` puts it in the first worker group's pool",
                profile.origin,
                "spec",
                "ray",
                "head",
                "pool",
                hint="give those teams quota in the pool, name another pool, or drop head.pool",
            )
