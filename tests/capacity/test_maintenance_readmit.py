"""`capacity --without --kubeconfig`: what Kueue does with the admitted Workloads on the nodes
(re-admitted, preempting others, pending), in Kueue's order, from the one preemption model,
read through a stand-in cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from hetgitops.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "schemas" / "maintenance.schema.json").read_text("utf-8"))
FLAVOR = "a800-train-6db26c16"  # the bundled a800-train pool's ResourceFlavor


def _workload(name: str, cq: str, priority: int, gpus: int, created: str) -> Any:
    return {
        "metadata": {
            "name": name,
            "namespace": cq,
            "ownerReferences": [{"uid": f"job-{name}"}],
            "creationTimestamp": created,
        },
        "spec": {"priority": priority},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "lastTransitionTime": created},
                {"type": "Admitted", "status": "True", "lastTransitionTime": created},
            ],
            "admission": {
                "clusterQueue": cq,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {"nvidia.com/gpu": FLAVOR},
                        "resourceUsage": {"nvidia.com/gpu": str(gpus)},
                        "count": 1,
                    }
                ],
            },
        },
    }


def _pod(name: str, node: str) -> Any:
    return {
        "metadata": {
            "name": f"{name}-0",
            "namespace": "x",
            "ownerReferences": [{"kind": "Job", "uid": f"job-{name}"}],
        },
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


# gpu-a800-016 leaves 120 of the pool's 128 GPUs. Pods on it (the stand-in does not check
# node sizes): pre-high, vis-low and nlp-late, 8 GPUs each. The other 120 GPUs are held by
# pretraining's bulk (64), finetune-nlp (24 nominal + 16 borrowed) and finetune-vision (8 + 8):
# with the lending limits (16, 6, 6) pretraining's quota lacks 2 GPUs to take pre-high back.
WORKLOADS = [
    _workload("pre-high", "pretraining", 10000, 8, "2026-12-01T00:00:00Z"),
    _workload("vis-low", "finetune-vision", 100, 8, "2026-12-04T00:00:00Z"),
    _workload("nlp-late", "finetune-nlp", 100, 8, "2026-12-03T00:00:00Z"),
    _workload("pre-bulk", "pretraining", 5000, 64, "2026-12-01T00:00:00Z"),
    _workload("nlp-a", "finetune-nlp", 1000, 24, "2026-12-01T00:00:00Z"),
    _workload("nlp-borrow", "finetune-nlp", 1000, 16, "2026-12-02T00:00:00Z"),
    _workload("vis-a", "finetune-vision", 1000, 8, "2026-12-01T00:00:00Z"),
    _workload("vis-tiny", "finetune-vision", 10, 8, "2026-12-01T00:00:00Z"),
]
NODES = dict.fromkeys(["pre-high", "vis-low", "nlp-late"], "gpu-a800-016")
PODS = [
    _pod(w["metadata"]["name"], NODES.get(w["metadata"]["name"], "gpu-a800-001")) for w in WORKLOADS
]


class _Cluster:
    """Stands in for live.client.Cluster: LISTs answered from memory, nothing written."""

    def __init__(self, kubeconfig: Any, context: Any) -> None:
        self.server, self.requests = "https://stand-in", 0

    def list(self, resource: Any, *, selector: str = "") -> list[Any]:
        self.requests += 1
        return {"Workload": WORKLOADS, "Pod": PODS, "Job": []}[resource.kind]

    def close(self) -> None:
        pass


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fmt: str) -> str:
    import hetgitops.live.client as client

    monkeypatch.setattr(client, "Cluster", _Cluster)
    config = tmp_path / "kubeconfig"
    config.write_text("{}")
    cmd = ["capacity", str(REPO / "policies"), "--now", "2026-12-05", "--format", fmt]
    without = ["--without", "gpu-a800-016", "--kubeconfig", str(config)]
    result = CliRunner().invoke(main, [*cmd, *without])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_readmissions_in_kueue_order_with_victims_and_pending(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = json.loads(_run(monkeypatch, tmp_path, "json"))
    jsonschema.validate(data, SCHEMA)
    rows = data["readmissions"]
    # Kueue takes the higher priority first, then the earlier created
    # (cluster_queue.go:1074-1090); a victim is queued again (preemptedBy).
    assert [(r["name"], r["outcome"], r.get("preemptedBy")) for r in rows] == [
        ("pretraining/pre-high", "preempts", None),
        ("finetune-nlp/nlp-borrow", "pending", "pretraining/pre-high"),
        ("finetune-nlp/nlp-late", "readmitted", None),  # created before vis-low
        ("finetune-vision/vis-low", "preempts", None),
        ("finetune-vision/vis-tiny", "pending", "finetune-vision/vis-low"),
    ]
    # Quota: pretraining lacks 2 GPUs (lending limits), it reclaims what finetune-nlp borrows.
    assert [(v["name"], v["reason"]) for v in rows[0]["preempts"]] == [
        ("finetune-nlp/nlp-borrow", "InCohortReclamation")
    ]
    assert rows[0]["preempts"][0]["setting"].startswith("reclaimWithinCohort: Any")
    assert "waits until 2 nvidia.com/gpu are released" in rows[1]["why"][0]
    assert rows[2]["preempts"] == [] and rows[2]["why"] == []
    # Nodes: vis-low's quota fits, the nodes left are full; the topology-aware flavor turns to
    # Preempt and Kueue preempts a lower priority Workload of its own ClusterQueue.
    assert [(v["name"], v["reason"]) for v in rows[3]["preempts"]] == [
        ("finetune-vision/vis-tiny", "InClusterQueue")
    ]
    assert "have 0 nvidia.com/gpu free and it holds 8" in rows[4]["why"][0]


def test_text_and_markdown_say_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    text = _run(monkeypatch, tmp_path, "text")
    assert (
        "What Kueue does with them and those they preempt, in the order it processes them" in text
    )
    assert "1. pretraining/pre-high (priority 10000" in text
    assert "preempts finetune-nlp/nlp-borrow (ClusterQueue finetune-nlp, priority 1000)" in text
    assert (
        "2. finetune-nlp/nlp-borrow (priority 1000, ClusterQueue finetune-nlp, a800-train), "
        "preempted by pretraining/pre-high: stays pending" in text
    )
    assert "3. finetune-nlp/nlp-late" in text and "4. finetune-vision/vis-low" in text
    assert "stays pending" in text
    markdown = _run(monkeypatch, tmp_path, "markdown")
    assert "### What Kueue does with them" in markdown


def test_offline_plan_has_no_readmissions() -> None:
    cmd = ["capacity", str(REPO / "policies"), "--now", "2026-12-05", "--format", "json"]
    result = CliRunner().invoke(main, [*cmd, "--without", "gpu-a800-016"])
    assert "readmissions" not in json.loads(result.stdout)
