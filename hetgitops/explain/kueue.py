"""Kueue v0.19.2's flavor assignment replayed over the team's ClusterQueue, as hetgitops
renders it (`compilers.kueue_flavors`, `plan.quota_plan`).

Order and messages follow pkg/scheduler/flavorassigner/flavorassigner.go at v0.19.2:
- pod sets are assigned one after another; the first that gets no flavor ends the attempt
  (:793-862), and their requests add up per flavor (`assignmentUsage`);
- a requested resource no resource group covers: "resource R unavailable in ClusterQueue"
  (:1069-1072), no flavor tried, reason NoMatchingFlavor (:952-956);
- flavors in the ClusterQueue's order (:1086-1093); a flavor whose nodeLabels the pod's node
  selector contradicts: "flavor F doesn't match node affinity" (:1236-1252, only the flavor's
  own label keys count), NoMatchingFlavor (:1100-1108); before it, a flavor nodeTaint
  (NoSchedule / NoExecute) that neither the pod's nor the flavor's tolerations tolerate:
  "untolerated taint {KEY VALUE EFFECT <nil>} in flavor F" (:1236-1243, Go's %v of a
  corev1.Taint). hetgitops renders one such flavor: a pool's `spec.kueue.retiringFlavor`,
  listed after the pool's new flavor with the retiring taint (compilers/kueue_queues.py
  transition_quotas), while the new flavor's quota is the team's less what the retiring one
  holds (all of it unless `holds` says less);
- per resource, usage + request > PotentialAvailable: "insufficient quota for R in flavor F,
  previously considered podsets requests (a) + current podset request (b) > maximum capacity
  (c)", ExceedsMaxQuota (:1343-1358); above Available: "insufficient unused quota for R in
  flavor F, N more needed", WaitingForQuota (:1366-1368);
- flavorFungibility: whenCanBorrow MayStopSearch stops at the first flavor that fits, borrowing
  or not; TryNextFlavor looks on for one that fits without borrowing (:1172-1186, :1257-1275);
- reasons of all flavors tried are sorted and joined by ", " (Status.Message, :353-362), pod
  sets by "; " after "couldn't assign flavors to pod set P: " (:227-245);
- the overall reason: per pod set the least severe of its flavors' reasons, across pod sets the
  most severe (:943-990; NoMatchingFlavor > ExceedsMaxQuota > WaitingForQuota >
  TopologyPlacementFailed, :298-326);
- with a Topology (every flavor of a fleet with `topology`), the chosen flavors are then placed
  on nodes (:873-900, pkg/cache/scheduler/tas_flavor_snapshot.go); a ClusterQueue whose flavors
  all name a topology gets TAS for every pod set, annotated or not (tas_flavorassigner.go
  :218-221, `isTASImplied`), and placement adds the flavor's tolerations to the pod's
  (tas_flavor_snapshot.go:961): a pod set that fits no
  domain is "topology "T" doesn't allow to fit any of N pod(s)" or "allows to fit only k out of
  N pod(s)" (:1997-2016), TopologyPlacementFailed.
The reason tokens are those of Kueue's UnadmittedWorkloadsObservability gate (off by default in
v0.19.2: the condition's reason is then `Pending`, the message the same)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hetgitops.compilers.agents import tolerates
from hetgitops.compilers.kueue_flavors import (
    resource_flavor,
    retiring_taint,
    topology_levels,
    topology_name,
)
from hetgitops.explain.nodes import NodeView, limiting, pool_nodes, selects, slots, untolerated
from hetgitops.explain.workload import PodSet
from hetgitops.model.policy import Policy, Team
from hetgitops.plan.quota_plan import (
    HOST_RESOURCES,
    FlavorPlan,
    Limits,
    Reach,
    accelerator_resources,
    cohort_root,
    kueue_amount,
    reach,
    team_plan,
)

NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
SEVERITY = {
    "": 0,
    TOPOLOGY_PLACEMENT_FAILED: 1,
    WAITING_FOR_QUOTA: 2,
    EXCEEDS_MAX_QUOTA: 3,
    NO_MATCHING_FLAVOR: 4,
}

# (team, pool, resource) -> what the team's admitted workloads hold, Kueue's integers.
Usage = Mapping[tuple[str, str, str], int]


@dataclass(frozen=True)
class Flavor:
    """One flavor of the team's ClusterQueue, in its order."""

    name: str
    plan: FlavorPlan
    node_labels: Mapping[str, str]
    tolerations: tuple[Mapping[str, Any], ...]
    topology: str | None
    # Kueue-side taints (only a retiring flavor has one: it admits nothing new).
    node_taints: tuple[Mapping[str, Any], ...] = ()


