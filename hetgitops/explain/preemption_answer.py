"""The preemption answer for one probe: the flavor assigner's gate (does Kueue try preemption for
this resource at all), the preemption oracle per resource, then the preemptor's targets, each
victim with Kueue's reason and the ClusterQueue setting that allows it, or why none helps.

Why apart from the preemptor (`preemption.py`): this is the flavor assigner's side
(flavorassigner.go, preemption_oracle.go) and the words users read; the registry `WHY` carries each
outcome's text (habit 13)."""

from __future__ import annotations

from collections.abc import Mapping

from hetgitops.explain.kueue_messages import fmt
from hetgitops.explain.preemption import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    NEVER,
    Answer,
    Candidate,
    Placer,
    Preemptor,
    Rules,
    Running,
    Snapshot,
    Victim,
)
from hetgitops.explain.preemption_tree import (
    FR,
    cq_available,
    lowest_subtree_that_fits,
    potential_available,
)

FITS, PREEMPT, NONE, UNKNOWN = "fits", "preempt", "none", "unknown"

# Why no preemption helps, per outcome id: the text users read (habit 13).
WHY: Mapping[str, str] = {
    "exceeds-max-quota": (
        "{amount} {resource} in {flavor} is more than ClusterQueue {cq} can ever hold ({most}): "
        "ExceedsMaxQuota, no preemption helps (flavorassigner.go:1348)"
    ),
    "above-nominal": (
        "{amount} {resource} in {flavor} is above ClusterQueue {cq}'s nominal quota ({nominal}), "
        "no cohort below the root lends it, and borrowWithinCohort is Never: Kueue reclaims only "
        "a request that fits within the queue's nominal quota (flavorassigner.go:1371), so it "
        "waits until {short} {resource} are released"
    ),
    "no-candidates": (
        "no admitted workload Kueue may preempt frees {resource} in {flavor} for ClusterQueue "
        "{cq} ({settings}): it waits until {short} {resource} are released"
    ),
    "not-enough": (
        "preempting every workload Kueue may preempt ({count}) would still not free "
        "{amount} {resource} in {flavor} for ClusterQueue {cq} ({settings})"
    ),
    "would-borrow": (
        "{count} workload(s) Kueue may preempt hold {resource} in {flavor}, but only if "
        "ClusterQueue {cq} would not borrow afterwards ({settings}); with {used} in use, "
        "{amount} more is above its nominal quota {nominal} (preemption.go:310-316, "
        "candidate_generator.go:140-142): it waits until {short} {resource} are released"
    ),
    "pools-differ": (
        "its pod sets can run only in different pools ({pools}): Kueue gives each pod set its "
        "own flavor, and hetgitops replays preemption for one flavor per workload, so no "
        "victims are predicted"
    ),
    "no-room-empty": (
        "the job's pods cannot be placed by topology in {flavor} even with every admitted "
        "workload gone (flavorassigner.go:876-890): Kueue marks the flavor NoFit and preempts "
        "nothing there"
    ),
    "no-placement": (
        "in {flavor} the job needs quota and nodes with room for its pods: preempting what "
        "Kueue may preempt does not free room on nodes where a topology placement holds them "
        "(workloadFits, preemption.go:676-680), so Kueue preempts nothing and the job waits"
    ),
    "no-flavor": "no flavor of the team's ClusterQueue matches the job's node selector",
    "not-kueue": (
        "{scheduler} places this job, not Kueue: Kueue's preemption does not apply to it "
        "(`hetgitops explain -f` answers for {scheduler})"
    ),
    "fair-sharing": (
        "fair sharing is enabled in Kueue's configuration: its preemption "
        "(pkg/scheduler/preemption/fairsharing, preemption.go:534-587) is not replayed by "
        "hetgitops, so no victims are predicted"
    ),
}


def settings(rules: Rules) -> str:
    threshold = rules.max_priority_threshold
    borrow = rules.borrow_within_cohort + (
        f" (maxPriorityThreshold {threshold})" if threshold is not None else ""
    )
    return (
        f"withinClusterQueue {rules.within_cluster_queue}, reclaimWithinCohort "
        f"{rules.reclaim_within_cohort}, borrowWithinCohort {borrow}"
    )


def victim(c: Candidate, rules: Rules) -> Victim:
    """The reason Kueue writes (hierarchical_preemption.go:48-60, PreemptionReason) and the
    setting that made the candidate one (classifyPreemptionVariant, :81-113)."""
    if c.variant == "WithinCQ":
        reason, setting = IN_CLUSTER_QUEUE, f"withinClusterQueue: {rules.within_cluster_queue}"
    elif c.variant == "ReclaimWhileBorrowing":
        reason = IN_COHORT_RECLAIM_WHILE_BORROWING
        threshold = rules.max_priority_threshold
        setting = f"borrowWithinCohort: {rules.borrow_within_cohort}" + (
            f" (maxPriorityThreshold {threshold})" if threshold is not None else ""
        )
    else:
        reason = IN_COHORT_RECLAMATION
        setting = f"reclaimWithinCohort: {rules.reclaim_within_cohort}"
        if c.variant == "HierarchicalReclaim":
            setting += " (the request fits the quota of a subtree the preemptor belongs to)"
    w = c.wl
    return Victim(w.name, w.cluster_queue, w.priority, reason, setting)


