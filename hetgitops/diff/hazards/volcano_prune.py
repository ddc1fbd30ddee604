"""Diff stage, day-2 hazard of Volcano Queues: a Queue the sync prunes (its pool or team left the
policy) while gangs run or wait in it.

Every Volcano: the scheduler ignores a job whose Queue does not exist, so a gang still waiting in
the Queue when it goes is never scheduled; one running keeps its pods. v1.14.1's queue-delete
check refuses only `default`, `root` and a queue with children.

From v1.15.0 the webhook manager has `--enable-queue-allocated-pods-check` (off by default).
With it, a Queue DELETE is refused while `status.allocated` counts pods ("queue %s cannot be
deleted because it has allocated Pods"); the scheduler counts one pod per allocated task and
writes it to the Queue. So under a declared Volcano >= 1.15 the prune may also be refused and the
sync stall until the gang ends; the policy does not say how the webhook is started, so the
hazard says "if". The upstream lines are in docs/upstream.md.
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
        "A Volcano Queue leaves the policy (its pool or team is removed): a gang still waiting "
        "in it when the sync prunes it is never scheduled (Volcano's scheduler ignores a job "
        "whose Queue does not exist). On Volcano 1.15 or later, a webhook started with "
        "--enable-queue-allocated-pods-check also refuses to delete a Queue whose "
        "status.allocated counts pods, so while a gang of the queue runs the prune fails and "
        "the sync stays unfinished."
    ),
    fix=(
        "let the queue's gangs finish or start (or move them to another queue) before the "
        "sync, or keep the quota entry that makes the queue one more change; `kubectl get "
        "podgroups -A` with the queue's name in `spec.queue` lists what is still in it."
    ),
)
def queue_pruned(
    before: Sequence[Manifest], after: Sequence[Manifest], volcano: tuple[int, ...] | None
) -> Iterator[Hazard]:
    """Volcano Queues on the base side only; the 1.15 delete check named when declared."""
    checked = volcano is not None and volcano >= CHECKED_FROM
    named = f"Volcano {'.'.join(map(str, volcano))}" if volcano is not None else "Volcano"
    old, new = _queues(before), _queues(after)
    for name in sorted(set(old) - set(new)):
        waiting = (
            "a gang still waiting in it when it goes is never scheduled (the scheduler ignores a "
            "job whose Queue does not exist)"
        )
        if checked:
            message = (
                f"leaves the policy, so the sync prunes it: {named}'s webhook, when started "
                "with --enable-queue-allocated-pods-check (off by default), refuses to delete "
                f'it while it has allocated pods ("queue {name} cannot be deleted because it has '
                'allocated Pods"), so while a gang of the queue runs the prune fails and the '
                f"sync stays unfinished; without the flag the Queue goes, the gang keeps running, "
                f"and {waiting}"
            )
        else:
            message = (
                f"leaves the policy, so the sync prunes it: {named} deletes a Queue whatever is "
                f"in it; a gang running there keeps its pods, but {waiting}"
            )
            if volcano is None:
                message += (
                    " (from Volcano 1.15, a webhook started with "
                    "--enable-queue-allocated-pods-check also refuses the delete while a gang runs)"
                )
        check = (
            f"; `kubectl get queue {name} -o jsonpath='{{.status.allocated.pods}}'` is empty or 0 "
            "when the prune will not be refused"
            if checked
            else ""
        )
        yield Hazard(
            rule="volcano-queue-pruned",
            subject=f"Queue {name}",
            message=message,
            action="let the queue's gangs finish or start (or move them) before the sync, or "
            "keep the quota entry that makes the queue one more change; `kubectl get podgroups "
            "-A -o custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,"
            f"QUEUE:.spec.queue,PHASE:.status.phase` lists the gangs, those in {name} among them"
            + check,
            span=old[name].origin,
            scope=(("volcanoqueue", name),),
        )