def flavors(policy: Policy, team: Team) -> list[Flavor]:
    """The ClusterQueue's flavors in its order: per pool the pool's flavor, then its retiring
    flavor when it has one (kueue_queues.transition_quotas)."""
    fleet = policy.fleet
    found = []
    for plan in team_plan(policy, team):
        if fleet is None:
            continue
        obj = resource_flavor(policy, fleet, plan.pool)
        spec = obj["spec"]
        found.append(
            Flavor(
                obj["metadata"]["name"],
                plan,
                spec.get("nodeLabels") or {},
                tuple(spec.get("tolerations") or ()),
                spec.get("topologyName"),
            )
        )
        retiring = plan.pool.retiring_flavor
        if retiring is not None:
            found.append(
                Flavor(
                    retiring.name,
                    plan,
                    retiring.spec.get("nodeLabels") or {},
                    tuple(retiring.spec.get("tolerations") or ()),
                    retiring.spec.get("topologyName"),
                    (retiring_taint(policy),),
                )
            )
    return found


def _go_taint(taint: Mapping[str, Any]) -> str:
    """A corev1.Taint as Kueue's "%s" prints it: {Key Value Effect TimeAdded}."""
    return f"{{{taint.get('key', '')} {taint.get('value', '')} {taint.get('effect', '')} <nil>}}"


def transition_reach(policy: Policy) -> Reach:
    """`reach(policy)` with each pool in a flavor transition cut as the ClusterQueues are:
    the new flavor's nominal less what the retiring flavor holds per team and resource (all
    of it unless `holds` says less), lendingLimit clamped to it (kueue_queues._reduced), and
    what the cohort lends recomputed from that."""
    base = reach(policy)
    pools = {p.name: p for p in policy.pools.values() if p.retiring_flavor is not None}
    if not pools:
        return base
    cut: dict[tuple[str, str], dict[str, Limits]] = {}
    for (team_name, pool_name), limits in base.limits.items():
        pool = pools.get(pool_name)
        if pool is None or pool.retiring_flavor is None:
            continue
        holds = pool.retiring_flavor.holds.get(team_name, {})
        reduced = {}
        for resource, (nominal, borrowing, lending) in limits.items():
            held = holds.get(resource)
            left = 0 if held is None else max(0, nominal - kueue_amount(resource, held))
            reduced[resource] = (left, borrowing, None if lending is None else min(lending, left))
        cut[team_name, pool_name] = reduced
    return base.with_limits(cut)


def covered(policy: Policy, team: Team) -> list[str]:
    return [*HOST_RESOURCES, *accelerator_resources(team_plan(policy, team))]


class Quotas:
    """Kueue's Available and PotentialAvailable for a team's flavor and resource, from the
    plan's limits (`Reach.limits`) and what every queue already uses. Cohorts below the root
    carry no quota of their own, so the tree folds to its root (resource_node.go:74-122)."""

    def __init__(self, policy: Policy, usage: Usage | None = None) -> None:
        self.policy = policy
        self.reach: Reach = transition_reach(policy)
        self.usage: Usage = usage or {}
        self.borrowed: Counter[tuple[str, str, str]] = Counter()
        for (team_name, pool, resource), used in self.usage.items():
            team = policy.teams.get(team_name)
            if team is None or team.cohort is None:
                continue
            guaranteed = self._guaranteed(team_name, pool, resource)
            root = cohort_root(policy, team.cohort)
            self.borrowed[root, pool, resource] += max(0, used - guaranteed)

    def _limits(self, team: str, pool: str, resource: str) -> tuple[int, int | None, int | None]:
        return self.reach.limits.get((team, pool), {}).get(resource, (0, None, None))

    def _guaranteed(self, team: str, pool: str, resource: str) -> int:
        nominal, _, lending = self._limits(team, pool, resource)
        return 0 if lending is None else max(0, nominal - lending)

    def nominal(self, team: Team, pool: str, resource: str) -> int:
        return self._limits(team.name, pool, resource)[0]

    def potential(self, team: Team, plan: FlavorPlan, resource: str) -> int:
        return self.reach.most(team, plan.pool, resource) or 0

    def used(self, team: Team, pool: str, resource: str) -> int:
        return self.usage.get((team.name, pool, resource), 0)

    def available(self, team: Team, plan: FlavorPlan, resource: str) -> int:
        pool = plan.pool.name
        nominal, borrowing, _ = self._limits(team.name, pool, resource)
        used = self.used(team, pool, resource)
        if team.cohort is None:
            return nominal - used
        guaranteed = self._guaranteed(team.name, pool, resource)
        local = max(0, guaranteed - used)
        root = cohort_root(self.policy, team.cohort)
        subtree = self.reach.lent[root, pool, resource]
        parent = subtree - self.borrowed[root, pool, resource]
        if borrowing is not None:
            stored = nominal - guaranteed
            parent = min(stored - max(0, used - guaranteed) + borrowing, parent)
        return local + parent


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


