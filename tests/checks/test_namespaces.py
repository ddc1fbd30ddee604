"""Rules of the namespaces family: the team Namespaces' labels against the ClusterQueue's
namespaceSelector."""

from __future__ import annotations

SELECTOR = "  namespaces: [ml]\n  kueue:\n    namespaceSelector:\n      matchLabels: {team: ml}\n"


def test_a_selector_the_rendered_namespaces_do_not_match(policy):
    policy.replace("teams.yaml", "  namespaces: [ml]\n", SELECTOR)
    found = policy.findings("namespace-selector-misses")
    assert [str(d.span) for d in found] == [
        policy.pos("teams.yaml", "  kueue:\n    namespaceSelector:\n      ^matchLabels")
    ]
    assert found[0].hint == "add to spec.namespaceLabels: team: ml"


def test_namespace_labels_the_selector_matches_pass(policy):
    policy.replace(
        "teams.yaml", "  namespaces: [ml]\n", SELECTOR + "  namespaceLabels: {team: ml}\n"
    )
    assert policy.spans("namespace-selector-misses") == []


def test_the_default_selector_passes(policy):
    assert policy.spans("namespace-selector-misses") == []


def test_a_namespace_label_overriding_the_team_label_misses_the_default_selector(policy):
    policy.replace(
        "teams.yaml",
        "  namespaces: [ml]\n",
        "  namespaces: [ml]\n  namespaceLabels:\n    hetgitops.io/team: other\n",
    )
    assert policy.spans("namespace-selector-misses") == [
        policy.pos("teams.yaml", "namespaceLabels:\n    ^hetgitops.io/team")
    ]


def test_match_expressions_are_read_as_the_api_server_reads_them(policy):
    policy.replace(
        "teams.yaml",
        "  namespaces: [ml]\n",
        "  namespaces: [ml]\n  namespaceLabels: {tier: gpu}\n"
        "  kueue:\n    namespaceSelector:\n      matchExpressions:\n"
        "        - {key: tier, operator: In, values: [gpu, tpu]}\n"
        "        - {key: frozen, operator: DoesNotExist}\n",
    )
    assert policy.spans("namespace-selector-misses") == []
    policy.replace("teams.yaml", "operator: DoesNotExist", "operator: Exists")
    assert len(policy.spans("namespace-selector-misses")) == 1


CAPPED = "  namespaces: [ml]\n  namespaceQuota:\n    accelerators: {nvidia.com/gpu: 4}\n"


def test_a_namespace_quota_cap_below_the_queues_reach(policy):
    policy.replace("teams.yaml", "  namespaces: [ml]\n", CAPPED)
    found = policy.findings("namespace-quota-below-reach")
    assert [str(d.span) for d in found] == [
        policy.pos("teams.yaml", "accelerators: {nvidia.com/gpu: ^4}")
    ]
    assert "caps nvidia.com/gpu at 4, but its queue admits up to" in found[0].message


def test_a_cap_at_the_reach_or_no_caps_pass(policy):
    assert policy.spans("namespace-quota-below-reach") == []
    policy.replace("teams.yaml", "  namespaces: [ml]\n", CAPPED.replace(": 4}", ": 100000}"))
    assert policy.spans("namespace-quota-below-reach") == []
