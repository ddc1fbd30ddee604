"""Compile stage, `monitoring` target: the alerts, each with the policy's own numbers.

Thresholds come from `Fleet.spec.monitoring` (defaults in `model.policy.Monitoring`); the
numbers they compare against (committed cards, budgets, objectives) are `hetgitops-policy`
facts. Annotations use `$labels` and `printf` only, so the generated promtool tests can state
them exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring import policy_rules as p
from hetgitops.compilers.monitoring import recording as r
from hetgitops.compilers.monitoring.facts import Facts
from hetgitops.model.policy import Monitoring

HOURS_PER_MONTH = 730
CAPACITY = "HetGitOpsPoolCapacityBelowCommitment"
IDLE = "HetGitOpsGPUsAllocatedButIdle"
PENDING = "HetGitOpsPendingWhileCohortIdles"
WAIT = "HetGitOpsAdmissionWaitAboveObjective"
BUDGET = "HetGitOpsBudgetBurnAboveMonthly"
EXPIRED = "HetGitOpsTransitionPoolExpiredInUse"
MIG = "HetGitOpsMIGLayoutNotApplied"
CQ_STATE = "HetGitOpsClusterQueueNotActive"
VOLCANO_STATE = "HetGitOpsVolcanoQueueNotOpen"


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    duration: str | None
    severity: str
    summary: str
    description: str  # Go template over $labels and $value

    def rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.duration:
            rule["for"] = self.duration
        rule["labels"] = {"severity": self.severity}
        rule["annotations"] = {"summary": self.summary, "description": self.description}
        return rule


def _value(fmt: str) -> str:
    return '{{ $value | printf "' + fmt + '" }}'


def capacity(m: Monitoring) -> Alert:
    live = f"({r.POOL_ALLOCATABLE} or {p.COMMITTED} * 0)"
    return Alert(
        CAPACITY,
        f"{live} < on (pool, card_type) {p.COMMITTED}",
        m.capacity_for,
        "critical",
        "Pool {{ $labels.pool }} holds fewer schedulable cards than its teams are promised",
        "Pool {{ $labels.pool }} ({{ $labels.card_type }}) has "
        + _value("%.2f")
        + " allocatable cards on schedulable nodes, below the quota committed to its teams"
        " (hetgitops:pool_committed_cards): failed, cordoned or quarantined cards.",
    )


def idle(m: Monitoring) -> Alert:
    ratio = p.number(m.idle_percent / 100)
    return Alert(
        IDLE,
        f"({r.TEAM_UTILISATION} < {ratio}) and on (team, pool) ({r.TEAM_ALLOCATED} > 0)",
        m.idle_for,
        "warning",
        "Team {{ $labels.team }} holds GPUs in {{ $labels.pool }} that stay idle",
        "The GPUs team {{ $labels.team }} is allocated in pool {{ $labels.pool }} average "
        + _value("%.3f")
        + f" utilisation, below {ratio} for {m.idle_for}.",
    )


def pending(m: Monitoring) -> Alert:
    waiting = f"({p.TEAM_CARD_TYPES} * on (cluster_queue) group_left () ({r.CQ_PENDING} > 0))"
    return Alert(
        PENDING,
        f"{waiting} and on (root_cohort, card_type) ({r.COHORT_FREE} >= 1)",
        m.pending_for,
        "warning",
        "Team {{ $labels.team }} has workloads pending while {{ $labels.card_type }} quota "
        "idles in cohort {{ $labels.root_cohort }}",
        "ClusterQueue {{ $labels.cluster_queue }} has "
        + _value("%.0f")
        + " pending workloads while at least one {{ $labels.card_type }} card of nominal"
        " quota is unused in its cohort tree {{ $labels.root_cohort }}.",
    )


def wait(m: Monitoring) -> Alert:
    return Alert(
        WAIT,
        f"{r.CQ_WAIT} > on (priority_class) group_left () {p.OBJECTIVE}",
        None,
        "warning",
        "Admission wait of tier {{ $labels.priority_class }} in {{ $labels.cluster_queue }} "
        "is above its objective",
        f"The p{p.number(m.wait_percentile * 100)} admission wait over {m.wait_window} of tier"
        " {{ $labels.priority_class }} in ClusterQueue {{ $labels.cluster_queue }} is "
        + _value("%.0f")
        + "s, above the tier's objective"
        " (hetgitops:tier_admission_objective_seconds).",
    )


def budget(m: Monitoring) -> Alert:
    share = p.number(m.budget_percent / 100)
    projected = f"avg_over_time({r.TEAM_COST}[{m.budget_window}]) * {HOURS_PER_MONTH}"
    return Alert(
        BUDGET,
        f"{projected} > on (team) group_left () ({p.BUDGET} * {share})",
        "30m",
        "warning",
        "Team {{ $labels.team }} spends faster than its monthly budget allows",
        "At its average spend over "
        + m.budget_window
        + ", team {{ $labels.team }} would spend "
        + _value("%.0f")
        + f" a month, above {p.number(m.budget_percent)}% of its monthly"
        " budget (hetgitops:team_budget_monthly).",
    )


def expired() -> Alert:
    return Alert(
        EXPIRED,
        f"({p.EXPIRY} < time()) and on (pool) ({r.POOL_USAGE} > 0)",
        None,
        "warning",
        "Transition pool {{ $labels.pool }} is past its expiry and still runs work",
        "Pool {{ $labels.pool }} expired (spec.expires) but Kueue still reports admitted usage "
        "on its flavor; move the work and retire the pool.",
    )


def mig(m: Monitoring) -> Alert:
    failed = f'{r.NODE_MIG}{{mig_state!="{names.MIG_SUCCESS}"}}'
    foreign = f"({r.NODE_MIG} unless on (pool, mig_config) {p.MIG_CONFIG})"
    return Alert(
        MIG,
        f"{failed} or {foreign}",
        m.mig_for,
        "warning",
        "Node {{ $labels.node }} does not run the MIG layout its pool declares",
        "Node {{ $labels.node }} of pool {{ $labels.pool }} reports nvidia.com/mig.config="
        '"{{ $labels.mig_config }}" with state "{{ $labels.mig_state }}"; the pool declares '
        "its layouts in hetgitops:pool_mig_config_info and mig-manager must report success.",
    )


def cluster_queue(m: Monitoring) -> Alert:
    active = (
        f'(max by (cluster_queue) ({names.CQ_STATUS}{{status="active", {names.NOT_FOLLOWER}}})'
        " == 1)"
    )
    return Alert(
        CQ_STATE,
        f"{p.TEAM_INFO} unless on (cluster_queue) {active}",
        m.queue_for,
        "critical",
        "ClusterQueue {{ $labels.cluster_queue }} of team {{ $labels.team }} is not active",
        "Kueue does not report ClusterQueue {{ $labels.cluster_queue }} as active: it admits "
        "nothing (missing flavor, stopped queue, or Kueue not scraped).",
    )


def volcano_queue(m: Monitoring) -> Alert:
    open_ = f'(max by (queue) ({names.VOLCANO_QUEUE_STATE}{{state="Open"}}) == 1)'
    return Alert(
        VOLCANO_STATE,
        f"{p.VOLCANO_QUEUE} unless on (queue) {open_}",
        m.queue_for,
        "warning",
        "Volcano queue {{ $labels.queue }} of team {{ $labels.team }} is not Open",
        "Volcano queue {{ $labels.queue }} (pool {{ $labels.pool }}) is not in state Open: "
        "new jobs in it are not scheduled.",
    )


def alerts(facts: Facts, m: Monitoring, *, kueue: bool) -> list[Alert]:
    found = [capacity(m)]
    if any(f.nvidia for f in facts.pools.values()):
        found.append(idle(m))
    if kueue:
        found += [pending(m), wait(m), budget(m)]
        if any(f.expires for f in facts.pools.values()):
            found.append(expired())
    if any(f.mig_configs for f in facts.pools.values()):
        found.append(mig(m))
    if kueue:
        found.append(cluster_queue(m))
    if facts.volcano:
        found.append(volcano_queue(m))
    return found