@dataclass(frozen=True)
class Placement:
    """Where the pod set's pods would go: the topology domain and nodes (TAS)."""

    level: str | None
    domain: tuple[str, ...]
    nodes: tuple[str, ...]


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
    # Earlier scheduling cycles that ended in a topology placement failure, each resumed by
    # the next from the flavor after the one it tried (oldest first).
    cycles: tuple[KueueVerdict, ...] = ()


def fmt(resource: str, amount: int) -> str:
    """Kueue's resourceFormatter: cpu back from milli-units, others as plain integers."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if resource == "memory":
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount and amount % size == 0:
                return f"{amount // size}{suffix}"
    return str(amount)


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
        keys = set(flavor.node_labels)
        relevant = {k: v for k, v in pod_set.node_selector.items() if k in keys}
        return selects(relevant, flavor.node_labels)

    def _quota(self, flavor: Flavor, pod_set: PodSet, used: Counter[tuple[str, str]]) -> Attempt:
        mode, reason, messages, borrowing = "fit", "", [], {}
        for resource in sorted(r for r in pod_set.requests if r in self.covered):
            request = pod_set.total(resource)
            if request == 0:
                continue
            before = used[flavor.name, resource]
            value = before + request
            most = self.quotas.potential(self.team, flavor.plan, resource)
            if value > most:
                messages.append(
                    f"insufficient quota for {resource} in flavor {flavor.name}, previously "
                    f"considered podsets requests ({fmt(resource, before)}) + current podset "
                    f"request ({fmt(resource, request)}) > maximum capacity "
                    f"({fmt(resource, most)})"
                )
                mode, reason = "nofit", _worse(reason, EXCEEDS_MAX_QUOTA)
                continue
            available = self.quotas.available(self.team, flavor.plan, resource)
            if value > available:
                messages.append(
                    f"insufficient unused quota for {resource} in flavor {flavor.name}, "
                    f"{fmt(resource, value - available)} more needed"
                )
                mode, reason = "nofit", _worse(reason, WAITING_FOR_QUOTA)
                continue
            nominal = self.quotas.nominal(self.team, flavor.plan.pool.name, resource)
            held = self.quotas.used(self.team, flavor.plan.pool.name, resource)
            if held + value > nominal:
                borrowing[resource] = held + value - nominal
                if mode == "fit":
                    mode = "borrow"
        return Attempt(flavor.name, flavor.plan.pool.name, mode, reason, tuple(messages), borrowing)

    def _mismatch(self, flavor: Flavor, pod_set: PodSet) -> str | None:
        """checkFlavorForPodSets (flavorassigner.go:1208-1257): the TAS match first
        (tas_flavorassigner.go:166-204), then the flavor's nodeTaints (a retiring flavor's),
        then the pod's node selector on the flavor's own label keys."""
        explicit = pod_set.required_topology or pod_set.preferred_topology
        if explicit and not self.tas_only:
            if flavor.topology is None:
                return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
        elif explicit and flavor.topology is not None and self.policy.fleet is not None:
            if explicit not in topology_levels(self.policy, self.policy.fleet):
                return f'Flavor "{flavor.name}" does not contain the requested level'
        elif not explicit and not self.tas_only and flavor.topology is not None:
            return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
        tolerations = [*pod_set.tolerations, *flavor.tolerations]
        for taint in flavor.node_taints:
            effect = taint.get("effect", "")
            if effect in ("NoSchedule", "NoExecute") and not tolerates(
                tolerations, taint.get("key", ""), taint.get("value"), effect
            ):
                return f"untolerated taint {_go_taint(taint)} in flavor {flavor.name}"
        if not self._selector_fits(flavor, pod_set):
            return f"flavor {flavor.name} doesn't match node affinity"
        return None

    def _find_flavor(
        self, pod_set: PodSet, used: Counter[tuple[str, str]], start: int
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
            mismatch = self._mismatch(flavor, pod_set)
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
                if chosen is None:
                    chosen = attempt
                if self.when_can_borrow != "TryNextFlavor":
                    break
        if chosen is None:
            return attempts, None, -1
        return attempts, chosen, -1 if tried == len(self.flavors) - 1 else tried

    def _pod_set(
        self, pod_set: PodSet, used: Counter[tuple[str, str]], start: int = 0
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
                message = f"resource {resource} unavailable in ClusterQueue"
                return PodSetResult(
                    pod_set, tuple(attempts), None, (message,), NO_MATCHING_FLAVOR, None, missing
                )
            if searched:
                continue  # the group's flavor already covers it (flavorassigner.go:820-824)
            searched = True
            attempts, chosen, tried = self._find_flavor(pod_set, used, start)
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
        """Scheduling cycles as Kueue runs them for a new workload. A cycle whose topology
        placement fails leaves LastTriedFlavorIdx behind; while some pod set's is not -1 the
        workload goes straight back to the queue (cluster_queue.go:679, `PendingFlavors`)
        and the next cycle resumes each pod set's scan at the flavor after it
        (flavorassigner.go:1088-1090). What the user sees is the last cycle's verdict."""
        starts = [0] * len(pod_sets)
        earlier: list[KueueVerdict] = []
        while True:
            verdict = self._cycle(pod_sets, starts)
            placement_failed = verdict.reason == TOPOLOGY_PLACEMENT_FAILED
            tried = [r.last_tried for r in verdict.pod_sets]
            if (
                not placement_failed
                or all(t == -1 for t in tried)
                or len(earlier) > len(self.flavors)
            ):
                return replace(verdict, cycles=tuple(earlier))
            earlier.append(verdict)
            starts = [t + 1 if t != -1 else 0 for t in tried] + [0] * (len(pod_sets) - len(tried))

    def _cycle(self, pod_sets: tuple[PodSet, ...], starts: list[int]) -> KueueVerdict:
        used: Counter[tuple[str, str]] = Counter()
        results: list[PodSetResult] = []
        for pod_set, start in zip(pod_sets, starts, strict=True):
            result = self._pod_set(pod_set, used, start)
            results.append(result)
            if result.flavor is None:
                return _verdict(self.team.name, results, pending=result)
            for resource in pod_set.requests:
                used[result.flavor.flavor, resource] += pod_set.total(resource)
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
            placement, message = self._place_one(flavor, result.pod_set, free)
            if message:
                # The pod set keeps its flavor scan's progress (LastTriedFlavorIdx), the
                # others theirs (flavorassigner.go:866-878).
                failed = replace(
                    result, flavor=None, messages=(message,), reason=TOPOLOGY_PLACEMENT_FAILED
                )
                return [*placed, failed, *results[index + 1 :]]
            placed.append(replace(result, placement=placement))
        return placed

    def _place_one(
        self, flavor: Flavor, pod_set: PodSet, free: dict[str, dict[str, int]]
    ) -> tuple[Placement | None, str]:
        fleet = self.policy.fleet
        assert fleet is not None
        levels = topology_levels(self.policy, fleet)
        name = topology_name(self.policy, fleet)
        selector = {**pod_set.node_selector, **flavor.node_labels}
        tolerations = (*pod_set.tolerations, *flavor.tolerations)
        nodes: list[NodeView] = []
        excluded: Counter[str] = Counter()
        all_nodes = pool_nodes(self.policy, flavor.plan.pool)
        for node in all_nodes:
            if not selects(selector, node.labels):
                excluded["nodeSelector"] += 1
                continue
            taint = untolerated(node, tolerations)
            if taint is not None:
                excluded[f'taint "{taint.key}={taint.value or ""}:{taint.effect}"'] += 1
                continue
            nodes.append(node)
        accel = {r: n for r, n in pod_set.requests.items() if r not in ("cpu", "memory", "pods")}
        room: dict[str, int] = {}
        for node in nodes:
            left = free.setdefault(node.name, dict(self.node_free.get(node.name, node.units)))
            room[node.name] = slots(node, pod_set.requests, left)
            if room[node.name] == 0:
                excluded[f'resource "{limiting(node, pod_set.requests, left)}"'] += 1
        required = pod_set.required_topology
        level = required or pod_set.preferred_topology
        count = pod_set.count
        domains = self._domains(nodes, level if level in levels else None)
        best = _best_domain(domains, room, count)
        if best is None and required is None:
            best = () if sum(room.values()) >= count else None
            domains = {(): nodes}
        if best is None:
            if required is not None:
                fit = max((_room(d, room) for d in domains.values()), default=0)
            else:
                fit = sum(room.values())
            head = (
                f'topology "{name}" doesn\'t allow to fit any of {count} pod(s)'
                if fit == 0
                else f'topology "{name}" allows to fit only {fit} out of {count} pod(s)'
            )
            if excluded:
                reasons = ", ".join(sorted(f"{k}: {v}" for k, v in excluded.items()))
                head += f". Total nodes: {len(all_nodes)}; excluded: {reasons}"
            return None, head
        taken: list[str] = []
        left_count = count
        for node in sorted(domains[best], key=lambda n: (-room[n.name], n.name)):
            take = min(room[node.name], left_count)
            if take <= 0:
                continue
            left_count -= take
            taken.append(node.name)
            for resource, amount in pod_set.requests.items():
                if resource in accel or resource in free[node.name]:
                    free[node.name][resource] = free[node.name].get(resource, 0) - amount * take
        return Placement(level if best else None, best, tuple(sorted(taken))), ""

    def _domains(
        self, nodes: list[NodeView], level: str | None
    ) -> dict[tuple[str, ...], list[NodeView]]:
        """Nodes grouped by their values of the topology levels down to `level`; one group of
        every node without a level."""
        fleet = self.policy.fleet
        assert fleet is not None
        if level is None:
            return {(): nodes}
        levels = topology_levels(self.policy, fleet)
        depth = levels.index(level) + 1
        groups: dict[tuple[str, ...], list[NodeView]] = {}
        for node in nodes:
            key = tuple(node.labels.get(label, "") for label in levels[:depth])
            groups.setdefault(key, []).append(node)
        return groups


