"""Rules of the taints family: a taint whose arrival evicts running pods."""

from __future__ import annotations

NODES = '    - {names: "gpu-l40s-[01:02]", zone: zone-b, rack: rack-b1}'


def _taint(policy, taint: str) -> None:
    policy.replace("pools.yaml", NODES, f"{NODES}\n  taints:\n    - {taint}")


def test_a_noexecute_taint_must_say_the_eviction_is_intended(policy):
    _taint(policy, "{key: maintenance, effect: NoExecute}")
    assert policy.spans("taint-evicts-running-pods") == [
        policy.pos("pools.yaml", "{key: maintenance, effect: ^NoExecute}")
    ]
    (found,) = policy.findings("taint-evicts-running-pods")
    assert found.severity.name == "ERROR"
    assert "2 node(s)" in found.message
    assert "first the taint with effect NoSchedule" in found.hint


def test_an_acknowledged_noexecute_taint_or_a_noschedule_taint_passes(policy):
    _taint(policy, "{key: maintenance, effect: NoExecute, evictsRunningPods: true}")
    assert policy.spans("taint-evicts-running-pods") == []


def test_a_noschedule_taint_evicts_nothing(policy):
    _taint(policy, "{key: maintenance, effect: NoSchedule}")
    assert policy.spans("taint-evicts-running-pods") == []


def test_flavor_node_taints_on_a_pool_without_taints_says_nothing(policy):
    policy.replace("pools.yaml", NODES, f"{NODES}\n  kueue: {{flavorNodeTaints: true}}")
    assert policy.spans("flavor-node-taints-without-taints") == [
        policy.pos("pools.yaml", "kueue: {flavorNodeTaints: ^true}")
    ]
    (found,) = policy.findings("flavor-node-taints-without-taints")
    assert found.severity.name == "WARNING" and "spec.taints" in found.hint


def test_flavor_node_taints_beside_the_pools_taints_passes(policy):
    _taint(policy, "{key: dedicated, value: training, effect: NoSchedule}")
    policy.replace("pools.yaml", NODES, f"{NODES}\n  kueue: {{flavorNodeTaints: true}}")
    assert policy.spans("flavor-node-taints-without-taints") == []


def test_two_taints_of_one_key_and_effect_are_refused(policy):
    _taint(policy, "{key: dedicated, value: a, effect: NoSchedule}")
    policy.replace(
        "pools.yaml",
        "    - {key: dedicated, value: a, effect: NoSchedule}",
        "    - {key: dedicated, value: a, effect: NoSchedule}\n"
        "    - {key: dedicated, value: b, effect: NoSchedule}\n"
        "    - {key: dedicated, value: c, effect: NoExecute, evictsRunningPods: true}",
    )
    assert policy.spans("pool-taint-duplicate") == [
        policy.pos("pools.yaml", "    - ^{key: dedicated, value: b")
    ]
