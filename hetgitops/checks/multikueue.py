"""Check stage, multikueue family: what would deactivate or starve the manager's queues.

Kueue deactivates a manager ClusterQueue for three admission-check combinations
(`pkg/cache/scheduler/clusterqueue.go`, Kueue v0.19.2), refuses a MultiKueueConfig with more
than 20 clusters, and dispatches only the job kinds it has a MultiKueue adapter for."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, note, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity, listing
from hetgitops.model import quantities
from hetgitops.model.policy import STANDALONE, Policy
from hetgitops.plan import routing
from hetgitops.plan.clusters import managers, team_workers, worker_sums

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
PROVISIONING = "kueue.x-k8s.io/provisioning-request"
MAX_CLUSTERS = 20  # MultiKueueConfig spec.clusters maxItems (v1beta2 CRD)
# Profile frameworks no MultiKueue adapter dispatches (Kueue v0.19.2
# pkg/controller/jobs/**/*_multikueue_adapter.go): they would wait on the manager forever.
UNDISPATCHABLE = {"volcano-job": "Volcano jobs have no Kueue integration"}


@rule("multikueue-check-conflict", Severity.ERROR)
def multikueue_check_conflict(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """The manager's extra admission checks leave its ClusterQueues active.

    hetgitops puts one MultiKueue check on every manager ClusterQueue. Kueue deactivates the
    queue (nothing is admitted or dispatched) when it carries a second MultiKueue check
    (`MultipleMultiKueueAdmissionChecks`), a MultiKueue check on some flavors only
    (`MultiKueueAdmissionCheckAppliedPerFlavor`), or a ProvisioningRequest check beside it
    (`MultiKueueWithProvisioningRequest`).
    Fails: `admissionChecks: [{name: prov, controllerName: kueue.x-k8s.io/provisioning-request}]`
    on the manager.
    Passes: a check of another controller, on every flavor.
    Fix: delete the check from the manager's `admissionChecks`: a ProvisioningRequest check belongs
    on the workers' queues, not the manager's; hetgitops adds the one MultiKueue check itself, and
    any other check must apply to every flavor.
    """
    for manager in managers(policy):
        for index, check in enumerate(manager.admission_checks):
            reason = _deactivates(check.controller_name, bool(check.on_flavors))
            if reason:
                yield error_at(
                    "multikueue-check-conflict",
                    f"admission check '{check.name}' on manager '{manager.name}' deactivates "
                    f"every manager ClusterQueue ({reason}): no job is admitted or dispatched",
                    manager.origin,
                    "spec",
                    "admissionChecks",
                    index,
                    "controllerName",
                    hint="drop the check from the manager (a ProvisioningRequest check belongs "
                    "on the workers' queues; hetgitops adds the MultiKueue check itself)",
                )


def _deactivates(controller: str, per_flavor: bool) -> str:
    if controller == MULTIKUEUE:
        return (
            "MultiKueueAdmissionCheckAppliedPerFlavor"
            if per_flavor
            else "MultipleMultiKueueAdmissionChecks"
        )
    if controller == PROVISIONING:
        return "MultiKueueWithProvisioningRequest"
    return ""


@rule("multikueue-cluster-count", Severity.ERROR)
def multikueue_cluster_count(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team's jobs are dispatched to at most 20 workers.

    A team's MultiKueueConfig lists the workers holding quota for it; Kueue's CRD allows 1 to
    20 clusters, so the manager would refuse the config and the team's queue would stay
    without a usable check.
    Fails: a team with quota on pools of 21 worker clusters.
    Passes: quota on 20 workers or fewer.
    Fix: split the team into teams of at most 20 workers each, or remove the team's quota on the
    least preferred workers (the hint lists the dispatch order).
    """
    if not managers(policy):
        return
    for team in policy.teams.values():
        found = team_workers(policy, team)
        if len(found) > MAX_CLUSTERS:
            yield error_at(
                "multikueue-cluster-count",
                f"team '{team.name}' holds quota on {len(found)} worker clusters; a "
                f"MultiKueueConfig lists at most {MAX_CLUSTERS}",
                team.origin,
                "spec",
                "quotas",
                key=True,
                hint="split the team, or drop its quota on the least preferred workers "
                f"(dispatch order: {listing([w.name for w in found])})",
            )


