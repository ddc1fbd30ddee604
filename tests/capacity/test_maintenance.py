"""`capacity --without NODES|POOL`: the maintenance plan of the bundled fleet, from the policy
(what remains, teams short, borrowing that ends, MIG drains, the kubectl sequence) and with
live Workloads read through a stand-in cluster."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from hetgitops.capacity import maintenance_live
from hetgitops.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "schemas" / "maintenance.schema.json").read_text("utf-8"))
NOW = "2026-12-05"


def _plan(*args: str, fmt: str = "json") -> Any:
    cmd = ["capacity", str(REPO / "policies"), "--now", NOW, "--format", fmt, *args]
    result = CliRunner().invoke(main, cmd)
    assert result.exit_code == 0, result.output
    if fmt != "json":
        return result.stdout
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


def _rows(data: Mapping[str, Any], key: str, *fields: str) -> list[tuple[Any, ...]]:
    return [tuple(row[f] for f in fields) for row in data[key]]


def test_rack_of_h100_mig_nodes() -> None:
    data = _plan("--without", "rack=rack-b02")
    assert data["nodes"] == [
        {
            "pool": "h100-infer",
            "nodes": ["gpu-h100-004", "gpu-h100-005", "gpu-h100-006"],
            "cards": 24,
        }
    ]
    assert _rows(data, "cardTypes", "cardType", "before", "after") == [("h100-80gb", 48, 24)]
    assert _rows(data, "resources", "resource", "before", "after", "nominal", "shortfall") == [
        ("nvidia.com/gpu", 24, 12, 24, 12),
        ("nvidia.com/mig-1g.10gb", 84, 42, 84, 42),
        ("nvidia.com/mig-3g.40gb", 24, 12, 24, 12),
    ]
    assert ("research", "nvidia.com/mig-1g.10gb", 28, 28) in _rows(
        data, "teamsShort", "team", "resource", "nominal", "unbacked"
    )
    assert ("online-inference", "nvidia.com/gpu", 4, 0) in _rows(
        data, "borrowingEnds", "team", "resource", "before", "after"
    )
    drains = data["migDrains"]
    assert [d["node"] for d in drains] == ["gpu-h100-004", "gpu-h100-005", "gpu-h100-006"]
    assert drains[0]["gpus"][:3] == [
        {"index": 0, "profiles": {"1g.10gb": 7}},
        {"index": 1, "profiles": {"1g.10gb": 7}},
        {"index": 2, "profiles": {"3g.40gb": 2}},
    ]


def test_sequence_cordons_then_taints_then_drains_and_waits_for_mig() -> None:
    commands = [s["command"] for s in _plan("--without", "gpu-h100-004")["steps"]]
    assert commands == [
        "kubectl cordon gpu-h100-004",
        "kubectl taint nodes gpu-h100-004 hetgitops.io/maintenance=planned:NoSchedule",
        "kubectl drain gpu-h100-004 --ignore-daemonsets --delete-emptydir-data",
        "kubectl wait node/gpu-h100-004 "
        "--for=jsonpath='{.metadata.labels.nvidia\\.com/mig\\.config\\.state}'=success",
        "kubectl taint nodes gpu-h100-004 hetgitops.io/maintenance-",
        "kubectl uncordon gpu-h100-004",
    ]


def test_pool_taint_keys_are_named_and_not_tolerating_the_maintenance_key() -> None:
    steps = _plan("--without", "gpu-a800-016")["steps"]
    assert "hetgitops.io/pool=a800-train:NoSchedule" in steps[1]["why"]
    assert "do not match hetgitops.io/maintenance" in steps[1]["why"]
    assert "topology-aware" in steps[0]["why"]  # the bundled fleet's flavors are TAS


def test_one_a800_node_leaves_every_team_there_short_by_eight() -> None:
    data = _plan("--without", "gpu-a800-016")
    assert _rows(data, "teamsShort", "team", "nominal", "unbacked") == [
        ("finetune-nlp", 24, 8),
        ("finetune-vision", 24, 8),
        ("pretraining", 80, 8),
    ]
    assert data["migDrains"] == [] and data["borrowingEnds"] == []


def test_a_whole_pool_and_patterns_and_commas() -> None:
    pool = _plan("--without", "l40s-infer")
    patterns = _plan("--without", "gpu-l40s-0[1-2],gpu-l40s-03", "--without", "gpu-l40s-04")
    assert pool["resources"] == patterns["resources"]
    assert _rows(pool, "resources", "after") == [(0,)]


def test_unknown_selector_is_a_usage_error() -> None:
    cmd = ["capacity", str(REPO / "policies"), "--without", "rack=b02"]
    result = CliRunner().invoke(main, cmd)
    assert result.exit_code == 2 and "rack=b02" in result.output


def test_text_and_markdown() -> None:
    text = _plan("--without", "gpu-a800-016", fmt="text")
    assert text.startswith(
        "Without gpu-a800-016: 1 node(s), 8 card(s) out of pool(s) a800-train (1)"
    )
    assert "  1. kubectl cordon gpu-a800-016\n" in text
    markdown = _plan("--without", "gpu-a800-016", fmt="markdown")
    assert "| finetune-nlp | a800-train | nvidia.com/gpu | whole | 24 | 8 |" in markdown
    assert "```sh\nkubectl cordon gpu-a800-016  # " in markdown


def _pod(name: str, node: str, owner: str, *, phase: str = "Running", kind: str = "Job") -> Any:
    return {
        "metadata": {
            "name": name,
            "namespace": "pretrain",
            "uid": f"pod-{name}",
            "ownerReferences": [{"kind": kind, "uid": owner}],
        },
        "spec": {"nodeName": node},
        "status": {"phase": phase},
    }


def _workload(name: str, owner: str, priority: int | None, *, admitted: bool = True) -> Any:
    status = "True" if admitted else "False"
    return {
        "metadata": {"name": name, "namespace": "pretrain", "ownerReferences": [{"uid": owner}]},
        "spec": {} if priority is None else {"priority": priority},
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": status}],
            "admission": {"clusterQueue": "pretraining"},
        },
    }


WORKLOADS = [
    _workload("jobset-mid", "jobset-1", 5000),
    _workload("job-high", "job-1", 10000),
    _workload("job-low", "job-2", None),
    _workload("job-pending", "job-3", 500, admitted=False),
    _workload("job-elsewhere", "job-4", 1),
]
PODS = [
    _pod("high-0", "gpu-a800-016", "job-1"),
    _pod("high-1", "gpu-a800-015", "job-1"),
    _pod("low-0", "gpu-a800-016", "job-2"),
    _pod("low-done", "gpu-a800-016", "job-2", phase="Succeeded"),
    _pod("pending-0", "gpu-a800-016", "job-3"),
    _pod("elsewhere-0", "gpu-a800-001", "job-4"),
    _pod("exporter", "gpu-a800-016", "ds-1", kind="DaemonSet"),
    _pod("jobset-0", "gpu-a800-016", "job-9"),  # its Job is the JobSet's
]
JOBS = [{"metadata": {"name": "js-main", "uid": "job-9", "ownerReferences": [{"uid": "jobset-1"}]}}]


def test_on_nodes_lists_admitted_workloads_lowest_priority_first() -> None:
    live = maintenance_live.on_nodes(WORKLOADS, PODS, {"gpu-a800-016", "gpu-a800-015"}, jobs=JOBS)
    assert [(w.name, w.priority, w.pods, w.nodes) for w in live.workloads] == [
        ("job-low", 0, 1, ("gpu-a800-016",)),
        ("jobset-mid", 5000, 1, ("gpu-a800-016",)),
        ("job-high", 10000, 2, ("gpu-a800-015", "gpu-a800-016")),
    ]
    assert (live.other_pods, live.daemon_pods) == (1, 1)  # the pending job's pod; the exporter
    without_jobs = maintenance_live.on_nodes(WORKLOADS, PODS, {"gpu-a800-016"})
    assert "jobset-mid" not in [w.name for w in without_jobs.workloads]


class _Cluster:
    """Stands in for live.client.Cluster: LISTs answered from memory, nothing written."""

    listed: list[str] = []

    def __init__(self, kubeconfig: Any, context: Any) -> None:
        self.server, self.requests = "https://stand-in", 0

    def list(self, resource: Any, *, selector: str = "") -> list[Any]:
        self.requests += 1
        _Cluster.listed.append(resource.kind)
        return {"Workload": WORKLOADS, "Pod": PODS, "Job": JOBS}[resource.kind]

    def close(self) -> None:
        pass


def test_live_mode_reads_workloads_and_pods_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import hetgitops.live.client as client

    monkeypatch.setattr(client, "Cluster", _Cluster)
    _Cluster.listed = []
    config = tmp_path / "kubeconfig"
    config.write_text("{}")
    data = _plan("--without", "gpu-a800-016", "--kubeconfig", str(config))
    assert _Cluster.listed == ["Workload", "Pod", "Job"]
    assert [(w["name"], w["priority"], w["pods"]) for w in data["live"]["workloads"]] == [
        ("job-low", 0, 1),
        ("jobset-mid", 5000, 1),
        ("job-high", 10000, 1),
    ]
    text = _plan("--without", "gpu-a800-016", "--kubeconfig", str(config), fmt="text")
    assert "3 admitted Workload(s) on the nodes, lowest priority first" in text


def test_kubeconfig_needs_without() -> None:
    result = CliRunner().invoke(main, ["capacity", str(REPO / "policies"), "--context", "x"])
    assert result.exit_code == 2


def test_preemption_seam_takes_the_live_workloads_and_the_reduced_policy() -> None:
    """issue 37 item 1's model plugs in here: it is asked with the policy during the window."""
    import datetime as dt

    from hetgitops.capacity import maintenance
    from hetgitops.explain import run
    from hetgitops.plan.maintenance import PENDING, Readmission

    class Model:
        def readmit(
            self, policy: Any, reduced: Any, workloads: Any, leaving: Any
        ) -> list[Readmission]:
            cards = sum(n.cards for n in reduced.pools["a800-train"].nodes)
            assert len(workloads) == 4  # every quota-holding Workload read
            return [Readmission(f"{name}@{cards}", "", 0, (), PENDING) for name in leaving]

    policy = run.load_policy([REPO / "policies"], dt.date(2026, 12, 5))
    live = maintenance_live.on_nodes(WORKLOADS, PODS, {"gpu-a800-016"})
    plan = maintenance.build(policy, ["gpu-a800-016"], live=live, preemption=Model())
    assert [r.name for r in plan.readmissions or ()] == [
        "pretrain/job-low@120",
        "pretrain/job-high@120",
    ]  # no Jobs given
    assert maintenance.build(policy, ["gpu-a800-016"], preemption=Model()).readmissions is None