def fnv1a64(name: str) -> int:
    """hashResourceName (pkg/resources/slice_requests.go:35-43): the key Kueue's SliceRequests
    keep resources sorted by (ties by name, :54-59)."""
    value = 0xCBF29CE484222325
    for byte in name.encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def _room(nodes: list[NodeView], room: Mapping[str, int]) -> int:
    return sum(room[n.name] for n in nodes)


def _best_domain(
    domains: Mapping[tuple[str, ...], list[NodeView]], room: Mapping[str, int], count: int
) -> tuple[str, ...] | None:
    """BestFit: the domain with the least room that still holds every pod, ties by name."""
    fitting = [(_room(n, room), key) for key, n in domains.items() if _room(n, room) >= count]
    return min(fitting)[1] if fitting else None


def _worse(a: str, b: str) -> str:
    return a if SEVERITY[a] >= SEVERITY[b] else b


def _verdict(team: str, results: list[PodSetResult], pending: PodSetResult | None) -> KueueVerdict:
    if pending is None:
        return KueueVerdict(team, True, "", "", tuple(results))
    parts = [
        f"couldn't assign flavors to pod set {r.pod_set.name}: {', '.join(r.messages)}"
        for r in results
        if r.flavor is None
    ]
    reason = max((r.reason for r in results if r.flavor is None), key=SEVERITY.__getitem__)
    return KueueVerdict(team, False, reason, "; ".join(parts), tuple(results))
