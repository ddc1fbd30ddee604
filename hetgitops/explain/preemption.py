"""Who Kueue v0.19.2 would preempt to admit a workload: its classical preemptor replayed over
the cohort tree (`preemption_tree`), with the flavor assigner's gate before it.

Why apart from the flavor replay (`kueue.py`): this is Kueue's pkg/scheduler/preemption, a
stage after flavor assignment that only runs for resources in Preempt mode; `explain` and
`explain --preempt` both ask it (one model). Every rule cites its upstream line. Plain data in
(queues, cohorts, running workloads, a probe), an `Answer` out; the policy and the cluster are
read into that data by `preemption_input`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from hetgitops.explain.preemption_tree import (
    COHORT,
    CQ,
    FR,
    Node,
    NodeKey,
    Quota,
    accumulate,
    add_usage,
    cq_available,
    fits_in_quota,
    remove_usage,
)

NEVER, LOWER, LOWER_OR_NEWER, ANY = "Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"
# Kueue's reasons on the victim's Preempted condition (apis/kueue/v1beta2 constants).
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


@dataclass(frozen=True)
class Rules:
    """A ClusterQueue's spec.preemption."""

    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True)
class QueueSpec:
    name: str
    cohort: str | None
    quotas: Mapping[FR, Quota]
    rules: Rules = Rules()


@dataclass(frozen=True)
class CohortSpec:
    name: str
    parent: str | None = None
    quotas: Mapping[FR, Quota] = field(default_factory=dict)


@dataclass(frozen=True)
class Running:
    """An admitted Workload: what it holds per (flavor, resource). `admitted`: when its quota
    was reserved, `created`: its queue-order time, both in seconds (larger is newer)."""

    name: str
    cluster_queue: str
    priority: int
    usage: Mapping[FR, int]
    admitted: float = 0.0
    created: float = 0.0
    evicted: bool = False
    # Node -> resource -> units its topology assignments hold (live mode; {} unknown or none).
    placed: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


# Whether the probe's pods can be placed by topology once the workloads removed so far have
# given back their nodes' units (node -> resource -> units freed): Kueue's
# FindTopologyAssignmentsForWorkload in workloadFits; None where no flavor is topology-aware.
Placer = Callable[[Mapping[str, Mapping[str, int]]], bool]


@dataclass(frozen=True)
class Victim:
    name: str
    cluster_queue: str
    priority: int
    reason: str  # Kueue's reason token
    setting: str  # the ClusterQueue preemption setting that allows it


@dataclass(frozen=True)
class Answer:
    """`outcome`: fits (no preemption needed) | preempt (the victims) | none (why says why)."""

    outcome: str
    victims: tuple[Victim, ...] = ()
    why: tuple[str, ...] = ()
    needs: tuple[FR, ...] = ()  # the flavor-resources that need preemption


class Snapshot:
    """Kueue's scheduler snapshot: the tree with every running workload's usage added."""

    def __init__(
        self, queues: Iterable[QueueSpec], cohorts: Iterable[CohortSpec], running: Iterable[Running]
    ) -> None:
        self.specs = {q.name: q for q in queues}
        cohort_specs = {c.name: c for c in cohorts}
        for q in self.specs.values():  # a cohort named only by a queue exists without quota
            if q.cohort is not None and q.cohort not in cohort_specs:
                cohort_specs[q.cohort] = CohortSpec(q.cohort)
        self.nodes: dict[NodeKey, Node] = {}
        for c in cohort_specs.values():
            self.nodes[COHORT, c.name] = Node((COHORT, c.name), None, c.quotas)
        for c in cohort_specs.values():
            self._link((COHORT, c.name), c.parent)
        for q in self.specs.values():
            self.nodes[CQ, q.name] = Node((CQ, q.name), None, q.quotas)
            self._link((CQ, q.name), q.cohort)
        for node in self.nodes.values():
            if node.parent is None:
                accumulate(node)
        self.workloads: dict[str, dict[str, Running]] = {q: {} for q in self.specs}
        # Units the workloads removed so far hold on each node (their topology assignments).
        self.freed: dict[str, dict[str, int]] = {}
        for wl in running:
            if wl.cluster_queue in self.specs:
                self.add(wl)
        self.freed = {}  # what they hold is in the nodes' free units already

    def _link(self, key: NodeKey, parent: str | None) -> None:
        if parent is None or (COHORT, parent) not in self.nodes:
            return
        node, up = self.nodes[key], self.nodes[COHORT, parent]
        if any(a is node for a in [up, *up.path_to_root()]):  # a cycle: Kueue refuses it
            return
        node.parent = up
        up.children.append(node)

    def queue(self, name: str) -> Node:
        return self.nodes[CQ, name]

    def add(self, wl: Running) -> None:
        self.workloads[wl.cluster_queue][wl.name] = wl
        for fr, value in wl.usage.items():
            add_usage(self.queue(wl.cluster_queue), fr, value)
        self._free(wl, -1)

    def remove(self, wl: Running) -> None:
        del self.workloads[wl.cluster_queue][wl.name]
        for fr, value in wl.usage.items():
            remove_usage(self.queue(wl.cluster_queue), fr, value)
        self._free(wl, 1)

    def placed_total(self) -> dict[str, dict[str, int]]:
        """What every admitted workload's topology assignments hold per node: freed, it is
        Kueue's "simulate empty" (tas_flavor_snapshot.go:1884-1896)."""
        total: dict[str, dict[str, int]] = {}
        for by_name in self.workloads.values():
            for wl in by_name.values():
                for node, units in wl.placed.items():
                    mine = total.setdefault(node, {})
                    for resource, amount in units.items():
                        mine[resource] = mine.get(resource, 0) + amount
        return total

    def _free(self, wl: Running, sign: int) -> None:
        """Kueue's RemoveUsage / AddUsage also move the workload's TAS usage
        (clusterqueue_snapshot.go:111-136): only what removals freed is kept here."""
        for node, units in wl.placed.items():
            mine = self.freed.setdefault(node, {})
            for resource, amount in units.items():
                mine[resource] = mine.get(resource, 0) + sign * amount


