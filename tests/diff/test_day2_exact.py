"""Issue 38, the five day-2 answers made exact: each hazard tested against `diff` on policy
pairs (or the manifests it reads), with its live radius where it has one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hetgitops.diff.blast import LiveWork, annotate
from hetgitops.diff.hazards import hazards
from hetgitops.output.manifests import Manifest
from tests.diff.test_blast import TEAMS, pod


def _priority_class(name: str, value: int) -> Manifest:
    obj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    return Manifest("core", obj)


def test_a_recreated_priority_class_counts_the_tier_pods_a_controller_could_recreate() -> None:
    """(3) Pods of the tier that a controller owns are what it recreates while the class is
    gone; a bare pod (no owner), a finished one and another tier's are not counted."""
    (recreated,) = hazards([_priority_class("online", 1000)], [_priority_class("online", 2000)], [])
    work = LiveWork(
        pods=[
            pod("d-0", "serve", "n1", priorityClassName="online"),
            pod("d-1", "serve", "n2", priorityClassName="online"),
            pod("bare", "serve", "n2", priorityClassName="online", owners=[]),
            pod("t-0", "train", "n1", priorityClassName="training"),
            {**pod("done", "serve", "n1", priorityClassName="online"), "status": {"phase": "Failed"}},
        ],
        team_of_namespace=TEAMS,
    )
    (counted,) = annotate([recreated], work)
    assert counted.live == (
        "live: of the tier that a controller could recreate during the gap (refused while the "
        "class is gone): 2 pod(s) (online-inference 2)"
    )