def words(key: str, **values: object) -> str:
    """The user text of outcome reason `key` (WHY), filled in."""
    return WHY[key].format(**values)


def _words(key: str, **values: object) -> str:
    return WHY[key].format(**values)


def answer(
    snap: Snapshot, probe: Running, *, fair_sharing: bool = False, placer: Placer | None = None
) -> Answer:
    """Whom Kueue preempts to admit `probe` (its usage per flavor-resource already assigned).
    `placer`: the probe's topology placement in its flavor (None: the flavor has no Topology)."""
    if fair_sharing:
        return Answer(UNKNOWN, why=(_words("fair-sharing"),))
    cq = snap.queue(probe.cluster_queue)
    rules = snap.specs[probe.cluster_queue].rules
    need: list[FR] = []
    for fr, value in sorted(probe.usage.items()):
        flavor, resource = fr
        words = {"amount": fmt(resource, value), "resource": resource, "flavor": flavor}
        words["cq"] = cq.name
        most = potential_available(cq, fr)
        if value > most:
            why = _words("exceeds-max-quota", most=fmt(resource, most), **words)
            return Answer(NONE, why=(why,))
        available = cq_available(cq, fr)
        if value <= available:
            continue
        short = fmt(resource, value - available)
        _, may_reclaim = lowest_subtree_that_fits(cq, fr, value)
        if not (cq.nominal(fr) >= value or may_reclaim or rules.borrow_within_cohort != NEVER):
            nominal = fmt(resource, cq.nominal(fr))
            why = _words("above-nominal", nominal=nominal, short=short, **words)
            return Answer(NONE, why=(why,), needs=(fr,))
        # The oracle: preemption must be possible for this resource alone (:43-81).
        if not Preemptor(snap, probe, {fr}).targets({fr: value}):
            return Answer(NONE, why=(_why_none(snap, probe, fr, words, short),), needs=(fr,))
        need.append(fr)
    if placer is not None and (need or not placer({})):
        # A topology-aware flavor (flavorassigner.go:860-899): quota that fits but a placement
        # that does not turns the pod sets' resources to Preempt; either way Kueue first asks
        # whether the pods could be placed with every admitted workload gone, and if so every
        # resource of them needs preemption (updateModeForTASRequests).
        if not placer(snap.placed_total()):
            flavor = sorted(probe.usage)[0][0] if probe.usage else ""
            return Answer(NONE, why=(_words("no-room-empty", flavor=flavor),))
        need = sorted(probe.usage)
    if not need:
        return Answer(FITS)
    preemptor = Preemptor(snap, probe, set(need), placer)
    chosen = preemptor.targets(probe.usage)
    if not chosen:
        shorts = [f for f in need if probe.usage[f] > cq_available(cq, f)]
        if placer is not None and (
            not shorts or Preemptor(snap, probe, set(need)).targets(probe.usage)
        ):
            why = _words("no-placement", flavor=need[0][0])
            return Answer(NONE, why=(why,), needs=tuple(need))
        fr = shorts[0]
        words = {"amount": fmt(fr[1], probe.usage[fr]), "resource": fr[1], "flavor": fr[0]}
        words["cq"] = cq.name
        short = fmt(fr[1], probe.usage[fr] - cq_available(cq, fr))
        return Answer(NONE, why=(_why_none(snap, probe, fr, words, short),), needs=tuple(need))
    victims = tuple(victim(c, rules) for c in chosen)
    return Answer(PREEMPT, victims, needs=tuple(need))


def _why_none(snap: Snapshot, probe: Running, fr: FR, words: dict[str, str], short: str) -> str:
    rules = snap.specs[probe.cluster_queue].rules
    preemptor = Preemptor(snap, probe, {fr})
    value = probe.usage[fr]
    hierarchy, priority = preemptor.hierarchical({fr: value})
    same = (
        preemptor.from_queue(preemptor.cq, None, False)
        if rules.within_cluster_queue != NEVER
        else []
    )
    count = len(hierarchy) + len(priority) + len(same)
    held = fmt(fr[1], preemptor.cq.usage.get(fr, 0))
    without = [c for c in [*hierarchy, *priority] if c.variant == "ReclaimWithoutBorrowing"]
    if without and preemptor.cq.borrowing_with(fr, value):
        extra = {"used": held, "nominal": fmt(fr[1], preemptor.cq.nominal(fr)), "short": short}
        return _words(
            "would-borrow", count=len(without), settings=settings(rules), **extra, **words
        )
    if count:
        return _words("not-enough", count=count, settings=settings(rules), **words)
    return _words("no-candidates", settings=settings(rules), short=short, **words)
