"""Day 2 of a team's `kueue.stopPolicy`: a LocalQueue stopped by the policy holds its pending
work for good (Kueue: "LocalQueue Q is inactive"); `queue-stopped` says so, per LocalQueue, with
the work held there live (issue 38, item 9: the harness counts it as stranded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetgitops.diff.blast import LiveWork, annotate
from tests.diff.test_hazards import _compare

RULE = "queue-stopped"
RESEARCH = "  tiers: [dev, training]\n  lifecycleStages: [production, evaluation, pilot]"


def _stop(policy: str) -> tuple[str, str, str]:
    return ("teams/others.yaml", RESEARCH, f"{RESEARCH}\n  kueue: {{stopPolicy: {policy}}}")


def test_hold_names_each_localqueue_of_the_team_and_what_waits_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _compare(tmp_path, monkeypatch, [], [_stop("Hold")])
    assert not result.invalid
    found = [h for h in result.hazards if h.rule == RULE]
    assert [h.subject for h in found] == [
        "LocalQueue research-sandbox/research",
        "LocalQueue research/research",
    ]
    assert all("stopPolicy Hold" in h.message and "keep running" in h.message for h in found)
    assert all(h.span.file.endswith("others.yaml") for h in found)
    pending = {
        "metadata": {"name": "wl", "namespace": "research"},
        "spec": {"queueName": "research", "podSets": []},
        "status": {},
    }
    work = LiveWork(workloads=[pending], team_of_namespace={"research": "research"})
    live = {h.subject: h.live for h in annotate(found, work)}
    assert live["LocalQueue research/research"].endswith(
        "0 admitted and 1 pending workload(s) (research 1)"
    ), live


def test_hold_and_drain_says_it_evicts_and_lifting_the_hold_is_no_hazard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drain = _compare(tmp_path / "drain", monkeypatch, [], [_stop("HoldAndDrain")])
    assert all("evicts its admitted" in h.message for h in drain.hazards if h.rule == RULE)
    assert [h for h in drain.hazards if h.rule == RULE]
    lifted = _compare(tmp_path / "lift", monkeypatch, [_stop("Hold")], [])
    assert [h for h in lifted.hazards if h.rule == RULE] == []


def _workload(name: str, queue: str, owner: str, *, admitted: bool) -> dict[str, object]:
    conditions = [{"type": "QuotaReserved", "status": "True"}] if admitted else []
    return {
        "metadata": {"name": name, "namespace": "research", "ownerReferences": [{"uid": owner}]},
        "spec": {"queueName": queue, "podSets": []},
        "status": {"conditions": conditions, "admission": {"clusterQueue": "research"}}
        if admitted
        else {},
    }


def _pod(name: str, uid: str, owner: str = "", phase: str = "Running") -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": "research", "uid": uid}
    if owner:
        meta["ownerReferences"] = [{"uid": owner}]
    return {"metadata": meta, "spec": {"nodeName": "n1"}, "status": {"phase": phase}}


def test_hold_and_drain_counts_the_pods_of_what_it_evicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HoldAndDrain's live radius also counts the pods the eviction stops: those of the
    workloads admitted through the LocalQueue (a Job's pods through the Job, a bare pod that
    owns its Workload), not those of pending work, of another queue, or finished ones."""
    drain = _compare(tmp_path, monkeypatch, [], [_stop("HoldAndDrain")])
    found = [h for h in drain.hazards if h.rule == RULE]
    work = LiveWork(
        workloads=[
            _workload("job", "research", "job-uid", admitted=True),
            _workload("bare", "research", "bare-pod", admitted=True),
            _workload("waits", "research", "other-job", admitted=False),
            _workload("sandbox", "sandbox", "sandbox-job", admitted=True),
        ],
        pods=[
            _pod("job-0", "p0", "job-uid"),
            _pod("job-1", "p1", "job-uid"),
            _pod("job-2", "p2", "job-uid", phase="Succeeded"),
            _pod("bare", "bare-pod"),
            _pod("waits-0", "p3", "other-job", phase="Pending"),
            _pod("sandbox-0", "p4", "sandbox-job"),
        ],
        team_of_namespace={"research": "research"},
    )
    live = {h.subject: h.live for h in annotate(found, work)}
    assert live["LocalQueue research/research"].endswith(
        "2 admitted and 1 pending workload(s) (research 3); 3 pod(s) (research 3)"
    ), live
    held = _compare(tmp_path / "hold", monkeypatch, [], [_stop("Hold")])
    kept = {h.subject: h.live for h in annotate([h for h in held.hazards if h.rule == RULE], work)}
    assert "pod(s)" not in kept["LocalQueue research/research"], kept
