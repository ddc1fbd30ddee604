"""Kueue v0.19.2's flavor assignment replayed over the team's ClusterQueue, as hetgitops renders it
(`compilers.kueue_flavors`, `plan.quota_plan`).

Order and messages follow pkg/scheduler/flavorassigner/flavorassigner.go at v0.19.2:
- pod sets are assigned one after another; the first that gets no flavor ends the attempt, and their
  requests add up per flavor (`assignmentUsage`); pod sets of one `kueue.x-k8s.io/podset-group-name`
  (beside a required or preferred topology) are searched as one, their requests summed, every one of
  them matching the flavor;
- a requested resource no resource group covers: "resource R unavailable in ClusterQueue", no flavor
  tried, reason NoMatchingFlavor;
- flavors in the ClusterQueue's order; a flavor whose nodeLabels the pod's node selector or required
  node affinity contradicts: "flavor F doesn't match node affinity" (only the flavor's own label
  keys count), NoMatchingFlavor; before it, a flavor nodeTaint (NoSchedule / NoExecute) that neither
  the pod's nor the flavor's tolerations tolerate: "untolerated taint {KEY VALUE EFFECT <nil>} in
  flavor F" (Go's %v of a corev1.Taint). The flavor's taints are plan.flavors' (read through
  quotas.flavors): a pool with `spec.kueue.flavorNodeTaints` lists its own taints, which its
  flavor's tolerations always tolerate, so they rule nothing out, as in Kueue; a pool's
  `spec.kueue.retiringFlavor`, listed after the pool's new flavor with the retiring taint first
  (compilers/kueue_queues.py transition_quotas), admits nothing new, while the new flavor's quota
  is the team's less what the retiring one holds (all of it unless `holds` says less);
- per resource, usage + request > PotentialAvailable: "insufficient quota for R in flavor F,
  previously considered podsets requests (a) + current podset request (b) > maximum capacity (c)",
  ExceedsMaxQuota; above Available: "insufficient unused quota for R in flavor F, N more needed",
  WaitingForQuota;
- flavorFungibility: whenCanBorrow MayStopSearch stops at the first flavor that fits, borrowing or
  not; TryNextFlavor looks on for one that fits without borrowing and, failing that, keeps the one
  borrowing from the nearest cohort;
- reasons of all flavors tried are sorted and joined by ", " (Status.Message), pod sets by "; "
  after "couldn't assign flavors to pod set P: ";
- the overall reason: per pod set the least severe of its flavors' reasons, across pod sets the most
  severe (NoMatchingFlavor > ExceedsMaxQuota > WaitingForQuota > TopologyPlacementFailed);
- with a Topology (every flavor of a fleet with `topology`), the chosen flavors are then placed on
  nodes (pkg/cache/scheduler/tas_flavor_snapshot.go); a ClusterQueue whose flavors all name a
  topology gets TAS for every pod set, annotated or not (tas_flavorassigner.go, `isTASImplied`), and
  placement adds the flavor's tolerations to the pod's (tas_flavor_snapshot.go): a pod set that fits
  no domain is "topology "T" doesn't allow to fit any of N pod(s)" or "allows to fit only k out of N
  pod(s)", TopologyPlacementFailed.

This module is the order; what the ClusterQueue offers is `quotas.py`, the placement on nodes
`topology.py`, and every reason token and message string `kueue_messages.py`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from hetgitops.explain import kueue_messages as say
from hetgitops.explain.kueue_messages import (
    EXCEEDS_MAX_QUOTA,
    NO_MATCHING_FLAVOR,
    SEVERITY,
    TOPOLOGY_PLACEMENT_FAILED,
    WAITING_FOR_QUOTA,
    worse,
)
from hetgitops.explain.nodes import affinity_holds, selects
from hetgitops.explain.quotas import Flavor, Quotas, covered, flavors
from hetgitops.explain.topology import Placement, place
from hetgitops.explain.workload import PodSet
from hetgitops.model.policy import Policy, Team
from hetgitops.model.tolerations import tolerates
from hetgitops.plan.flavors import topology_levels


@dataclass(frozen=True)
class Attempt:
    """One flavor tried for one pod set: `mode` fit | borrow | nofit."""

    flavor: str
    pool: str
    mode: str
    reason: str = ""
    messages: tuple[str, ...] = ()
    borrowing: Mapping[str, int] = field(default_factory=dict)
    index: int = 0  # the flavor's place in the ClusterQueue's order, from 0
    # How far the borrowed quota comes from (0: none borrowed; else the height of the
    # lowest cohort whose subtree lends it): the worst over the resources.
    level: int = 0


@dataclass(frozen=True)
class PodSetResult:
    pod_set: PodSet
    attempts: tuple[Attempt, ...]
    flavor: Attempt | None
    messages: tuple[str, ...]
    reason: str
    placement: Placement | None = None
    # Requested resources no resource group covers (whatever the message says first).
    missing: tuple[str, ...] = ()
    # Kueue's LastTriedFlavorIdx for the pod set: the index of the last flavor the scan
    # looked at when it chose one, -1 when that was the ClusterQueue's last flavor or none
    # was chosen (flavorassigner.go:1188-1199, workload.go:226-238).
    last_tried: int = -1


@dataclass(frozen=True)
class KueueVerdict:
    cluster_queue: str
    admitted: bool
    reason: str  # "" when admitted
    message: str
    pod_sets: tuple[PodSetResult, ...]
    # Earlier scheduling cycles that did not admit while some pod set had flavors left to
    # try, each resumed by the next from the flavor after the one it tried (oldest first).
    cycles: tuple[KueueVerdict, ...] = ()


class Assigner:
    def __init__(
        self,
        policy: Policy,
        team: Team,
        quotas: Quotas,
        node_free: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        self.policy, self.team, self.quotas = policy, team, quotas
        self.flavors = flavors(policy, team)
        self.covered = covered(policy, team)
        self.node_free = node_free or {}
        fleet = policy.fleet
        self.when_can_borrow = fleet.when_can_borrow if fleet else "MayStopSearch"
        # Every flavor names a topology: TAS is implied for every pod set
        # (tas_flavorassigner.go:218-221; clusterqueue_snapshot.go:243).
        self.tas_only = bool(self.flavors) and all(f.topology for f in self.flavors)

    def _selector_fits(self, flavor: Flavor, pod_set: PodSet) -> bool:
        """flavorSelector (flavorassigner.go:1280-1321): the pod's nodeSelector and required
        node affinity cut to the flavor's own label keys, matched against its nodeLabels; a
        term left without expressions matches any flavor."""
        keys = set(flavor.node_labels)
        relevant = {k: v for k, v in pod_set.node_selector.items() if k in keys}
        if not selects(relevant, flavor.node_labels):
            return False
        if pod_set.node_affinity is None:
            return True
        kept = []
        for term in pod_set.node_affinity:
            expressions = tuple(e for e in term if str(e.get("key", "")) in keys)
            if not expressions:
                return True
            kept.append(expressions)
        return affinity_holds(tuple(kept), flavor.node_labels)

    def _quota(self, flavor: Flavor, pod_set: PodSet, used: Counter[tuple[str, str]]) -> Attempt:
        mode, reason, messages, borrowing = "fit", "", [], {}
        level = 0
        for resource in sorted(r for r in pod_set.requests if r in self.covered):
            request = pod_set.total(resource)
            if request == 0:
                continue
            before = used[flavor.name, resource]
            value = before + request
            most = self.quotas.potential(self.team, flavor.plan, resource)
            if value > most:
                messages.append(say.exceeds_max_quota(resource, flavor.name, before, request, most))
                mode, reason = "nofit", worse(reason, EXCEEDS_MAX_QUOTA)
                continue
            available = self.quotas.available(self.team, flavor.plan, resource)
            if value > available:
                messages.append(say.waiting_for_quota(resource, flavor.name, value - available))
                mode, reason = "nofit", worse(reason, WAITING_FOR_QUOTA)
                continue
            nominal = self.quotas.nominal(self.team, flavor.plan.pool.name, resource)
            held = self.quotas.used(self.team, flavor.plan.pool.name, resource)
            if held + value > nominal:
                borrowing[resource] = held + value - nominal
                level = max(
                    level, self.quotas.borrow_level(self.team, flavor.plan, resource, value)
                )
                if mode == "fit":
                    mode = "borrow"
        pool = flavor.plan.pool.name
        return Attempt(
            flavor.name,
            pool,
            mode,
            reason,
            tuple(messages),
            borrowing,
            level=level if mode == "borrow" else 0,
        )

    def matching(self, pod_set: PodSet) -> list[str]:
        """The pools, in the ClusterQueue's flavor order, whose flavor `pod_set` matches
        (checkFlavorForPodSets below), whatever the quota: what each pod set could run on, also
        for the pod sets Kueue's assigner never reached because an earlier one did not fit."""
        found = [f.plan.pool.name for f in self.flavors if self._mismatch(f, pod_set) is None]
        return list(dict.fromkeys(found))

    def _mismatch(self, flavor: Flavor, pod_set: PodSet) -> str | None:
        """checkFlavorForPodSets (flavorassigner.go:1208-1257): the TAS match first
        (tas_flavorassigner.go:166-204), then the flavor's nodeTaints (plan.flavors'),
        then the pod's node selector on the flavor's own label keys."""
        explicit = pod_set.required_topology or pod_set.preferred_topology
        if explicit and not self.tas_only:
            if flavor.topology is None:
                return say.no_topology(flavor.name)
        elif explicit and flavor.topology is not None and self.policy.fleet is not None:
            if explicit not in topology_levels(self.policy, self.policy.fleet):
                return say.no_topology_level(flavor.name)
        elif not explicit and not self.tas_only and flavor.topology is not None:
            return say.topology_only(flavor.name)
        tolerations = [*pod_set.tolerations, *flavor.tolerations]
        for taint in flavor.node_taints:
            effect = taint.get("effect", "")
            if effect in ("NoSchedule", "NoExecute") and not tolerates(
                tolerations, taint.get("key", ""), taint.get("value"), effect
            ):
                return say.untolerated_taint(taint, flavor.name)
        if not self._selector_fits(flavor, pod_set):
            return say.no_node_affinity(flavor.name)
        return None

    def _find_flavor(
        self,
        pod_set: PodSet,
        used: Counter[tuple[str, str]],
        start: int,
        members: tuple[PodSet, ...],
    ) -> tuple[list[Attempt], Attempt | None, int]:
        """findFlavorForPodSets (flavorassigner.go:1061-1206) over the one resource group
        hetgitops renders: the flavors from `start` in the ClusterQueue's order. Returns the
        attempts, the chosen one and the scan's LastTriedFlavorIdx."""
        attempts: list[Attempt] = []
        chosen: Attempt | None = None
        tried = -1
        for index in range(start, len(self.flavors)):
            flavor = self.flavors[index]
            tried = index
            # Every pod set of a group must match the flavor (checkFlavorForPodSets).
            mismatch = next(
                (m for m in (self._mismatch(flavor, each) for each in members) if m), None
            )
            if mismatch is not None:
                attempts.append(
                    Attempt(
                        flavor.name,
                        flavor.plan.pool.name,
                        "nofit",
                        NO_MATCHING_FLAVOR,
                        (mismatch,),
                        index=index,
                    )
                )
                continue
            attempt = replace(self._quota(flavor, pod_set, used), index=index)
            attempts.append(attempt)
            if attempt.mode == "fit":
                chosen = attempt
                break
            if attempt.mode == "borrow":
                # Among borrowing flavors the one borrowing from the nearer cohort wins, the
                # first on a tie (isPreferred: borrowingLevel.betterThan).
                if chosen is None or attempt.level < chosen.level:
                    chosen = attempt
                if self.when_can_borrow != "TryNextFlavor":
                    break
        if chosen is None:
            return attempts, None, -1
        return attempts, chosen, -1 if tried == len(self.flavors) - 1 else tried

    def _pod_set(
        self,
        pod_set: PodSet,
        used: Counter[tuple[str, str]],
        start: int = 0,
        members: tuple[PodSet, ...] = (),
    ) -> PodSetResult:
        """One pod set's resources in Kueue's order (flavorassigner.go:806-837): its requests
        iterate sorted by the FNV-1a hash of the resource name (VectorizedResourceRequests,
        on by default in v0.19, pkg/resources/slice_requests.go:35-66); a resource no group
        covers stops the pod set with "resource R unavailable in ClusterQueue"
        (flavorassigner.go:810-818, :1069-1072) unless its group's flavor search already
        failed first, whose message then stands alone."""
        missing = tuple(
            r for r in sorted(pod_set.requests) if pod_set.requests[r] and r not in self.covered
        )
        attempts: list[Attempt] = []
        chosen: Attempt | None = None
        tried = -1
        searched = False
        for resource in sorted(pod_set.requests, key=lambda r: (fnv1a64(r), r)):
            if resource not in self.covered:
                if pod_set.requests[resource] == 0:
                    continue
                message = say.unavailable(resource)
                return PodSetResult(
                    pod_set, tuple(attempts), None, (message,), NO_MATCHING_FLAVOR, None, missing
                )
            if searched:
                continue  # the group's flavor already covers it (flavorassigner.go:820-824)
            searched = True
            attempts, chosen, tried = self._find_flavor(pod_set, used, start, members or (pod_set,))
            if chosen is None:
                messages = tuple(sorted(m for a in attempts for m in a.messages))
                reason = min((a.reason for a in attempts), key=SEVERITY.__getitem__, default="")
                return PodSetResult(
                    pod_set,
                    tuple(attempts),
                    None,
                    messages,
                    reason or NO_MATCHING_FLAVOR,
                    None,
                    missing,
                )
        return PodSetResult(pod_set, tuple(attempts), chosen, (), "", None, missing, tried)

    def assign(self, pod_sets: tuple[PodSet, ...]) -> KueueVerdict:
        """Scheduling cycles as Kueue runs them for a new workload. Every cycle that does not
        admit records its assignment (scheduler.go:280-285, `recordAssignment`), so the pod
        sets that got a flavor leave their LastTriedFlavorIdx behind (flavorassigner.go
        :1013-1037) whatever failed after them: quota of a later pod set or the topology
        placement. While some pod set's is not -1 the workload goes straight back to the
        queue (cluster_queue.go:679, `PendingFlavors`) and the next cycle resumes each pod
        set's scan at the flavor after it (flavorassigner.go:1088-1090, workload.go:226-238).
        What the user sees is the last cycle's verdict."""
        starts = [0] * len(pod_sets)
        earlier: list[KueueVerdict] = []
        while True:
            verdict = self._cycle(pod_sets, starts)
            tried = [r.last_tried for r in verdict.pod_sets]
            if verdict.admitted or all(t == -1 for t in tried) or len(earlier) > len(self.flavors):
                return replace(verdict, cycles=tuple(earlier))
            earlier.append(verdict)
            starts = [t + 1 if t != -1 else 0 for t in tried] + [0] * (len(pod_sets) - len(tried))

    def _cycle(self, pod_sets: tuple[PodSet, ...], starts: list[int]) -> KueueVerdict:
        used: Counter[tuple[str, str]] = Counter()
        results: list[PodSetResult] = []
        for indexes in _groups(pod_sets):
            members = tuple(pod_sets[i] for i in indexes)
            search = members[0] if len(members) == 1 else _summed(members)
            result = self._pod_set(search, used, starts[indexes[0]], members)
            results.extend(replace(result, pod_set=each) for each in members)
            if result.flavor is None:
                return _verdict(self.team.name, results, pending=result)
            for each in members:
                for resource in each.requests:
                    used[result.flavor.flavor, resource] += each.total(resource)
        placed = self._place(results)
        failed = next((r for r in placed if r.reason), None)
        return _verdict(self.team.name, placed, pending=failed)

    def _place(self, results: list[PodSetResult]) -> list[PodSetResult]:
        """Topology-aware placement of each pod set in its flavor's nodes, pod sets in order
        (each takes its nodes' units from the next)."""
        by_name = {f.name: f for f in self.flavors}
        free: dict[str, dict[str, int]] = {}
        placed = []
        for index, result in enumerate(results):
            flavor = by_name[result.flavor.flavor] if result.flavor else None
            if flavor is None or flavor.topology is None or self.policy.fleet is None:
                placed.append(result)
                continue
            placement, message = place(
                self.policy, flavor, result.pod_set, free=free, node_free=self.node_free
            )
            if message:
                # The pod set keeps its flavor scan's progress (LastTriedFlavorIdx), the
                # others theirs (flavorassigner.go:866-878).
                failed = replace(
                    result, flavor=None, messages=(message,), reason=TOPOLOGY_PLACEMENT_FAILED
                )
                return [*placed, failed, *results[index + 1 :]]
            placed.append(replace(result, placement=placement))
        return placed