def satisfies(policy: str, probe: Running, candidate: Running) -> bool:
    """SatisfiesPreemptionPolicy (common/preemption_policy.go:30-48): LowerOrNewerEqualPriority
    also takes an equal priority queued later (SchedulerTimestampPreemptionBuffer off)."""
    if policy == LOWER:
        return probe.priority > candidate.priority
    if policy == LOWER_OR_NEWER:
        newer = probe.priority == candidate.priority and probe.created < candidate.created
        return probe.priority > candidate.priority or newer
    return policy == ANY


def _order(cq: str, wl: Running) -> tuple[bool, bool, int, float, str]:
    """CandidatesOrdering (common/ordering.go:39-81): evicted first, other queues before the
    preemptor's, lower priority first, most recently admitted first; then by UID, here name."""
    return (not wl.evicted, wl.cluster_queue == cq, wl.priority, -wl.admitted, wl.name)


@dataclass(frozen=True)
class Candidate:
    wl: Running
    lca: Node | None  # the subtree root it was found under (None: the preemptor's queue)
    variant: str  # WithinCQ | HierarchicalReclaim | ReclaimWithoutBorrowing | ReclaimWhileBorrowing


class Preemptor:
    """Classical preemption (preemption.go:282-358, classical/) for one probe."""

    def __init__(
        self, snap: Snapshot, probe: Running, frs: set[FR], placer: Placer | None = None
    ) -> None:
        self.snap, self.probe, self.frs, self.placer = snap, probe, frs, placer
        self.cq = snap.queue(probe.cluster_queue)
        self.rules = snap.specs[probe.cluster_queue].rules

    def _uses(self, wl: Running) -> bool:
        """WorkloadUsesResources (candidate_generator.go:54-63)."""
        return any(fr in self.frs for fr in wl.usage)

    def _variant(self, wl: Running, advantage: bool) -> str | None:
        """classifyPreemptionVariant (hierarchical_preemption.go:81-113)."""
        own = wl.cluster_queue == self.probe.cluster_queue
        rule = self.rules.within_cluster_queue if own else self.rules.reclaim_within_cohort
        if not self._uses(wl) or not satisfies(rule, self.probe, wl):
            return None
        if own:
            return "WithinCQ"
        if advantage:
            return "HierarchicalReclaim"
        if self.rules.borrow_within_cohort == NEVER:
            return "ReclaimWithoutBorrowing"
        # isAboveBorrowingThreshold (:115-123)
        threshold = self.rules.max_priority_threshold
        if wl.priority >= self.probe.priority or (
            threshold is not None and wl.priority > threshold
        ):
            return "ReclaimWithoutBorrowing"
        return "ReclaimWhileBorrowing"

    def from_queue(self, node: Node, lca: Node | None, advantage: bool) -> list[Candidate]:
        """getCandidatesFromCQ (hierarchical_preemption.go:132-147)."""
        found = []
        for wl in self.snap.workloads[node.name].values():
            variant = self._variant(wl, advantage)
            if variant is not None:
                found.append(Candidate(wl, lca, variant))
        return found

    def _in_subtree(
        self, current: Node, root: Node, skip: Node | None, advantage: bool, out: list[Candidate]
    ) -> None:
        """collectCandidatesInSubtree (hierarchical_preemption.go:179-206): only subtrees and
        queues above their nominal quota in the contested resources."""
        for child in current.cohorts():
            if child is skip or child.within_nominal(self.frs):
                continue
            self._in_subtree(child, root, skip, advantage, out)
        for child in current.queues():
            if child is not self.cq and not child.within_nominal(self.frs):
                out.extend(self.from_queue(child, root, advantage))

    def hierarchical(self, requests: Mapping[FR, int]) -> tuple[list[Candidate], list[Candidate]]:
        """collectCandidatesForHierarchicalReclaim (hierarchical_preemption.go:149-175): walking
        up, the candidates under a subtree whose quota fits the request are ones the preemptor
        has a hierarchical advantage over; the others are decided by priority."""
        hierarchy: list[Candidate] = []
        priority: list[Candidate] = []
        if self.cq.parent is None or self.rules.reclaim_within_cohort == NEVER:
            return hierarchy, priority
        advantage, remaining = fits_in_quota(self.cq, requests)
        previous: Node | None = None
        for root in self.cq.path_to_root():
            self._in_subtree(root, root, previous, advantage, hierarchy if advantage else priority)
            fits, remaining = fits_in_quota(root, remaining)
            advantage = advantage or fits
            previous = root
        return hierarchy, priority

    def _valid(self, c: Candidate, borrow: bool) -> bool:
        """candidateIsValid (candidate_generator.go:136-157): a queue (or cohort below the
        common ancestor) back within nominal after earlier removals is spared."""
        if c.wl.cluster_queue == self.probe.cluster_queue:
            return True
        if borrow and c.variant == "ReclaimWithoutBorrowing":
            return False
        node = self.snap.queue(c.wl.cluster_queue)
        if node.within_nominal(self.frs):
            return False
        for up in node.path_to_root():
            if up is c.lca:
                break
            if up.within_nominal(self.frs):
                return False
        return True

    def fits(self, requests: Mapping[FR, int], borrow: bool) -> bool:
        """workloadFits (preemption.go:667-682): the quota, then a topology placement of the
        probe's pods on what the removals have freed (the placer; the preemption oracle has
        none: it asks with no topology requests, preemption_oracle.go:51-60)."""
        for fr, value in requests.items():
            if not borrow and self.cq.borrowing_with(fr, value):
                return False
            if value > cq_available(self.cq, fr):
                return False
        return self.placer is None or self.placer(self.snap.freed)

    def _under_nominal(self) -> bool:
        """queueUnderNominalInResourcesNeedingPreemption (preemption.go:698-705)."""
        return all(self.cq.nominal(fr) > self.cq.usage.get(fr, 0) for fr in self.frs)

    def targets(self, requests: Mapping[FR, int]) -> list[Candidate]:
        """classicalPreemptions (preemption.go:282-337): remove candidates in order until the
        probe fits, then add back all it can spare (fillBackWorkloads, :339-352)."""
        same = (
            self.from_queue(self.cq, None, False)
            if self.rules.within_cluster_queue != NEVER
            else []
        )
        hierarchy, priority = self.hierarchical(requests)
        ordered = [
            sorted(g, key=lambda c: _order(self.cq.name, c.wl)) for g in (hierarchy, priority, same)
        ]
        # NewCandidateIterator (candidate_generator.go:98-107): evicted ones of each group first.
        candidates = [c for g in ordered for c in g if c.wl.evicted] + [
            c for g in ordered for c in g if not c.wl.evicted
        ]
        forbidden = self.rules.borrow_within_cohort == NEVER
        if (not hierarchy and not priority) or (forbidden and not self._under_nominal()):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for borrow in attempts:
            chosen: list[Candidate] = []
            for c in candidates:
                if not self._valid(c, borrow):
                    continue
                self.snap.remove(c.wl)
                chosen.append(c)
                if self.fits(requests, borrow):
                    chosen = self._fill_back(chosen, requests, borrow)
                    for t in chosen:
                        self.snap.add(t.wl)
                    return chosen
            for t in chosen:
                self.snap.add(t.wl)
        return []

    def _fill_back(
        self, chosen: list[Candidate], requests: Mapping[FR, int], borrow: bool
    ) -> list[Candidate]:
        for i in range(len(chosen) - 2, -1, -1):
            self.snap.add(chosen[i].wl)
            if self.fits(requests, borrow):
                chosen[i] = chosen[-1]  # Kueue's O(1) deletion keeps this order
                chosen.pop()
            else:
                self.snap.remove(chosen[i].wl)
        return chosen
