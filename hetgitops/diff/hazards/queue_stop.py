"""Diff stage, day-2 hazard of a team's `kueue.stopPolicy`: a LocalQueue that goes from None to
Hold or HoldAndDrain (the team's ClusterQueue with it) leaves its pending work waiting for good.

Kueue takes a stopped LocalQueue out of its queueing system and reports it inactive; its
pending workloads say "LocalQueue Q is inactive" and are admitted again only once the policy is
None. HoldAndDrain also evicts its admitted workloads. Where upstream does each:
docs/upstream.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hetgitops.diff.hazards.reading import kept, spec_of
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.output.manifests import Manifest


def _policy(m: Manifest) -> str:
    return str(spec_of(m).get("stopPolicy") or "None")


@hazard_rule(
    "queue-stopped",
    when=(
        "A team's queues get a stopPolicy (kueue.stopPolicy Hold or HoldAndDrain): Kueue takes "
        "each LocalQueue out of its queueing system, so the work pending there waits until the "
        "policy is None again (LocalQueue is inactive); HoldAndDrain also evicts what is admitted."
    ),
    fix="move the pending jobs that must run to another queue before the sync, or set the "
    "stopPolicy back to None once the hold is over.",
)
def queue_stopped(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Each LocalQueue on both sides whose stopPolicy goes from None to another value."""
    for key, old, new in kept(before, after, "LocalQueue"):
        if _policy(old) != "None" or _policy(new) == "None":
            continue
        name, policy = key.split("/", 1)[1], _policy(new)
        drained = (
            "; HoldAndDrain also evicts its admitted workloads (they requeue, pending too)"
            if policy == "HoldAndDrain"
            else "; admitted ones keep running"
        )
        yield Hazard(
            rule="queue-stopped",
            subject=f"LocalQueue {key}",
            message=f"gets stopPolicy {policy}: Kueue stops queueing its workloads; those pending "
            f'stay pending until the policy is None again ("LocalQueue {name} is inactive")'
            f"{drained}",
            action=f"move the jobs that must run from queue {name} to another queue before the "
            "sync, or set the team's kueue.stopPolicy back to None when the hold is over",
            span=new.origin,
            scope=(("localqueue", key),)
            + ((("drained", key),) if policy == "HoldAndDrain" else ()),
        )
