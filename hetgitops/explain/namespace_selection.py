"""Does the team's ClusterQueue admit from the job's namespace? Kueue's scheduler reads the
live Namespace and matches its labels against the ClusterQueue's namespaceSelector before any
flavor is tried (reason Misconfigured, "workload namespace doesn't match ClusterQueue
selector"; the sources in docs/upstream.md).

Offline, the labels judged are those the core target renders (`plan.namespace_labels`). Live
(`explain --kubeconfig`, `state.read_namespaces`), they are the Namespace's own labels: a
cluster that lags the policy is judged as Kueue judges it, and the answer says whether the fix
is a policy edit (`spec.namespaceLabels`) or a sync of what the policy already renders. A
Namespace the cluster lacks is judged by the labels its first sync gives it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hetgitops.explain import kueue_messages as say
from hetgitops.explain.answer import Explanation, Fix
from hetgitops.explain.workload import Workload
from hetgitops.model.policy import Policy, Team
from hetgitops.plan import namespace_labels as ns_labels
from hetgitops.plan.namespace_quota import owner

MISCONFIGURED = "Misconfigured"

# Namespace name -> its labels in the cluster (only the policy's namespaces the cluster has).
LiveLabels = Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class Selection:
    """One namespace judged against its team's ClusterQueue namespaceSelector."""

    namespace: str
    rendered: Mapping[str, str]  # the labels the core target writes
    live: Mapping[str, str] | None  # the Namespace's labels in the cluster; None offline
    selected: bool  # by the labels Kueue reads (live when read, else rendered)
    by_policy: bool  # by the rendered labels alone
    needed: Mapping[str, str]  # matchLabels the rendered labels lack

    @property
    def lag(self) -> dict[str, str]:
        """The rendered labels the live Namespace lacks or holds with another value (labels
        the cluster adds of its own, such as kubernetes.io/metadata.name, are not a lag)."""
        if self.live is None:
            return {}
        return {k: v for k, v in self.rendered.items() if self.live.get(k) != v}


def _pairs(labels: Mapping[str, str], sep: str = "=") -> str:
    return ", ".join(f"{k}{sep}{v}" for k, v in sorted(labels.items())) or "nothing"


def selection(
    policy: Policy, workload: Workload, team: Team, live: LiveLabels | None = None
) -> Selection | None:
    """The judgement, or None where explain does not judge: no core target (the policy writes
    no labels), a namespace of another team or none."""
    fleet = policy.fleet
    namespace = workload.namespace
    if fleet is None or "core" not in fleet.targets or namespace not in team.namespaces:
        return None
    if owner(policy, namespace) is not team:
        return None
    selector = ns_labels.queue_selector(fleet, team)
    rendered = ns_labels.namespace_labels(fleet, team)
    labels = live.get(namespace) if live is not None else None
    by_policy = ns_labels.selects(selector, rendered)
    return Selection(
        namespace,
        rendered,
        labels,
        ns_labels.selects(selector, labels) if labels is not None else by_policy,
        by_policy,
        ns_labels.missing(selector, rendered),
    )


def unselected(
    policy: Policy, workload: Workload, team: Team, live: LiveLabels | None = None
) -> Explanation | None:
    """The pending answer when the selector does not select the namespace, else None."""
    found = selection(policy, workload, team, live)
    if found is None or found.selected:
        return None
    where = " in the cluster" if found.live is not None else ""
    hint = (
        f"namespace {found.namespace} is labelled{where} {_pairs(found.live or found.rendered)}, "
        f"which team {team.name}'s ClusterQueue namespaceSelector does not select"
    )
    fixes: tuple[Fix, ...] = ()
    if found.by_policy and found.lag:
        # The policy's labels are selected: the cluster lags the render, nothing to edit.
        hint += (
            f"; the policy renders {_pairs(found.lag)} on it, which the selector selects: "
            "the cluster lags the policy, sync it (apply the render)"
        )
    elif found.by_policy:
        hint += (
            "; the policy's labels are selected: a label the cluster gave the namespace "
            "besides them keeps the selector's matchExpressions from selecting it"
        )
    else:
        if found.needed:
            hint += f": add {_pairs(found.needed, ': ')} to spec.namespaceLabels"
        fixes = (Fix(team.origin.at("spec"), hint),)
    return Explanation(
        workload,
        team.name,
        "pending",
        MISCONFIGURED,
        say.namespace_mismatch(),
        policy=(hint,),
        fixes=fixes,
    )


def selected_lines(
    policy: Policy, workload: Workload, team: Team, live: LiveLabels | None
) -> tuple[str, ...]:
    """What a selected namespace's live labels say beside the verdict: the rendered labels it
    lacks (the next sync writes them), and a selection the policy's own labels would not make
    (the cluster's labels do it; the `namespace-selector-misses` check refuses the policy)."""
    found = selection(policy, workload, team, live)
    if found is None or not found.selected or live is None:
        return ()
    if found.live is None:
        return (
            f"namespace {found.namespace} is not in the cluster: judged by the labels the "
            f"render gives it ({_pairs(found.rendered)})",
        )
    lines = []
    if found.lag:
        lines.append(
            f"namespace {found.namespace} lacks the policy's labels {_pairs(found.lag)} in the "
            "cluster: the cluster lags the policy, sync it (apply the render)"
        )
    if not found.by_policy:
        lines.append(
            f"team {team.name}'s ClusterQueue namespaceSelector selects namespace "
            f"{found.namespace} by labels the cluster gave it, not by those the policy renders "
            f"({_pairs(found.rendered)})"
            + (
                f": add {_pairs(found.needed, ': ')} to spec.namespaceLabels"
                if found.needed
                else ""
            )
        )
    return tuple(lines)
