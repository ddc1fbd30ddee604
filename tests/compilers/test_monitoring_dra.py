"""The idle-GPU alert on DRA pools (issue 36), in the real promtool, fed the series dcgm-exporter
4.5.3-4.8.2 publishes with `KUBERNETES_ENABLE_DRA=true` (docs/upstream.md): a GPU a claim gives a
pod is copied with the pod's `namespace`, `pod`, `container` and the claim's `dra_*` labels
(`internal/pkg/transformation/kubernetes.go:454-510`, rendered by `rendermetrics/
render_metrics.go:47-54`); a MIG instance never is; no pod requests a claimed GPU."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from hetgitops import api
from hetgitops.compilers.monitoring import names
from hetgitops.compilers.monitoring.promtests import promtool_files
from hetgitops.model.policy import Policy
from hetgitops.plan.node_labels import domain
from tests.compilers.test_monitoring import promtool
from tests.compilers.test_monitoring_units import DRA_VARIANT, NOW, REPO, promtool_suite

IDLE = "HetGitOpsGPUsAllocatedButIdle"
POOL = "l40s-infer"  # whole GPUs on DRA claims


def _policy() -> Policy:
    result = api.render([DRA_VARIANT], api.Options(now=NOW, targets=("monitoring",)))
    assert result.policy is not None and result.policy.fleet is not None
    return result.policy


def _series(metric: str, value: float, **labels: str) -> dict[str, str]:
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{metric}{{{inner}}}", "values": f"{value}x30"}


def _node(policy: Policy, node: str) -> dict[str, str]:
    prefix = domain(policy)
    card = policy.card_type_of(policy.pools[POOL])
    assert card is not None
    labels = {
        names.node_label(f"{prefix}/pool"): POOL,
        names.node_label(f"{prefix}/card-type"): card.name,
        "node": node,
    }
    return _series(names.NODE_LABELS, 1, **labels)


def _gpu(node: str, gpu: int, percent: float, **pod: str) -> dict[str, str]:
    """DCGM_FI_DEV_GPU_UTIL of one GPU as the exporter renders it, with a claim's labels."""
    ids = {
        "gpu": str(gpu),
        "UUID": f"GPU-{node}-{gpu}",
        "pci_bus_id": f"00000000:{gpu + 1:02X}:00.0",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA L40S",
        "Hostname": node,
    }
    if pod:
        ids |= {
            "container": "main",
            "dra_claim_name": f"{pod['pod']}-gpu",
            "dra_claim_namespace": pod["namespace"],
            "dra_driver_name": "gpu.nvidia.com",
            "dra_pool_name": node,
            "dra_device_name": f"gpu-{gpu}",
            **pod,
        }
    return _series(names.GPU_UTIL, percent, **ids)


def _running(namespace: str, pod: str) -> dict[str, str]:
    return _series(names.POD_PHASE, 1, namespace=namespace, pod=pod, phase="Running")


def _run(policy: Policy, folder: Path, tests: list[dict[str, Any]]) -> None:
    promtool_suite(policy, folder, tests, "idle.test.yaml")


