"""Diff stage, day-2 hazard of Volcano Queues: a Queue the sync prunes (its pool or team left the
policy) while a gang runs in it, on a Volcano whose webhook can refuse the delete.

Volcano v1.15.0 added `--enable-queue-allocated-pods-check` to the webhook manager (off by default).
With it, a Queue DELETE is refused while `status.allocated` counts pods ("queue %s cannot be deleted
because it has allocated Pods"); the scheduler counts one pod per allocated task and writes it to
the Queue. v1.14.1's validateQueueDeleting has no such check: the Queue goes and the gang keeps
running. So under a declared Volcano >= 1.15 the prune may be refused and the sync stall until the
gang ends; the policy does not say how the webhook is started, so the hazard says "if".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hetgitops.diff.hazards.reading import by_kind
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.output.manifests import Manifest

VOLCANO_API = "scheduling.volcano.sh/"
# The first Volcano whose webhook has the queue-delete check.
CHECKED_FROM = (1, 15)


def _queues(manifests: Sequence[Manifest]) -> dict[str, Manifest]:
    return {
        name: m
        for name, m in by_kind(manifests, "Queue").items()
        if str(m.obj.get("apiVersion", "")).startswith(VOLCANO_API)
    }


@hazard_rule(
    "volcano-queue-pruned",
    when=(
        "A Volcano Queue leaves the policy (its pool or team is removed) on a Volcano of 1.15 "
        "or later: a webhook started with --enable-queue-allocated-pods-check refuses to delete "
        "a Queue whose status.allocated counts pods, so the prune fails and the sync stays "
        "unfinished while a gang of the queue runs."
    ),
    fix=(
        "let the queue's running gangs finish (or move them) before the sync, or keep the "
        "quota entry that makes the queue one more change; `kubectl get queue NAME -o "
        "jsonpath='{.status.allocated.pods}'` says when it is empty."
    ),
)
def queue_pruned(
    before: Sequence[Manifest], after: Sequence[Manifest], volcano: tuple[int, ...] | None
) -> Iterator[Hazard]:
    """Volcano Queues on the base side only, when the declared Volcano has the check."""
    if volcano is None or volcano < CHECKED_FROM:
        return
    version = ".".join(map(str, volcano))
    old, new = _queues(before), _queues(after)
    for name in sorted(set(old) - set(new)):
        yield Hazard(
            rule="volcano-queue-pruned",
            subject=f"Queue {name}",
            message=f"leaves the policy, so the sync prunes it: Volcano {version}'s webhook, when "
            "started with --enable-queue-allocated-pods-check (off by default), refuses to "
            f'delete it while it has allocated pods ("queue {name} cannot be deleted because it '
            'has allocated Pods"), so while a gang of the queue runs the prune fails and the '
            "sync stays unfinished; without the flag the Queue goes, the gang keeps running, "
            "and a gang still waiting in it is never scheduled",
            action="let the queue's running gangs finish (or move them) before the sync, or keep "
            "the "
            f"quota entry that makes the queue one more change; `kubectl get queue {name} -o "
            "jsonpath='{.status.allocated.pods}'` is empty or 0 when it is safe",
            span=old[name].origin,
            scope=(("volcanoqueue", name),),
        )
