"""Day 2 of `spec.volcano.layout`: a team switching between a leaf per pool and one queue across
its pools deletes the queues its jobs are in (`volcano-queue-layout-switched`), on any Volcano
version (the 1.15 queue-delete check is `volcano-queue-pruned`'s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hetgitops.diff.blast import LiveWork, annotate
from tests.diff.test_hazards import _compare

RULE = "volcano-queue-layout-switched"
TEAM = ("teams/training.yaml", "volcano: {weight: 4}", "volcano: {weight: 4, layout: team}")
LEAVES = ["pretraining-a100-transition", "pretraining-a800-train", "pretraining-ascend-910b"]


def test_leaves_to_one_team_queue_names_each_deleted_leaf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _compare(tmp_path, monkeypatch, [], [TEAM])
    assert not result.invalid
    found = [h for h in result.hazards if h.rule == RULE]
    assert [h.subject for h in found] == [f"Queue {name}" for name in LEAVES]
    assert all("become pretraining:" in h.message for h in found)
    assert all(h.span.file.endswith("training.yaml") and h.span.line > 1 for h in found)
    work = LiveWork(
        podgroups=[
            {
                "metadata": {"name": "gang", "namespace": "pretrain"},
                "spec": {"queue": LEAVES[1], "minMember": 2},
                "status": {"phase": "Running", "running": 2},
            },
            {
                "metadata": {"name": "waits", "namespace": "pretrain"},
                "spec": {"queue": LEAVES[1], "minMember": 4},
                "status": {"phase": "Inqueue"},
            },
            {
                "metadata": {"name": "done", "namespace": "pretrain"},
                "spec": {"queue": LEAVES[1], "minMember": 1},
                "status": {"phase": "Completed"},
            },
        ],
        team_of_namespace={"pretrain": "pretraining"},
    )
    live = {h.subject: h.live for h in annotate(found, work)}
    # The waiting gang is what the switch strands (never scheduled); the finished one is not.
    assert live[f"Queue {LEAVES[1]}"].endswith(
        "1 running and 1 waiting PodGroup(s) (pretraining 2)"
    )


def test_one_team_queue_back_to_leaves_names_the_team_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _compare(tmp_path, monkeypatch, [TEAM], [])
    assert [h.subject for h in result.hazards if h.rule == RULE] == ["Queue pretraining"]


def test_a_change_within_one_layout_is_no_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weight = ("teams/training.yaml", "weight: 4, layout", "weight: 5, layout")
    result = _compare(tmp_path, monkeypatch, [TEAM], [TEAM, weight])
    assert not result.invalid
    assert [h for h in result.hazards if h.rule == RULE] == []
