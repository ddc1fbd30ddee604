"""Check stage, jobs family: settings outside the policy that a profile's job template depends
on. `validate` (the CI gate) reports them, so a render step (`jobs`) never warns about
something the gate passed in silence."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import note, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy, WorkloadProfile
from hetgitops.plan.job_targets import KUEUE, VOLCANO, Selector, scheduler

RULE = "job-integration"
# Kueue 0.19 dropped the training-operator v1 kinds from its default integrations (#12606).
PYTORCHJOB_DEFAULT_OFF = (0, 19)
# A profile framework's name in Kueue's Configuration integrations.frameworks.
KUEUE_INTEGRATION = {
    "job": "batch/job",
    "jobset": "jobset.x-k8s.io/jobset",
    "pytorchjob": "kubeflow.org/pytorchjob",
    "deployment": "deployment",
    "leaderworkerset": "leaderworkerset.x-k8s.io/leaderworkerset",
    "rayjob": "ray.io/rayjob",
    "raycluster": "ray.io/raycluster",
    "rayservice": "ray.io/rayservice",
}


@rule(RULE, Severity.WARNING)
def job_integration(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A profile's job depends on a scheduler setting the policy does not show: a Kueue
    integration, the volcano target, a level of the Fleet's topology.

    `jobs` renders the template all the same; the job would then be ignored by Kueue, name a
    Volcano queue nobody renders, or lose its topology wish.
    Fails: `framework: pytorchjob` with Kueue 0.19 (PyTorchJob is no default integration
    there); `framework: jobset` when the Fleet's `spec.kueue.configuration.integrations` (the
    cluster's Kueue Configuration, as import read it) lacks `jobset.x-k8s.io/jobset`;
    `topology: {preferred: rack}` when the Fleet's topology has no level `rack`.
    Passes: `framework: jobset`; `preferred: rack` with `levels: [zone, rack, hostname]`.
    Fix: enable the integration or target in the Fleet (or Kueue's Configuration), pick
    another framework, or name a level the topology has.
    """
    if policy.fleet is None:
        return
    for profile in policy.profiles.values():
        chosen = scheduler(policy.fleet, profile)
        yield from _integration(policy, profile, chosen)
        yield from _topology(policy, profile, chosen)


def _integration(policy: Policy, profile: WorkloadProfile, chosen: str) -> Iterator[Diagnostic]:
    fleet = policy.fleet
    assert fleet is not None
    kueue = fleet.kueue or (0,)
    integration = KUEUE_INTEGRATION.get(profile.framework)
    if chosen == KUEUE and integration and fleet.kueue_integrations is not None:
        if integration not in fleet.kueue_integrations:
            yield warning_at(
                RULE,
                f"the cluster's Kueue Configuration does not enable `{integration}` (the "
                "Fleet's spec.kueue.configuration.integrations): Kueue ignores this job",
                profile.origin,
                "spec",
                "framework",
                hint=f"add {integration} to Kueue's integrations.frameworks (and to the "
                "Fleet's list), or use a framework it enables",
            )
    elif chosen == KUEUE and profile.framework == "pytorchjob" and kueue >= PYTORCHJOB_DEFAULT_OFF:
        yield warning_at(
            RULE,
            "Kueue >= 0.19 ignores PyTorchJob unless `kubeflow.org/pytorchjob` is added to its "
            "Configuration's integrations.frameworks",
            profile.origin,
            "spec",
            "framework",
            hint="enable the integration, or use framework jobset or job",
        )
    if chosen == VOLCANO and VOLCANO not in fleet.targets:
        yield warning_at(
            RULE,
            "the job names a Volcano queue, but the Fleet does not render the volcano target",
            profile.origin,
            "spec",
            "framework",
            hint="add volcano to the Fleet's spec.targets",
        )


def _topology(policy: Policy, profile: WorkloadProfile, chosen: str) -> Iterator[Diagnostic]:
    """Topology wishes the job cannot carry: Kueue needs the level in the Fleet's Topology;
    Volcano would need HyperNodes, which hetgitops does not render (yet)."""
    fleet = policy.fleet
    assert fleet is not None
    levels = (("preferred", profile.topology_preferred), ("required", profile.topology_required))
    for field, level in levels:
        if level is None:
            continue
        if chosen == KUEUE and fleet.topology_name and level in fleet.topology_levels:
            continue
        if chosen != KUEUE:
            why = "is honoured only through Kueue's Topology-Aware Scheduling"
            hint = "drop the topology wish, or queue the job through Kueue"
        elif fleet.topology_name:
            why = "is not a level of the Fleet's topology"
            hint = "name one of its levels: " + ", ".join(fleet.topology_levels)
        else:
            why = "needs a Fleet topology (spec.topology)"
            hint = "add spec.topology to the Fleet, or drop the topology wish"
        yield warning_at(
            RULE,
            f"topology level '{level}' {why}; the job template ignores it",
            profile.origin,
            "spec",
            "topology",
            field,
            hint=hint,
        )