def test_the_idle_alert_sees_a_team_holding_dra_gpus(tmp_path: Path) -> None:
    """Two teams hold claimed L40S GPUs on one node: `finetune-vision` idles at 3% on two,
    `online-inference` works at 80% on one, a fourth GPU nobody holds idles. The alert fires
    for finetune-vision alone, with its utilisation, and `hetgitops:team_pool_allocated_cards`
    counts each team's GPUs. On the old rules no team was ever allocated a DRA GPU (they read
    container requests) and the alert stayed silent."""
    policy = _policy()
    teams = {t.name: t for t in policy.teams.values()}
    idle_ns, busy_ns = (
        teams["finetune-vision"].namespaces[0],
        teams["online-inference"].namespaces[0],
    )
    node = policy.pools[POOL].nodes[0].name
    series = [
        _node(policy, node),
        _gpu(node, 0, 3, namespace=idle_ns, pod="notebook"),
        _gpu(node, 1, 3, namespace=idle_ns, pod="notebook"),
        _gpu(node, 2, 80, namespace=busy_ns, pod="trainer"),
        _gpu(node, 3, 2),
        _running(idle_ns, "notebook"),
        _running(busy_ns, "trainer"),
    ]
    card_type = policy.pools[POOL].card_type
    ids = {"pool": POOL, "card_type": card_type}
    allocated = "hetgitops:team_pool_allocated_cards"
    test = {
        "interval": "5m",
        "input_series": series,
        "alert_rule_test": [
            {
                "eval_time": "90m",
                "alertname": IDLE,
                "exp_alerts": [
                    {
                        "exp_labels": {"severity": "warning", "team": "finetune-vision", **ids},
                        "exp_annotations": {
                            "summary": f"Team finetune-vision holds GPUs in {POOL} that stay idle",
                            "description": (
                                f"The GPUs team finetune-vision is allocated in pool {POOL} average"
                                " 0.030 utilisation, below 0.1 for 1h."
                            ),
                        },
                    }
                ],
            }
        ],
        "promql_expr_test": [
            {
                "expr": f'{allocated}{{pool="{POOL}"}}',
                "eval_time": "90m",
                "exp_samples": [
                    {
                        "labels": f"{allocated}{{{_labels(team='finetune-vision', **ids)}}}",
                        "value": 2,
                    },
                    {
                        "labels": f"{allocated}{{{_labels(team='online-inference', **ids)}}}",
                        "value": 1,
                    },
                ],
            }
        ],
    }
    _run(policy, tmp_path / "idle", [test])


def _labels(**labels: str) -> str:
    return ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))


def test_generated_idle_scenarios_cover_dra_pools_and_pass(tmp_path: Path) -> None:
    """The generated idle tests of the DRA variant include its DRA pools (a claim-holding team
    idle and busy, with an unheld GPU and unlabelled MIG instances as traps) and pass."""
    policy = _policy()
    text = promtool_files(policy)[f"{IDLE}.test.yaml"]
    tests = {t["name"]: t for t in yaml.safe_load(text)["tests"]}
    on_dra = [t for n, t in tests.items() if "DRA pool" in n]
    assert any(f"DRA pool {POOL} idle" in n for n in tests), sorted(tests)
    assert any("DRA pool h100-infer idle" in n for n in tests), sorted(tests)
    for test in on_dra:  # claims, not requests
        fed = [s["series"] for s in test["input_series"]]
        assert not [s for s in fed if s.startswith(names.POD_REQUESTS)], fed
        assert [s for s in fed if "dra_claim_name" in s], fed
    folder = tmp_path / "generated"
    folder.mkdir()
    for name, content in promtool_files(policy).items():
        (folder / name).write_text(content)
    run = subprocess.run(
        [promtool(), "test", "rules", f"{IDLE}.test.yaml"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_gpu_operator_values_turn_on_dcgm_exporters_dra_mapping() -> None:
    """With a pool on DRA the GPU Operator values set `KUBERNETES_ENABLE_DRA` (off by
    default, dcgm-exporter `pkg/cmd/app.go:329-334`; the chart passes `dcgmExporter.env` to
    the ClusterPolicy); a fleet without DRA pools keeps the values it had."""
    files = {m.filename: m.obj for m in api.render([DRA_VARIANT], _options()).manifests}
    values = files["gpu-operator-helm-values.yaml"]
    assert values["dcgmExporter"]["env"] == [{"name": "KUBERNETES_ENABLE_DRA", "value": "true"}]
    plain = api.render([REPO / "policies"], _options())
    files = {m.filename: m.obj for m in plain.manifests}
    assert "env" not in files["gpu-operator-helm-values.yaml"]["dcgmExporter"]


def _options() -> api.Options:
    return api.Options(now=NOW, targets=("monitoring",))
