"""The cohort tree's quota arithmetic the preemptor asks about, replayed from Kueue v0.19.2
pkg/cache/scheduler/resource_node.go (cited per function): SubtreeQuota, Usage that bubbles up
past a node's lending-limited local quota, Available, PotentialAvailable, and the
"within nominal" tests.

Why apart from the preemptor (`preemption.py`): this is the snapshot Kueue's preemptor removes
workloads from and adds them back to; the preemptor only walks candidates over it. Amounts are
Kueue's integers per (flavor, resource): a flavor is a pool here. A missing borrowing limit is
unlimited (Python's ints need no saturating arithmetic)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

FR = tuple[str, str]  # (flavor, resource): Kueue's resources.FlavorResource
CQ, COHORT = "cq", "cohort"
NodeKey = tuple[str, str]  # (CQ | COHORT, name): a ClusterQueue and a Cohort may share a name


@dataclass(frozen=True)
class Quota:
    """One ResourceQuota: nominalQuota, borrowingLimit and lendingLimit (None: unset)."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass
class Node:
    key: NodeKey
    parent: Node | None
    quotas: Mapping[FR, Quota]
    children: list[Node] = field(default_factory=list)
    subtree: dict[FR, int] = field(default_factory=dict)
    usage: dict[FR, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.key[1]

    def local_quota(self, fr: FR) -> int:
        """Capacity the node never lends to its parent (resource_node.go:67-72)."""
        lending = self.quotas[fr].lending_limit if fr in self.quotas else None
        return max(0, self.subtree.get(fr, 0) - lending) if lending is not None else 0

    def local_available(self, fr: FR) -> int:
        """LocalAvailable (resource_node.go:92-95)."""
        return max(0, self.local_quota(fr) - self.usage.get(fr, 0))

    def nominal(self, fr: FR) -> int:
        return self.quotas[fr].nominal if fr in self.quotas else 0

    def borrowing_with(self, fr: FR, value: int) -> bool:
        """A ClusterQueue: nominal < usage + value (clusterqueue_snapshot.go:163-165); a Cohort:
        its SubtreeQuota < usage + value (cohort_snapshot.go:90-92)."""
        limit = self.nominal(fr) if self.key[0] == CQ else self.subtree.get(fr, 0)
        return limit < self.usage.get(fr, 0) + value

    def within_nominal(self, frs: set[FR]) -> bool:
        """IsWithinNominalInResources (resource_node.go:247-254): usage <= SubtreeQuota."""
        return all(self.subtree.get(fr, 0) >= self.usage.get(fr, 0) for fr in frs)

    def path_to_root(self) -> Iterator[Node]:
        """The ancestors, parent first (PathParentToRoot)."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def cohorts(self) -> list[Node]:
        return [c for c in self.children if c.key[0] == COHORT]

    def queues(self) -> list[Node]:
        return [c for c in self.children if c.key[0] == CQ]


def fits_in_quota(node: Node, requests: Mapping[FR, int]) -> tuple[bool, dict[FR, int]]:
    """QuantitiesFitInQuota (resource_node.go:233-243): whether the requests fit the node's
    SubtreeQuota, and what remains beyond its local quota for the parent."""
    fits = all(node.subtree.get(fr, 0) >= node.usage.get(fr, 0) + v for fr, v in requests.items())
    remaining = {fr: max(0, v - node.local_available(fr)) for fr, v in requests.items()}
    return fits, remaining


def available(node: Node, fr: FR) -> int:
    """available (resource_node.go:106-122): local capacity plus the parent's, capped by the
    borrowing limit less what the node already stores and uses in its parent."""
    if node.parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    parent = available(node.parent, fr)
    borrowing = node.quotas[fr].borrowing_limit if fr in node.quotas else None
    if borrowing is not None:
        local = node.local_quota(fr)
        stored = node.subtree.get(fr, 0) - local
        used = max(0, node.usage.get(fr, 0) - local)
        parent = min(stored - used + borrowing, parent)
    return node.local_available(fr) + parent


def cq_available(node: Node, fr: FR) -> int:
    """ClusterQueueSnapshot.Available: never below 0 (clusterqueue_snapshot.go:171-173)."""
    return max(0, available(node, fr))


def potential_available(node: Node, fr: FR) -> int:
    """potentialAvailable (resource_node.go:129-140): the most the node could ever hold."""
    if node.parent is None:
        return node.subtree.get(fr, 0)
    most = node.local_quota(fr) + potential_available(node.parent, fr)
    borrowing = node.quotas[fr].borrowing_limit if fr in node.quotas else None
    if borrowing is not None:
        most = min(node.subtree.get(fr, 0) + borrowing, most)
    return most


def add_usage(node: Node, fr: FR, value: int) -> None:
    """addUsage (resource_node.go:144-152): what exceeds the local quota bubbles up."""
    local = node.local_available(fr)
    node.usage[fr] = node.usage.get(fr, 0) + value
    if node.parent is not None and value > local:
        add_usage(node.parent, fr, value - local)


def remove_usage(node: Node, fr: FR, value: int) -> None:
    """removeUsage (resource_node.go:156-165)."""
    stored = node.usage.get(fr, 0) - node.local_quota(fr)
    node.usage[fr] = node.usage.get(fr, 0) - value
    if stored <= 0 or node.parent is None:
        return
    remove_usage(node.parent, fr, min(value, stored))


def accumulate(node: Node) -> None:
    """updateCohortResourceNode / accumulateFromChild (resource_node.go:190-227): a queue's
    SubtreeQuota is its nominal; a cohort's is its own plus what each child may lend."""
    node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    for child in node.children:
        accumulate(child)
        for fr, quota in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, 0) + quota - child.local_quota(fr)


def lowest_subtree_that_fits(node: Node, fr: FR, value: int) -> tuple[int, bool]:
    """FindHeightOfLowestSubtreeThatFits (classical/hierarchical_preemption.go:221-234): the
    height of the lowest subtree lending `value`, and whether that is below the whole tree
    (the flavor assigner's mayReclaimInHierarchy)."""
    if not node.borrowing_with(fr, value) or node.parent is None:
        return 0, node.parent is not None
    remaining = value - node.local_available(fr)
    for tracking in node.path_to_root():
        if not tracking.borrowing_with(fr, remaining):
            return height(tracking), tracking.parent is not None
        remaining -= tracking.local_available(fr)
    return height(node.root()), False


def height(node: Node) -> int:
    """getNodeHeight (hierarchical_preemption.go:209-215)."""
    most = min(len(node.children), 1)
    for child in node.cohorts():
        most = max(most, height(child) + 1)
    return most
