"""explain and the ClusterQueue's namespaceSelector: Kueue admits a workload only from a
namespace whose labels the selector matches (kueue v0.19.2 pkg/workload/resources.go:244-246);
explain reads the labels the core target writes (`plan.namespace_labels`, the team's
`namespaceLabels`) and answers as Kueue's scheduler does."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import bundled

from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.workload import from_manifest

NOW = dt.date(2026, 12, 1)
SELECTOR = "  kueue:\n    namespaceSelector:\n      matchLabels: {team: nlp}\n"


def _policy(tmp: Path, fields: str) -> Any:
    return run.load_policy([bundled.copy(tmp, team_fields=fields)], NOW)


def _job() -> dict[str, Any]:
    limits = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "ft-nlp",
            "labels": {"kueue.x-k8s.io/queue-name": "finetune-nlp"},
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "main", "resources": {"limits": limits, "requests": limits}}
                    ]
                }
            }
        },
    }


def test_a_namespace_the_selector_does_not_match_is_pending_as_kueue_says(tmp_path: Path) -> None:
    found = explain(_policy(tmp_path, SELECTOR), from_manifest(_job()), with_advice=False)
    assert (found.verdict, found.reason) == ("pending", "Misconfigured")
    assert found.message == "workload namespace doesn't match ClusterQueue selector"
    assert "add team: nlp to spec.namespaceLabels" in found.policy[0]


def test_the_namespace_labels_the_selector_matches_admit(tmp_path: Path) -> None:
    fields = SELECTOR + "  namespaceLabels: {team: nlp}\n"
    found = explain(_policy(tmp_path, fields), from_manifest(_job()), with_advice=False)
    assert found.reason != "Misconfigured", found.message
    assert found.verdict == "admitted", found.message


def test_a_pod_past_the_teams_own_accelerator_cap_is_refused_at_creation(tmp_path: Path) -> None:
    """`namespaceQuota.accelerators` caps nvidia.com/gpu at 1 (a cluster's own quota, kept by
    import): the second one-GPU pod is refused by the API server's quota admission, though
    Kueue would admit the job (plan.namespace_quota, the fact the render writes)."""
    fields = "  namespaceQuota:\n    accelerators: {nvidia.com/gpu: 1}\n"
    job = _job()
    job["spec"]["parallelism"] = 2
    found = explain(_policy(tmp_path, fields), from_manifest(job), with_advice=False)
    assert (found.verdict, found.reason) == ("rejected", "Forbidden")
    assert "requests.nvidia.com/gpu=1" in found.message, found.message
