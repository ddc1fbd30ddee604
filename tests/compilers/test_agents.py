"""Node agents run on tainted pools: NFD worker, the GPU Operator's DaemonSets and its bundled
NFD tolerate every pool taint they must run under; NFD puts the taints on the nodes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from hetgitops import api
from hetgitops.compilers import agents, gpu_operator, nodes
from hetgitops.model.policy import Policy
from hetgitops.model.tolerations import tolerates

REPO = Path(__file__).resolve().parents[2]


def _bundled() -> Policy:
    result = api.render([REPO / "policies"], api.Options(check_output=False))
    assert result.policy is not None
    return result.policy


def _tolerated(tolerations: list[dict[str, Any]], policy: Policy, *, nvidia_only: bool) -> None:
    tainted = [p for p in policy.pools.values() if p.taints]
    assert tainted
    for pool in tainted:
        if nvidia_only and not agents.is_nvidia(policy, pool):
            continue
        for t in pool.taints:
            assert tolerates(tolerations, t.key, t.value, t.effect), (pool.name, t)


def test_nfd_worker_tolerates_every_pool_taint() -> None:
    policy = _bundled()
    values = nodes.nfd_helm_values(policy)
    _tolerated(values["worker"]["tolerations"], policy, nvidia_only=False)
    assert values["master"]["config"]["enableTaints"] is True


def test_gpu_operator_daemonsets_and_bundled_nfd_tolerate_them() -> None:
    policy = _bundled()
    assert policy.fleet is not None
    values = gpu_operator.helm_values(policy, policy.fleet)
    operands = values["daemonsets"]["tolerations"]
    _tolerated(operands, policy, nvidia_only=True)
    assert operands[0] == agents.GPU_OPERATOR_DEFAULT[0]  # the chart default is kept
    bundled = values["node-feature-discovery"]["worker"]["tolerations"]
    _tolerated(bundled, policy, nvidia_only=False)
    assert bundled[:2] == list(agents.BUNDLED_NFD_DEFAULT)


def test_nfd_puts_the_pool_taints_on_the_nodes() -> None:
    policy = _bundled()
    rules = {m.name: m.obj for m in nodes.compile_nodes(policy) if m.kind == "NodeFeatureRule"}
    rule = rules["hetgitops-a800-train"]["spec"]["rules"][0]
    assert rule["taints"] == [
        {"key": "hetgitops.io/pool", "value": "a800-train", "effect": "NoSchedule"}
    ]
    assert "taints" not in rules["hetgitops-l40s-infer"]["spec"]["rules"][0]


def test_untolerated_taint_is_an_error_at_the_taint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "policy"
    shutil.copytree(REPO / "policies", policy)
    fleet = policy / "fleet.yaml"
    fleet.write_text(
        fleet.read_text().replace(
            "targets: [core, kueue, volcano, nodes, gpu-operator]",
            "targets: [core, kueue, volcano, gpu-operator]",
        )
    )
    # Without the nodes target the GPU Operator's values still make its bundled NFD worker
    # tolerate every pool taint (an imported cluster's taints are already on its nodes): it
    # was an error here, and import wrote a policy that failed it.
    result = api.validate([policy], api.Options(check_output=False))
    assert not [d for d in result.diagnostics if d.rule == "agent-untolerated-taint"]
    assert result.policy is not None and result.policy.fleet is not None
    values = gpu_operator.helm_values(result.policy, result.policy.fleet)
    keys = {t.get("key") for t in values["node-feature-discovery"]["worker"]["tolerations"]}
    assert "hetgitops.io/pool" in keys and "master" not in values["node-feature-discovery"]
    # The rule judges what the compilers write: values that lose a pool's toleration fail.
    monkeypatch.setattr(agents, "pool_tolerations", lambda policy, nvidia_only=False: [])
    result = api.validate([policy], api.Options(check_output=False))
    found = [d for d in result.diagnostics if d.rule == "agent-untolerated-taint"]
    assert {(Path(d.span.file).name, d.path) for d in found} == {
        ("training.yaml", "spec.taints[0]"),
        ("dev.yaml", "spec.taints[0]"),
    }
    assert any("bundled NFD worker" in d.message for d in found)
    monkeypatch.undo()
    clean = api.validate([REPO / "policies"], api.Options(check_output=False))
    assert not [d for d in clean.diagnostics if d.rule == "agent-untolerated-taint"]
