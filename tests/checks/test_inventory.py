"""Rules of the inventory family: node lists."""

from __future__ import annotations


def test_node_in_two_pools(policy):
    policy.replace("pools.yaml", '"gpu-l40s-[01:02]"', '["gpu-l40s-[01:02]", gpu-h100-02]')
    found = policy.findings("node-duplicate")
    assert [str(d.span) for d in found] == [
        policy.pos("pools.yaml", 'gpu-l40s-[01:02]", ^gpu-h100-02')
    ]
    assert [str(s) for s in found[0].related] == [policy.pos("pools.yaml", '^"gpu-h100-[01:02]"')]


def test_overlapping_ranges_give_one_finding(policy):
    policy.replace(
        "pools.yaml",
        '"gpu-h100-[01:02]", zone: zone-a',
        '"gpu-h100-[01:02]", zone: zone-a}\n    - {names: "gpu-h100-[00:03]", zone: zone-a',
    )
    assert policy.spans("node-duplicate") == [policy.pos("pools.yaml", '^"gpu-h100-[00:03]"')]


def test_distinct_nodes_pass(policy):
    policy.replace("pools.yaml", '"gpu-h100-[01:02]"', '"gpu-h100-[01:04]"')
    assert policy.spans("node-duplicate") == []


def test_topology_level_missing_on_a_node_entry(policy):
    policy.replace(
        "fleet.yaml", "  cohorts:", "  topology: {levels: [zone, rack, hostname]}\n  cohorts:"
    )
    policy.replace("pools.yaml", "zone: zone-b, rack: rack-b1", "zone: zone-b")
    assert policy.spans("topology-incomplete") == [policy.pos("pools.yaml", '^"gpu-l40s-[01:02]"')]
    (found,) = policy.findings("topology-incomplete")
    # An error, not a warning: Kueue's TAS leaves such nodes out of every topology-bound flavor,
    # and every flavor of a fleet with a topology is bound; this pool's only entry lacks rack.
    assert found.severity.name == "ERROR"
    assert "none of the pool's nodes count" in found.message
    assert found.message.endswith("and it admits nothing")


def test_topology_levels_present(policy):
    policy.replace(
        "fleet.yaml", "  cohorts:", "  topology: {levels: [zone, rack, hostname]}\n  cohorts:"
    )
    assert policy.spans("topology-incomplete") == []


def test_a_bad_node_range_is_reported_once_without_follow_on_findings(policy):
    # The h100 pool's only range fails: its capacity is unknown, not zero, so neither the
    # quotas in it nor the profile routed to it get findings of their own.
    policy.replace("pools.yaml", 'names: "gpu-h100-[01:02]"', 'names: "gpu-h100-[02:01]"')
    found = [(d.rule, str(d.span)) for d in policy.diagnostics() if d.severity.label == "error"]
    assert found == [("node-range-invalid", policy.pos("pools.yaml", 'names: ^"gpu-h100-[02:01]"'))]