def _groups(pod_sets: tuple[PodSet, ...]) -> list[list[int]]:
    """The pod sets' indexes by podset group, groups in the order of their first pod set; a
    pod set of no group is a group of its own (flavorassigner.go:778-786)."""
    groups: dict[str, list[int]] = {}
    for index, pod_set in enumerate(pod_sets):
        groups.setdefault(pod_set.group or f"#{index}", []).append(index)
    return list(groups.values())


def _summed(members: tuple[PodSet, ...]) -> PodSet:
    """The group's requests added up (flavorassigner.go:787-792): one pod of them all, so
    the quota check and its messages see the group's total."""
    total: Counter[str] = Counter()
    for each in members:
        for resource in each.requests:
            total[resource] += each.total(resource)
    return replace(members[0], count=1, requests=dict(total))


def fnv1a64(name: str) -> int:
    """hashResourceName (pkg/resources/slice_requests.go:35-43): the key Kueue's SliceRequests
    keep resources sorted by (ties by name, :54-59)."""
    value = 0xCBF29CE484222325
    for byte in name.encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def _verdict(team: str, results: list[PodSetResult], pending: PodSetResult | None) -> KueueVerdict:
    if pending is None:
        return KueueVerdict(team, True, "", "", tuple(results))
    message = say.pending_message((r.pod_set.name, r.messages) for r in results if r.flavor is None)
    reason = max((r.reason for r in results if r.flavor is None), key=SEVERITY.__getitem__)
    return KueueVerdict(team, False, reason, message, tuple(results))
