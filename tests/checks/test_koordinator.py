"""Rules of the koordinator family: what Koordinator v1.8.0's webhook, profile controller and
scheduler would refuse or silently misread; each runs only with the koordinator target."""

from __future__ import annotations

from hetgitops.diagnostics import Severity

TARGETS = "targets: [core, kueue, volcano, nodes, gpu-operator]"
WITH_KOORD = "targets: [core, kueue, volcano, nodes, gpu-operator, koordinator]"


def _koordinator(policy, settings: str = ""):
    policy.replace("fleet.yaml", TARGETS, WITH_KOORD + settings)
    return policy


def test_min_over_the_truncated_capacity(policy):
    # 2 nodes x 8 H100 = 16; x 0.9 = 14.4, truncated to 14 < 8 + 8.
    _koordinator(policy, '\n  koordinator: {resourceRatio: "0.9"}')
    found = policy.findings("koordinator-min-over-capacity")
    assert [str(d.span) for d in found] == [policy.pos("fleet.yaml", 'resourceRatio: ^"0.9"')] * 2
    assert any("holds 14" in d.message and "16 nvidia.com/gpu" in d.message for d in found)
    assert sorted(str(r.span) for r in found[0].related) == sorted(
        [
            policy.pos("teams.yaml", "- ^{pool: h100-train, cards: 8}\n    - {pool: l40s"),
            policy.pos("teams.yaml", "- {pool: l40s-infer, cards: 8}\n    - ^{pool: h100"),
        ]
    )


def test_min_within_the_truncated_capacity_passes(policy):
    _koordinator(policy, '\n  koordinator: {resourceRatio: "1"}')
    assert policy.spans("koordinator-min-over-capacity") == []


def test_without_the_target_no_koordinator_rule_runs(policy):
    policy.replace("fleet.yaml", "  cohorts:", '  koordinator: {resourceRatio: "0.5"}\n  cohorts:')
    assert policy.spans("koordinator-min-over-capacity") == []


def test_min_quota_scale_is_reported(policy):
    _koordinator(policy, "\n  koordinator: {enableMinQuotaScale: true}")
    assert policy.spans("koordinator-min-quota-scale") == [
        policy.pos("fleet.yaml", "enableMinQuotaScale: ^true")
    ]


def test_min_quota_scale_left_out_passes(policy):
    _koordinator(policy)
    assert policy.spans("koordinator-min-quota-scale") == []


def test_profiles_without_multi_quota_tree(policy):
    _koordinator(policy, "\n  koordinator: {multiQuotaTree: false}")
    assert policy.spans("koordinator-multi-quota-tree") == [
        policy.pos("fleet.yaml", "multiQuotaTree: ^false")
    ]


def test_multi_quota_tree_by_default_passes(policy):
    _koordinator(policy)
    assert policy.spans("koordinator-multi-quota-tree") == []


def test_an_in_band_tier_below_a_mapped_lower_one(policy):
    # serving 5500 stays in koord-batch; training (100, preemptible) is mapped to 5999.
    _koordinator(policy)
    policy.replace("tiers.yaml", "value: 10000", "value: 5500")
    policy.replace("tiers.yaml", "value: 1000\n", "value: 100\n  preemptible: true\n")
    found = policy.findings("koordinator-tier-order")
    assert [str(d.span) for d in found] == [policy.pos("tiers.yaml", "value: ^5500")]
    assert [str(r.span) for r in found[0].related] == [policy.pos("tiers.yaml", "value: ^100")]


def test_tiers_outside_the_bands_keep_their_order(policy):
    _koordinator(policy)
    assert policy.spans("koordinator-tier-order") == []


def test_a_quota_name_koordinator_reserves(policy):
    _koordinator(policy)
    policy.replace("pools.yaml", "name: l40s-infer", "name: default-quota")
    policy.replace("teams.yaml", "- {pool: l40s-infer, cards: 8}\n    - {pool: h100",
                   "- {pool: default-quota, cards: 8}\n    - {pool: h100")  # fmt: skip
    policy.replace("teams.yaml", "- {pool: l40s-infer, cards: 8}\n  tiers: [training]",
                   "- {pool: default-quota, cards: 8}\n  tiers: [training]")  # fmt: skip
    policy.replace("teams.yaml", "name: serving", "name: koordinator")
    assert policy.spans("koordinator-quota-name") == [
        policy.pos("teams.yaml", "name: ^koordinator")
    ]


def test_a_quota_name_used_twice(policy):
    # team `cohort-ml` in pool h100-train is `cohort-ml-h100-train`, the cohort ml's parent.
    _koordinator(policy)
    policy.replace("teams.yaml", "name: serving", "name: cohort-ml")
    assert (
        policy.spans("koordinator-quota-name") == [policy.pos("teams.yaml", "name: ^cohort-ml")] * 2
    )


def test_distinct_quota_names_pass(policy):
    _koordinator(policy)
    assert policy.spans("koordinator-quota-name") == []


def test_render_target_koordinator_runs_the_rules_too(policy):
    """`render --target koordinator` on a Fleet that does not list it checks what it renders."""
    import datetime as dt

    from hetgitops import api

    policy.replace("fleet.yaml", "  cohorts:", '  koordinator: {resourceRatio: "0.5"}\n  cohorts:')
    sources = [(name, text.encode()) for name, text in sorted(policy.files.items())]
    options = api.Options(now=dt.date(2026, 12, 1), check_output=False, targets=("koordinator",))
    found = api.validate_sources(sources, options).diagnostics
    assert "koordinator-min-over-capacity" in {d.rule for d in found}


def test_a_team_in_two_pools_is_pinned_to_its_first_by_koordinator(policy):
    """koord-manager's pod webhook pins every pod of a bound namespace to the first pool's tree,
    Kueue's pods too (issue 34, seen in the simulated fleet)."""
    _koordinator(policy)
    found = policy.findings("koordinator-namespace-pinning")
    assert found, "a team with namespaces in two pools under kueue and koordinator"
    assert all(d.severity is Severity.WARNING for d in found)
    first = found[0]
    assert "pins every pod" in first.message and "never schedule" in first.message
    assert "spec.targets" in first.hint
    assert [r.path for r in first.related] == ["spec.targets"]


def test_pinning_needs_both_job_schedulers(policy):
    policy.replace("fleet.yaml", TARGETS, "targets: [core, volcano, nodes, koordinator]")
    assert policy.spans("koordinator-namespace-pinning") == []
