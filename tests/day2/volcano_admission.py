"""A faithful re-implementation of Volcano v1.15.1's Queue admission webhook, for replays.

Source: volcano-sh/volcano tag v1.15.1 (0a56ed33), pkg/webhooks/admission/queues/validate/
validate_queue.go; line numbers below are that file's. The webhook reads other queues from an
informer (`config.QueueLister`), so a request is judged against the queues stored *before* it;
a dry-run request is judged the same way but stores nothing (which is why a Flux stage that
dry-runs a parent and its new child together fails on the child).

Not modelled, because a rendered tree never exercises them: the hierarchy annotations
(:147-203, hetgitops writes none), `status.state` (:205-224, status is never authored), the
allocated-pods checks (:398-402, :310-315: they need running pods), and the mutating webhook
(it only fills reclaimable/weight, which the render writes out).

`Cluster(rules=V1_14)` replays v1.14.1 instead (same file at tag v1.14.1), the version the
simulated cluster runs (tests/harness/simcluster: v1.15.1 cannot be built from the module proxy);
tests/sim/test_sim_volcano_day2.py holds both against the real v1.14.1 webhook. v1.14.1 differs:
no depth limit and no root protection; validateResourceOfQueue compares capability, deserved and
guarantee with LessPartly(Zero) (a dimension capability leaves out counts as 0, not unlimited);
a child's capability is checked against its direct parent's only (LessPartly, :436-449) and a
parent's against each direct child's (:482-513); and children's guarantee / deserved sums are
checked against the parent's own guarantee / deserved when set, else against its capability,
else not at all (validateResourceLimit, :515-534).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hetgitops.model import quantities

ROOT, DEFAULT = "root", "default"
V1_15, V1_14 = "v1.15.1", "v1.14.1"
MAX_QUEUE_DEPTH = 5  # cmd/webhook-manager/app/options/options.go:36, --max-queue-depth
NATIVE = ("cpu", "memory", "pods", "ephemeral-storage")


class Rejected(Exception):
    """The webhook (or the API server) refused the request; the message says why."""


def _amounts(resources: Mapping[str, Any] | None) -> dict[str, Decimal]:
    return {name: quantities.value_of(q) for name, q in (resources or {}).items()}


def _less_partly_zero(parent: Mapping[str, Decimal], total: Mapping[str, Decimal]) -> bool:
    """api.Resource.LessPartly(rr, Zero), pkg/scheduler/api/resource_info.go:565-596: true if
    any dimension of `parent` is below `total`; cpu and memory count as 0 when unset, and a
    scalar resource present in `total` but absent from `parent` fails even at 0."""
    for name in ("cpu", "memory"):
        if parent.get(name, Decimal(0)) < total.get(name, Decimal(0)):
            return True
    scalars = [n for n in total if n not in ("cpu", "memory")]
    if any(n not in parent for n in scalars):
        return True
    return any(parent[n] < total[n] for n in scalars)


def _add(total: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Decimal(0)) + value


@dataclass
class Queue:
    name: str
    parent: str
    capability: dict[str, Decimal]
    deserved: dict[str, Decimal]
    guarantee: dict[str, Decimal]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Queue:
        spec = obj.get("spec") or {}
        return cls(
            name=obj["metadata"]["name"],
            # The queue controller patches `parent: root` into a queue that names none.
            parent=spec.get("parent") or ROOT,
            capability=_amounts(spec.get("capability")),
            deserved=_amounts(spec.get("deserved")),
            guarantee=_amounts((spec.get("guarantee") or {}).get("resource")),
        )


@dataclass
class Cluster:
    """The stored Queues, starting with the two the scheduler creates (cache.go:465-521)."""

    queues: dict[str, Queue] = field(
        default_factory=lambda: {
            ROOT: Queue(ROOT, "", {}, {}, {}),
            DEFAULT: Queue(DEFAULT, ROOT, {}, {}, {}),
        }
    )
    rules: str = V1_15

    def copy(self) -> Cluster:
        return Cluster(copy.deepcopy(self.queues), self.rules)

    def children(self, name: str) -> list[Queue]:
        return [q for q in self.queues.values() if q.parent == name and q.name != ROOT]

    # -- requests -------------------------------------------------------------------------

    def apply(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> None:
        """CREATE if absent, else UPDATE (what `kubectl apply` and server-side apply send)."""
        queue = Queue.of(obj)
        old = self.queues.get(queue.name)
        self.admit(queue, old)
        if not dry_run:
            self.queues[queue.name] = queue

    def delete(self, name: str, *, dry_run: bool = False) -> None:
        """validateQueueDeleting, :295-330."""
        if name in (DEFAULT, ROOT):
            raise Rejected(f"`{name}` queue can not be deleted")
        if name not in self.queues:
            return  # NotFound: nothing to prune
        children = self.children(name)
        if children:
            names = ", ".join(sorted(c.name for c in children))
            raise Rejected(f"queue {name} can not be deleted because it has child queues: {names}")
        if not dry_run:
            del self.queues[name]

    # -- AdmitQueues, :73-129 ---------------------------------------------------------------

    def admit(self, queue: Queue, old: Queue | None) -> None:
        if self.rules == V1_14:
            _validate_quantities_v1_14(queue)  # validateQueue -> validateResourceOfQueue
        else:
            _validate_quantities(queue)  # validateQueue -> validateResourceQuantityOfQueue
        if old is None or old.parent != queue.parent:
            self._validate_hierarchical_queue(queue)
        # EnableRootQueueProtection (default true): root's numbers cannot change.
        if (
            self.rules == V1_15
            and queue.name == ROOT
            and old is not None
            and (queue.capability, queue.deserved, queue.guarantee)
            != (old.capability, old.deserved, old.guarantee)
        ):
            raise Rejected("root queue's resource attributes cannot be modified")
        if self._needs_hierarchy_check(queue, old):
            self._validate_resources(queue)

    def _needs_hierarchy_check(self, queue: Queue, old: Queue | None) -> bool:
        """needsValidateHierarchicalQueue, :336-371."""
        if queue.name == ROOT:
            return False
        if old is None:
            return True
        return (queue.parent, queue.capability, queue.deserved, queue.guarantee) != (
            old.parent,
            old.capability,
            old.deserved,
            old.guarantee,
        )

    def _validate_hierarchical_queue(self, queue: Queue) -> None:
        """validateHierarchicalQueue, :373-408: self-parent, depth (:504-522), parent exists."""
        if queue.parent in ("", ROOT):
            return
        if queue.parent == queue.name:
            raise Rejected(f"queue {queue.name} cannot use itself as parent")
        depth, parent = 1, queue.parent
        while parent not in ("", ROOT):
            depth += 1
            if depth > MAX_QUEUE_DEPTH and self.rules == V1_15:
                raise Rejected(f"queue {queue.name} exceeds the maximum allowed depth")
            if parent not in self.queues:
                raise Rejected(f"failed to get parent queue {parent} of queue {queue.name}")
            parent = self.queues[parent].parent
        if queue.parent not in self.queues:
            raise Rejected(f"failed to get parent queue of queue {queue.name}: not found")

    def _validate_resources(self, queue: Queue) -> None:
        """validateHierarchicalQueueResources, :531-572."""
        if queue.parent not in ("", ROOT):
            parent = self.queues.get(queue.parent)
            if parent is None:
                raise Rejected(f"parent queue {queue.parent} not found")
            siblings = [q for q in self.children(parent.name) if q.name != queue.name]
            if self.rules == V1_14:
                if _less_partly_zero(parent.capability, queue.capability):
                    raise Rejected(f"queue {queue.name} capability exceeds parent queue's")
                _sums_within_v1_14(parent, [*siblings, queue], f"parent queue {parent.name}")
            else:
                self._child_against_ancestor(queue)
                _sums_within(parent, [*siblings, queue], f"parent queue {parent.name}")
        children = self.children(queue.name)
        if children and self.rules == V1_14:
            for child in children:
                if _less_partly_zero(queue.capability, child.capability):
                    raise Rejected(f"queue {queue.name} capability is less than child queue's")
            _sums_within_v1_14(queue, children, f"queue {queue.name}")
        elif children:
            self._children_constraints(queue, children)

    def _child_against_ancestor(self, child: Queue) -> None:
        """validateChildAgainstAncestor :574-591 with findNearestAncestorCapability :442-461
        (the nearest ancestor whose capability for the resource is > 0)."""
        for name, value in child.capability.items():
            parent = child.parent
            while parent not in ("", ROOT) and parent in self.queues:
                limit = self.queues[parent].capability.get(name, Decimal(0))
                if limit > 0:
                    if value > limit:
                        raise Rejected(
                            f"queue {child.name} capability[{name}] exceeds its ancestor's"
                        )
                    break
                parent = self.queues[parent].parent

    def _subtree_max(self, queue: Queue, name: str) -> Decimal:
        """findSubtreeMaxCapability, :464-487."""
        own = queue.capability.get(name, Decimal(0))
        if own > 0:
            return own
        values = [self._subtree_max(c, name) for c in self.children(queue.name)]
        return max(values, default=Decimal(0))

    def _children_constraints(self, parent: Queue, children: list[Queue]) -> None:
        """validateChildrenConstraints, :634-685."""
        for name, value in parent.capability.items():
            deepest = max((self._subtree_max(c, name) for c in children), default=Decimal(0))
            if value < deepest:
                raise Rejected(
                    f"queue {parent.name} capability[{name}] is smaller than its descendants'"
                )
        _sums_within(parent, children, f"queue {parent.name}")


def _validate_quantities(queue: Queue) -> None:
    """validateResourceQuantityOfQueue, :227-293 (ValidateResourceQuantityValue: >= 0, whole
    numbers for extended resources)."""
    for values in (queue.capability, queue.deserved, queue.guarantee):
        for name, value in values.items():
            if value < 0:
                raise Rejected(f"{queue.name}: {name} must be >= 0")
            if name not in NATIVE and "/" in name and value != value.to_integral_value():
                raise Rejected(f"{queue.name}: {name} must be a whole number")
    for name, value in queue.guarantee.items():
        if name not in queue.deserved or queue.deserved[name] < value:
            raise Rejected(f"{queue.name}: deserved[{name}] must be >= guarantee[{name}]")
    for name, value in queue.deserved.items():
        if name in queue.capability and value > queue.capability[name]:
            raise Rejected(f"{queue.name}: deserved[{name}] must be <= capability[{name}]")


def _sums_within(parent: Queue, children: list[Queue], who: str) -> None:
    """validateSiblingsSum :593-631 / the sum half of validateChildrenConstraints: running
    sums of guarantee and deserved checked with LessPartly(Zero) after each child."""
    guarantee: dict[str, Decimal] = {}
    deserved: dict[str, Decimal] = {}
    for child in children:
        _add(guarantee, child.guarantee)
        if _less_partly_zero(parent.guarantee, guarantee):
            raise Rejected(f"{who}: sum of children's guarantee exceeds the parent's")
        _add(deserved, child.deserved)
        if _less_partly_zero(parent.deserved, deserved):
            raise Rejected(f"{who}: sum of children's deserved exceeds the parent's")


def _validate_quantities_v1_14(queue: Queue) -> None:
    """v1.14.1 validateResourceOfQueue, :221-265: >= 0 (and whole extended resources), then
    LessPartly(Zero) comparisons, so a dimension that capability leaves out counts as 0."""
    for values in (queue.capability, queue.deserved, queue.guarantee):
        for name, value in values.items():
            if value < 0:
                raise Rejected(f"{queue.name}: {name} must be >= 0")
            if name not in NATIVE and "/" in name and value != value.to_integral_value():
                raise Rejected(f"{queue.name}: {name} must be a whole number")
    if queue.capability and _less_partly_zero(queue.capability, queue.deserved):
        raise Rejected(f"{queue.name}: deserved should less equal than capability")
    if queue.capability and _less_partly_zero(queue.capability, queue.guarantee):
        raise Rejected(f"{queue.name}: guarantee should less equal than capability")
    if queue.guarantee and _less_partly_zero(queue.deserved, queue.guarantee):
        raise Rejected(f"{queue.name}: guarantee should less equal than deserved")


def _sums_within_v1_14(parent: Queue, children: list[Queue], who: str) -> None:
    """v1.14.1 validateResourceLimit, :515-534: against the parent's own guarantee / deserved
    if set, else its capability, else unchecked."""
    for kind in ("guarantee", "deserved"):
        total: dict[str, Decimal] = {}
        for child in children:
            _add(total, getattr(child, kind))
        limit = getattr(parent, kind) or parent.capability
        if limit and _less_partly_zero(limit, total):
            raise Rejected(f"{who}: sum of children's {kind} exceeds the parent's")
