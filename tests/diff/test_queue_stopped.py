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
