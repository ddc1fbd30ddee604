"""Preemption with topology (issue 37): Kueue's workloadFits also needs a topology placement of
the job's pods on what the removals free (preemption.go:676-680), quota that fits on fragmented
nodes turns every resource of the pod set to Preempt (flavorassigner.go:860-899), and a job no
empty node holds preempts nothing. Measured in the simulated fleet: 10 of 216 probes where the
quota-only model named victims and Kueue preempted none (docs/explain.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from hetgitops.explain import run
from hetgitops.explain.preemption_input import read_usage
from hetgitops.explain.preemption_report import preempt
from hetgitops.explain.request import Request, from_request
from hetgitops.explain.state import Holder
from hetgitops.explain.tas_usage import node_free, placed
from hetgitops.live import workloads

REPO = Path(__file__).resolve().parents[2]
USAGE = REPO / "examples" / "preempt" / "usage.yaml"
GPU = "nvidia.com/gpu"


@pytest.fixture(scope="module")
def policy() -> Any:
    return run.load_policy([REPO / "policies"], "2026-12-01")


def node(k: int) -> str:
    return f"gpu-a800-{k:03d}"


def holders(policy: Any, where: dict[str, dict[int, int]]) -> list[Holder]:
    """The bundled usage file's a800-train workloads, each placed on the nodes `where` says
    (node number -> GPUs)."""
    found = read_usage(policy, USAGE.read_text("utf-8"), str(USAGE))
    return [
        dataclasses.replace(h, placed={node(k): {GPU: n} for k, n in where[h.name].items()})
        for h in found
        if h.name in where
    ]


BASE = {
    "pt/pretrain-main": {k: 8 for k in range(1, 9)},
    "ft-nlp/sft-a": {9: 8, 10: 8, 11: 8},
}


def ask(policy: Any, gpus: int, per_node: int) -> Any:
    request = Request("pretraining", gpus, "a800-80gb", per_node=per_node, tier="training")
    return from_request(policy, request)


def test_a_victim_whose_cards_are_split_over_two_nodes_frees_no_node(policy: Any) -> None:
    """sft-b's 8 cards are 4 + 4 on two nodes: gone, no node has room for a pod of 8, so Kueue
    goes on to ablation-1 (whole on one node), and fill-back keeps sft-b: one victim, another
    one than quota alone picks."""
    where = {
        **BASE,
        "ft-vision/vit-a": {12: 8, 13: 8, 14: 4, 15: 4},
        "ft-nlp/sft-b": {14: 4, 15: 4},
        "pt/ablation-1": {16: 8},
    }
    held = holders(policy, where)
    quota_only = preempt(
        policy, ask(policy, 8, 8), [dataclasses.replace(h, placed={}) for h in held]
    )
    assert [v.name for v in quota_only.victims] == ["ft-nlp/sft-b"]
    report = preempt(policy, ask(policy, 8, 8), held)
    assert report.outcome == "preempt"
    assert [(v.name, v.reason) for v in report.victims] == [("pt/ablation-1", "InClusterQueue")]


def test_both_split_victims_are_needed_for_one_whole_node(policy: Any) -> None:
    where = {
        **BASE,
        "ft-vision/vit-a": {12: 8, 13: 8, 14: 8},
        "ft-nlp/sft-b": {15: 4, 16: 4},
        "pt/ablation-1": {15: 4, 16: 4},
    }
    report = preempt(policy, ask(policy, 8, 8), holders(policy, where))
    assert sorted(v.name for v in report.victims) == ["ft-nlp/sft-b", "pt/ablation-1"]


def test_quota_that_fits_on_fragmented_nodes_still_preempts(policy: Any) -> None:
    """ablation-1 has finished: 8 cards of quota are free, but 4 on each of two nodes. Kueue
    turns the pod set's resources to Preempt and reclaims sft-b, where quota alone says fits."""
    where = {**BASE, "ft-vision/vit-a": {12: 8, 13: 8, 14: 8}, "ft-nlp/sft-b": {15: 4, 16: 4}}
    held = holders(policy, where)
    quota_only = preempt(
        policy, ask(policy, 8, 8), [dataclasses.replace(h, placed={}) for h in held]
    )
    assert quota_only.outcome == "fits"
    report = preempt(policy, ask(policy, 8, 8), held)
    assert report.outcome == "preempt", report.why
    assert [v.name for v in report.victims] == ["ft-nlp/sft-b"]