SHARED = "kueue-volcano-share-pool"


@rule(SHARED, Severity.WARNING)
def kueue_volcano_share_pool(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A pool gets job templates from both Kueue (topology-aware) and Volcano.

    With a Fleet topology every Kueue flavor is topology-bound: Kueue's Topology-Aware
    Scheduling and Volcano then place pods on the same nodes, each blind to what the other is
    about to bind.

    Kueue v0.19.2 picks a node for every pod of a workload at admission, from its TAS cache,
    and the topology ungater pins the pod there with a nodeSelector
    (pkg/controller/tas/topology_ungater.go:312-315); pods of other schedulers count in that
    cache only once they carry `spec.nodeName` (belongsToNonTASCache,
    pkg/controller/tas/non_tas_usage_controller.go:133-146). Volcano v1.15.1 counts a pod on a
    node only once it is bound as well (SchedulerCache.addTask,
    pkg/scheduler/cache/event_handlers.go:229-244). A Volcano gang bound in the moment between
    Kueue's admission and its pods' binding takes the cards Kueue promised: the pinned pods stay
    Pending ("Insufficient nvidia.com/gpu") with their quota held, and Kueue never moves them
    (found on the busy simulated fleet, issue 19). A race, not a certainty, and the render is
    valid: a warning.

    Fails: `framework: volcano-job` and a `framework: job` profile both routed to pool
    `ascend-910b` with `spec.topology` in the Fleet.
    Passes: each pool reached by one scheduler only; or no Fleet topology (Kueue then leaves
    node choice to kube-scheduler, which sees Volcano's bindings).
    Fix: give the pool to one scheduler (narrow the other profile's `requirements.cardTypes` or
    `vendors`, or make the Volcano job a Kueue job), or split the pool's nodes into two pools,
    one per scheduler.
    """
    fleet = policy.fleet
    if fleet is None or not fleet.topology_name:
        return
    if KUEUE not in fleet.targets or VOLCANO not in fleet.targets:
        return
    selector = Selector(policy)
    by_pool: dict[str, dict[str, dict[str, WorkloadProfile]]] = {}
    for profile in policy.profiles.values():
        for target in selector.targets(profile, None):
            for route in target.routes:
                users = by_pool.setdefault(route.pool.name, {KUEUE: {}, VOLCANO: {}})
                users.setdefault(target.scheduler, {})[profile.name] = profile
    for name, users in sorted(by_pool.items()):
        kueue, volcano = users.get(KUEUE, {}), users.get(VOLCANO, {})
        if not kueue or not volcano:
            continue
        pool = policy.pools[name]
        related = [
            *(
                note(
                    f"profile '{p.name}' queues its Volcano Job in the Volcano queues of pool "
                    f"'{name}' (bound by the Volcano scheduler)",
                    p.origin,
                    "spec",
                    "framework",
                )
                for _, p in sorted(volcano.items())
            ),
            *(
                note(
                    f"profile '{p.name}' is admitted by Kueue on the topology-bound flavor of "
                    f"pool '{name}' (node chosen by Kueue at admission)",
                    p.origin,
                    "spec",
                    "framework",
                )
                for _, p in sorted(kueue.items())
            ),
            note(
                "the Fleet's topology makes every Kueue flavor topology-bound",
                fleet.origin,
                "spec",
                "topology",
            ),
        ]
        yield warning_at(
            SHARED,
            f"pool '{name}' is scheduled by both Kueue (topology-aware: profile(s) "
            f"{', '.join(sorted(kueue))}) and Volcano (profile(s) {', '.join(sorted(volcano))}): "
            "Kueue pins each admitted pod to a node from the usage it sees at admission, so a "
            "Volcano gang bound there a moment later leaves Kueue-admitted pods Pending for good "
            "with their quota held",
            pool.origin,
            "metadata",
            "name",
            hint=(
                f"give pool '{name}' to one scheduler (narrow the other profiles' "
                "requirements.cardTypes or vendors so they route elsewhere, or make the Volcano "
                "job a Kueue job), or split its nodes into two pools, one per scheduler"
            ),
            related=related,
        )