@rule("multikueue-job-kind", Severity.ERROR)
def multikueue_job_kind(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A profile whose job kind MultiKueue cannot dispatch runs on a standalone cluster.

    Under a manager, users submit to the manager's queues and MultiKueue copies each admitted
    job to a worker, but only job kinds with a MultiKueue adapter: Volcano jobs (and Spark
    applications) have none and would wait on the manager, which has no nodes, forever.
    Fails: `framework: volcano-job` when every eligible pool is on a worker cluster.
    Passes: `framework: jobset`, or an eligible pool on a standalone cluster.
    Fix: change the profile's `framework` to one MultiKueue dispatches (job, jobset, pytorchjob,
    leaderworkerset, deployment), or give it an eligible pool on a standalone cluster, whose own
    queues run the job without dispatch.
    """
    if not managers(policy):
        return
    router = routing.router(policy)
    for profile in policy.profiles.values():
        why = UNDISPATCHABLE.get(profile.framework)
        routes = router.routes(profile)
        if why is None or not routes:
            continue
        if any(_cluster_role(policy, r.pool.cluster) == STANDALONE for r in routes):
            continue
        yield error_at(
            "multikueue-job-kind",
            f"profile '{profile.name}' is a {profile.framework}, which MultiKueue cannot "
            f"dispatch ({why}); its eligible pools are all on workers, so its jobs would wait "
            "on the manager forever",
            profile.origin,
            "spec",
            "framework",
            hint="use a dispatchable framework (job, jobset, pytorchjob, leaderworkerset, "
            "deployment), or give it a pool on a standalone cluster",
        )


def _cluster_role(policy: Policy, name: str | None) -> str | None:
    cluster = policy.clusters.get(name) if name else None
    return cluster.role if cluster else None


@rule("multikueue-quota-mismatch", Severity.WARNING)
def multikueue_quota_mismatch(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team's manager quota (`managerQuota`) equals what its worker queues hold together.

    The manager's quota gates dispatch; the workers' quotas decide what runs. Above the sum,
    the manager admits jobs bigger than the workers together hold: such a job waits on the
    workers forever (Kueue never gives it up), holding manager quota, and only the worker's
    copy says why (the manager's check stays Pending with no message). Below it, worker quota
    the manager never dispatches stays idle.
    Fails: `managerQuota: {nvidia.com/gpu: 12}` when the team holds 16 cards on its workers.
    Passes: no `managerQuota` (hetgitops writes the sum), or the sum itself.
    Fix: delete `managerQuota` so hetgitops writes the sum of the team's worker quotas, or change
    the worker quotas (or `managerQuota`) so the two agree.
    """
    if not managers(policy):
        return
    for team in policy.teams.values():
        if not team.manager_quota:
            continue
        sums = worker_sums(policy, team)
        for resource, amount in team.manager_quota.items():
            held = sums.get(resource, "0")
            set_to, total = quantities.value_of(amount), quantities.value_of(held)
            if set_to == total:
                continue
            if set_to > total:
                effect = (
                    f"the manager admits a job needing more than {held}, which no worker can "
                    "ever run: it waits on the workers forever, holding manager quota, and "
                    "only the worker's copy says why"
                )
            else:
                gap = quantities.canonical(total - set_to, quantities.parse(held)[1])
                effect = f"{gap} {resource} of worker quota is never dispatched, idle"
            yield warning_at(
                "multikueue-quota-mismatch",
                f"team '{team.name}' manager quota {resource} {amount} is "
                f"{'above' if set_to > total else 'below'} what its workers hold ({held}): "
                f"{effect}",
                team.origin,
                "spec",
                "managerQuota",
                resource,
                hint="drop the entry to let hetgitops write the workers' sum",
                related=[note(f"{team.name}'s worker quotas", team.origin, "spec", "quotas")],
            )
