"""Rules of the multikueue family, and profile-never-admissible under a MultiKueue manager."""

from __future__ import annotations

import pytest

from hetgitops.checks import multikueue
from tests.checks.conftest import PolicyText
from tests.checks.multi_policy import multi_policy

HUB = "  role: manager\n"


@pytest.fixture
def multi() -> PolicyText:
    return multi_policy()


def _manager_check(multi: PolicyText, check: str) -> None:
    multi.replace("clusters.yaml", HUB, f"{HUB}  admissionChecks:\n    - {check}\n")


@pytest.mark.parametrize(
    ("check", "reason"),
    [
        (
            "{name: prov, controllerName: kueue.x-k8s.io/provisioning-request}",
            "MultiKueueWithProvisioningRequest",
        ),
        ("{name: mk2, controllerName: kueue.x-k8s.io/multikueue}", "MultipleMultiKueue"),
        (
            "{name: mk2, controllerName: kueue.x-k8s.io/multikueue, onFlavors: [multikueue]}",
            "AppliedPerFlavor",
        ),
    ],
)
def test_checks_that_deactivate_the_manager_queues(multi, check, reason):
    _manager_check(multi, check)
    found = multi.findings("multikueue-check-conflict")
    assert [str(d.span) for d in found] == [multi.pos("clusters.yaml", "controllerName: ^kueue")]
    assert reason in found[0].message


def test_another_controller_on_the_manager_passes(multi):
    _manager_check(multi, "{name: budget, controllerName: example.com/budget}")
    assert multi.spans("multikueue-check-conflict") == []
    assert multi.spans("crd-schema") == []


def test_more_workers_than_a_config_lists(multi, monkeypatch):
    assert multi.spans("multikueue-cluster-count") == []
    monkeypatch.setattr(multikueue, "MAX_CLUSTERS", 1)
    assert multi.spans("multikueue-cluster-count") == sorted(
        [
            multi.pos(
                "teams.yaml", "name: ml\nspec:\n  namespaces: [ml]\n  cohort: ml\n  ^quotas:"
            ),
            multi.pos(
                "teams.yaml",
                "name: serving\nspec:\n  namespaces: [serving]\n  cohort: ml\n  ^quotas:",
            ),
        ]
    )


def test_volcano_job_routed_to_the_manager(multi):
    multi.replace("profiles.yaml", "framework: job", "framework: volcano-job")
    found = multi.findings("multikueue-job-kind")
    assert [str(d.span) for d in found] == [multi.pos("profiles.yaml", "framework: ^volcano-job")]


def test_volcano_job_with_a_standalone_pool_passes(multi):
    multi.replace("profiles.yaml", "framework: job", "framework: volcano-job")
    multi.replace(
        "clusters.yaml",
        "role: worker\n  credentials: {secret",
        "role: standalone\n  credentials: {secret",
    )
    assert multi.spans("multikueue-job-kind") == []


def test_volcano_job_without_clusters_passes(policy):
    policy.replace("profiles.yaml", "framework: job", "framework: volcano-job")
    assert policy.spans("multikueue-job-kind") == []


@pytest.mark.parametrize(("amount", "side"), [("12", "below"), ("20", "above"), ("16", None)])
def test_manager_quota_against_the_workers_sum(multi, amount, side):
    multi.replace(
        "teams.yaml",
        "  budget: {monthly: 100000}\n",
        f"  budget: {{monthly: 100000}}\n  managerQuota: {{nvidia.com/gpu: {amount}}}\n",
    )
    found = multi.findings("multikueue-quota-mismatch")
    if side is None:
        assert found == []
        return
    assert [str(d.span) for d in found] == [
        multi.pos("teams.yaml", f"managerQuota: {{nvidia.com/gpu: ^{amount}}}")
    ]
    assert f"is {side} what its workers hold (16)" in found[0].message
    assert ("never dispatched" in found[0].message) == (side == "below")
    # Above the sum such a job is never given up (kueue#8602; seen live in tests/sim).
    assert ("waits on the workers forever" in found[0].message) == (side == "above")


def test_manager_quota_for_a_resource_no_worker_holds(multi):
    multi.replace(
        "teams.yaml",
        "  budget: {monthly: 100000}\n",
        "  budget: {monthly: 100000}\n  managerQuota: {example.com/fpga: 2}\n",
    )
    [found] = multi.findings("multikueue-quota-mismatch")
    assert "above what its workers hold (0)" in found.message


def test_a_gang_only_the_workers_sum_holds_is_stranded(multi):
    """ml holds 8 H100 on east and 8 L40S on west: the manager's 16 admit a 2 x 8 gang that no
    worker can ever run."""
    multi.files["teams.yaml"] = multi.files["teams.yaml"].replace("  cohort: ml\n", "")
    multi.replace("profiles.yaml", "    purposes: [training]\n", "")
    found = multi.findings("profile-never-admissible")
    assert [str(d.span) for d in found] == [multi.pos("profiles.yaml", "gang: ^2")]
    assert "(cluster 'east')" in found[0].message or "(cluster 'west')" in found[0].message
    assert "the manager's queue holds 16" in found[0].message
    assert "waits on the workers forever" in found[0].message


def test_a_gang_one_worker_holds_passes(multi):
    assert multi.spans("profile-never-admissible") == []
