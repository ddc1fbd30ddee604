"""Diff stage, day-2 hazard of Volcano Queues: a team switches between one leaf per pool and one
queue across its pools (`spec.volcano.layout`), so its jobs' queue is deleted under them.

The switch deletes the old Queues and creates the new one in one sync. Volcano's webhook lets a
Queue with jobs go (it refuses only `root`, `default` and a queue with child queues; 1.15's
optional allocated-pods check is `volcano-queue-pruned`'s). What is left in the old queue then:
the scheduler's snapshot leaves out every job whose queue is gone, so a pending gang stays
pending for good; running pods keep running on their nodes but count against no queue (the new
queue's capability does not see them); a new Volcano Job naming the old queue is refused by the
job webhook. Job templates from `hetgitops jobs` name the new queue once regenerated. Where
upstream does each: docs/upstream.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hetgitops.diff.hazards.reading import by_kind
from hetgitops.diff.hazards.registry import Hazard, hazard_rule
from hetgitops.output.manifests import Manifest

VOLCANO_API = "scheduling.volcano.sh/"


def _layouts(manifests: Sequence[Manifest]) -> dict[str, dict[str, Manifest]]:
    """Per team, its Volcano Queues by name, as the team and pool labels say."""
    teams: dict[str, dict[str, Manifest]] = {}
    for name, m in by_kind(manifests, "Queue").items():
        if not str(m.obj.get("apiVersion", "")).startswith(VOLCANO_API):
            continue
        labels = (m.obj.get("metadata") or {}).get("labels") or {}
        team = next((str(v) for k, v in labels.items() if str(k).endswith("/team")), "")
        if team:
            teams.setdefault(team, {})[name] = m
    return teams


def _spans(queues: dict[str, Manifest]) -> bool:
    """Whether the team's queues are one queue across its pools (no pool label)."""
    return any(
        not any(str(k).endswith("/pool") for k in (m.obj["metadata"].get("labels") or {}))
        for m in queues.values()
    )


@hazard_rule(
    "volcano-queue-layout-switched",
    when=(
        "A team switches between one Volcano leaf queue per pool and one queue across its pools "
        "(spec.volcano.layout): the sync deletes the old Queues, which Volcano allows with jobs "
        "in them; their pending jobs are never scheduled again and new jobs naming them are "
        "refused."
    ),
    fix=(
        "let the old queues' jobs finish (or delete and resubmit the pending ones to the new "
        "queue) before the sync; regenerate job templates (`hetgitops jobs`) so they name the "
        "new queue."
    ),
)
def layout_switched(before: Sequence[Manifest], after: Sequence[Manifest]) -> Iterator[Hazard]:
    """Teams whose Queues are leaves on one side and a team queue on the other."""
    old, new = _layouts(before), _layouts(after)
    for team in sorted(set(old) & set(new)):
        if _spans(old[team]) == _spans(new[team]):
            continue
        now = ", ".join(sorted(new[team]))
        for name in sorted(set(old[team]) - set(new[team])):
            yield Hazard(
                rule="volcano-queue-layout-switched",
                subject=f"Queue {name}",
                message=f"team {team}'s Volcano queues become {now}: the sync deletes {name}, "
                "which Volcano allows with jobs in it; a job still pending there is never "
                "scheduled (its queue is not found), a running one keeps running counted against "
                f"no queue, and a new Job naming {name} is refused by the job webhook",
                action=f"before the sync, let the jobs in {name} finish or resubmit the pending "
                f"ones to {now} (`kubectl get podgroups -A` shows each one's spec.queue); "
                "regenerate job templates with `hetgitops jobs`; a tool prunes only what it "
                f"applied itself: if {name} stays after the sync (Flux skips an object without "
                "its kustomize.toolkit.fluxcd.io labels, e.g. one another tool recreated), "
                "delete it once its jobs are gone",
                span=next(iter(new[team].values())).origin,
                scope=(("volcanoqueue", name),),
            )
