"""Hazard `namespace-unselected`: a team namespace its ClusterQueue stops selecting (labels or
selector changed). Kueue checks the selector only at admission (kueue v0.19.2
pkg/scheduler/scheduler.go:683-692); its namespace watch only retries the queues a relabelled
namespace newly matches (pkg/controller/core/clusterqueue_controller.go:451-462), so admitted
workloads keep running and new ones stay pending."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from hetgitops.diff.hazards import hazards
from hetgitops.output.manifests import Manifest
from tests.diff.test_golden import run_edits

KUEUE = "kueue.x-k8s.io/v1beta2"


def _ns(labels: dict[str, str]) -> Manifest:
    meta: dict[str, Any] = {"name": "ads", "labels": labels}
    return Manifest("core", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta})


def _cq(selector: dict[str, Any]) -> Manifest:
    obj = {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "ads"}}
    return Manifest("kueue", {**obj, "spec": {"namespaceSelector": selector}})


LQ = Manifest(
    "kueue",
    {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": "ads", "namespace": "ads"},
        "spec": {"clusterQueue": "ads"},
    },
)
TEAM = {"matchLabels": {"team": "ads"}}


def test_a_label_the_selector_matches_removed_is_a_hazard() -> None:
    before = [_ns({"team": "ads"}), _cq(TEAM), LQ]
    (found,) = hazards(before, [_ns({}), _cq(TEAM), LQ], [])
    assert (found.rule, found.subject) == ("namespace-unselected", "Namespace ads")
    assert "admitted ones keep running" in found.message


def test_a_narrowed_selector_is_a_hazard() -> None:
    narrowed = {
        "matchLabels": {"team": "ads"},
        "matchExpressions": [{"key": "gpu", "operator": "Exists"}],
    }
    before = [_ns({"team": "ads"}), _cq(TEAM), LQ]
    assert [h.rule for h in hazards(before, [_ns({"team": "ads"}), _cq(narrowed), LQ], [])] == [
        "namespace-unselected"
    ]


def test_labels_still_selected_are_quiet() -> None:
    before = [_ns({"team": "ads"}), _cq(TEAM), LQ]
    after = [_ns({"team": "ads", "env": "prod"}), _cq(TEAM), LQ]
    assert hazards(before, after, []) == []
    assert hazards([_ns({}), _cq(TEAM), LQ], [_ns({}), _cq(TEAM), LQ], []) == []


def test_diff_says_it_for_a_policy_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled fleet's finetune-nlp labelled `team: nlp` with a selector on it; the head
    relabels it so the selector misses: diff names the new error and what it does to running
    work (the head does not validate, so it has no manifests to judge hazards on)."""
    from tests.diff import scenarios

    anchor = "  namespaces: [ft-nlp]\n"
    said = anchor + "  namespaceLabels: {team: nlp}\n  kueue:\n    namespaceSelector:\n"
    said += "      matchLabels: {team: nlp}\n"
    copy = tmp_path / "bundled"
    shutil.copytree(scenarios.BUNDLED, copy)
    teams = copy / "teams" / "training.yaml"
    assert anchor in teams.read_text()
    teams.write_text(teams.read_text().replace(anchor, said))
    monkeypatch.setattr(scenarios, "BUNDLED", copy)
    edit = ("teams/training.yaml", "{team: nlp}\n  kueue", "{team: nlp2}\n  kueue")
    result = run_edits(tmp_path / "run", monkeypatch, [edit])
    (new,) = [d for d in result.introduced if d.rule == "namespace-selector-misses"]
    assert "workloads it admitted keep running and new ones stay pending" in new.message
    assert new.span.file == "head/teams/training.yaml"
    assert any(r.startswith("new error: namespace-selector-misses") for r in result.risks)
