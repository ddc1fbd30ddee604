"""Check stage, namespaces family: what the team Namespaces the core target writes say to the
queues that admit from them: their labels against the ClusterQueue's namespaceSelector
(`plan.namespace_labels`) and their ResourceQuota's caps against the queue's reach
(`plan.namespace_quota`)."""

from __future__ import annotations

from collections.abc import Iterator

from hetgitops.checks._common import error_at, in_file_order, warning_at
from hetgitops.checks.registry import CheckContext, rule
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy
from hetgitops.plan import namespace_labels as plan
from hetgitops.plan import namespace_quota


@rule("namespace-selector-misses", Severity.ERROR)
def namespace_selector_misses(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team's ClusterQueue selects the team's own Namespaces: Kueue admits a workload only
    from a namespace whose labels the queue's namespaceSelector matches (kueue v0.19.2
    pkg/workload/resources.go:244-246); the workloads of any other stay pending
    ("workload namespace doesn't match ClusterQueue selector").

    Fails: `kueue: {namespaceSelector: {matchLabels: {team: ads}}}` with no `namespaceLabels`
    (the core target labels the namespaces `hetgitops.io/team: ads` only).
    Passes: the same with `namespaceLabels: {team: ads}`; no `spec.kueue.namespaceSelector`
    (the queue selects the label the core target writes).
    Fix: add the labels the selector matches to `spec.namespaceLabels`, or change the selector.
    """
    fleet = policy.fleet
    if fleet is None or not {"core", "kueue"} <= set(fleet.targets):
        return
    for team in in_file_order(policy.teams.values()):
        if plan.admits_from(fleet, team):
            continue
        selector = plan.queue_selector(fleet, team)
        labels = plan.namespace_labels(fleet, team)
        needed = plan.missing(selector, labels)
        said = ", ".join(f"{k}={v}" for k, v in labels.items())
        hint = (
            "add to spec.namespaceLabels: " + ", ".join(f"{k}: {v}" for k, v in needed.items())
            if needed
            else "give spec.namespaceLabels labels the selector's matchExpressions match"
        )
        path: tuple[str, ...] = ("spec",)
        if team.namespace_selector:
            path = ("spec", "kueue", "namespaceSelector")
        elif team.namespace_labels:
            path = ("spec", "namespaceLabels")
        yield error_at(
            "namespace-selector-misses",
            f"team '{team.name}': its ClusterQueue's namespaceSelector does not select its "
            f"namespaces ({', '.join(team.namespaces)}, labelled {said}): Kueue admits no "
            "new workload from them (on a running cluster, workloads it admitted keep running "
            "and new ones stay pending)",
            team.origin,
            *path,
            hint=hint,
        )


@rule("namespace-quota-below-reach", Severity.WARNING)
def namespace_quota_below_reach(policy: Policy, ctx: CheckContext) -> Iterator[Diagnostic]:
    """A team's namespace quota caps an accelerator below what its Kueue queue admits: Kueue
    admits the job on its own quota, then the API server's quota admission refuses the pods
    past the cap ("exceeded quota"), so the admitted job holds queue quota it cannot use.

    Fails: `namespaceQuota: {accelerators: {nvidia.com/gpu: 4}}` for a team whose queue can
    admit 8 `nvidia.com/gpu` (its quota and borrowing).
    Passes: no `accelerators` (each capped at the reach); a cap at or above the reach.
    Fix: raise the cap to the reach (or leave `accelerators` out), or lower the team's quota
    and borrowing limit to the cap.
    """
    fleet = policy.fleet
    if fleet is None or "core" not in fleet.targets:
        return
    for team in in_file_order(policy.teams.values()):
        for res, (cap, most) in namespace_quota.below_reach(policy, team).items():
            yield warning_at(
                "namespace-quota-below-reach",
                f"team '{team.name}': its namespace quota caps {res} at {cap}, but its queue "
                f"admits up to {most}: Kueue admits jobs the API server then refuses pods of "
                "(exceeded quota), and they hold queue quota without running",
                team.origin,
                "spec",
                "namespaceQuota",
                "accelerators",
                res,
                hint=f"set {res} to {most} (or leave accelerators out), or lower the team's "
                f"quota and borrowingLimit for {res} to {cap}",
            )