def test_no_victim_frees_room_where_the_pods_fit(policy: Any) -> None:
    """Live: a node-local pod outside Kueue holds 4 cards of each node the victims would free;
    the quota-only model names victims, Kueue preempts none (the measured class)."""
    where = {
        **BASE,
        "ft-vision/vit-a": {12: 8, 13: 8, 14: 8},
        "ft-nlp/sft-b": {15: 4, 16: 4},
        "pt/ablation-1": {15: 4, 16: 4},
    }
    held = holders(policy, where)
    # What Kueue's TAS cache has free: nothing on 1-14, and on 15-16 the Kueue workloads' 8
    # less a foreign pod's 4 each: the victims give back 8 but only 4 per node is ever free.
    free = {node(k): {GPU: 0} for k in range(1, 17)}
    quota_only = preempt(
        policy, ask(policy, 8, 8), [dataclasses.replace(h, placed={}) for h in held]
    )
    assert quota_only.outcome == "preempt"
    for h in held:  # the foreign pods: take 4 of what the victims would give back per node
        for name, units in h.placed.items():
            if name in (node(15), node(16)):
                free[name][GPU] -= units[GPU] // 2
    report = preempt(policy, ask(policy, 8, 8), held, free)
    assert report.outcome == "none"
    assert report.victims == ()
    assert "does not free room on nodes where a topology placement holds them" in report.why[0]


def test_a_pod_no_empty_node_holds_preempts_nothing(policy: Any) -> None:
    held = holders(policy, {**BASE, "ft-nlp/sft-b": {15: 8}, "pt/ablation-1": {16: 8}})
    workload = ask(policy, 8, 8)
    big = dataclasses.replace(
        workload,
        pod_sets=tuple(
            dataclasses.replace(ps, requests={**ps.requests, GPU: 16}) for ps in workload.pod_sets
        ),
    )
    report = preempt(policy, big, held)
    assert report.outcome == "none"
    assert "even with every admitted workload gone" in report.why[0]


def test_a_topology_assignment_is_read_per_node() -> None:
    """The v1beta2 slices: an `individual` level with prefix and suffix, `individual` counts,
    and a `universal` one; the pod set's per-pod request times its pods per node."""
    workload = {
        "spec": {
            "podSets": [
                {
                    "name": "workers",
                    "count": 3,
                    "template": {"spec": {"containers": [{"resources": {"requests": {GPU: "2"}}}]}},
                }
            ]
        },
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True"}],
            "admission": {
                "clusterQueue": "q",
                "podSetAssignments": [
                    {
                        "name": "workers",
                        "topologyAssignment": {
                            "levels": ["kubernetes.io/hostname"],
                            "slices": [
                                {
                                    "domainCount": 2,
                                    "valuesPerLevel": [
                                        {
                                            "individual": {
                                                "prefix": "gpu-",
                                                "roots": ["a", "b"],
                                                "suffix": "-1",
                                            }
                                        }
                                    ],
                                    "podCounts": {"individual": [2, 1]},
                                },
                                {
                                    "domainCount": 1,
                                    "valuesPerLevel": [{"universal": "gpu-c-1"}],
                                    "podCounts": {"universal": 1},
                                },
                            ],
                        },
                    }
                ],
            },
        },
    }
    levels, domains = workloads.topology_domains(
        workload["status"]["admission"]["podSetAssignments"][0]
    )
    assert levels == ("kubernetes.io/hostname",)
    assert domains == [(("gpu-a-1",), 2), (("gpu-b-1",), 1), (("gpu-c-1",), 1)]
    assert placed(workload) == ({"gpu-a-1": {GPU: 4}, "gpu-b-1": {GPU: 2}, "gpu-c-1": {GPU: 2}}, 0)
    # Kueue's free view: the node's allocatable, less the Workload's assignment, less the
    # non-TAS pods; the Workload's own (TAS-annotated) pod is not counted a second time.
    nodes = [{"metadata": {"name": "gpu-a-1"}, "status": {"allocatable": {GPU: "8"}}}]
    tas_pod = {
        "metadata": {"annotations": {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}},
        "spec": {"nodeName": "gpu-a-1", "containers": [{"resources": {"requests": {GPU: "2"}}}]},
        "status": {"phase": "Running"},
    }
    plain_pod = {
        "metadata": {},
        "spec": {"nodeName": "gpu-a-1", "containers": [{"resources": {"requests": {GPU: "1"}}}]},
        "status": {"phase": "Running"},
    }
    notes: list[str] = []
    free = node_free({"gpu-a-1": [GPU]}, nodes, [tas_pod, plain_pod], [workload], notes)
    assert free == {"gpu-a-1": {GPU: 3}}
    assert notes == []
