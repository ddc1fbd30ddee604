"""Rules of the clusters family: where pools run, one manager, credential references, and the
per-cluster runs of the rules about what one cluster holds."""

from __future__ import annotations

import pytest

from tests.checks.conftest import PolicyText
from tests.checks.multi_policy import multi_policy


@pytest.fixture
def multi() -> PolicyText:
    return multi_policy()


def test_the_multi_cluster_policy_is_clean(multi):
    assert [(d.rule, str(d.span)) for d in multi.diagnostics() if d.severity.name == "ERROR"] == []


def test_pool_without_cluster_in_a_multi_cluster_policy(multi):
    multi.replace("pools.yaml", "  cluster: west\n", "")
    assert multi.spans("pool-cluster") == [multi.pos("pools.yaml", "l40s-infer\n^spec:")]


def test_pool_names_an_unknown_cluster(multi):
    multi.replace("pools.yaml", "cluster: west", "cluster: wets")
    found = multi.findings("pool-cluster")
    assert [str(d.span) for d in found] == [multi.pos("pools.yaml", "cluster: ^wets")]
    assert "west" in found[0].hint


def test_pool_names_a_cluster_without_cluster_documents(policy):
    policy.replace(
        "pools.yaml", "  cardType: h100-80gb\n", "  cluster: east\n  cardType: h100-80gb\n"
    )
    assert policy.spans("pool-cluster") == [policy.pos("pools.yaml", "cluster: ^east")]


def test_pool_on_the_manager(multi):
    multi.replace("pools.yaml", "cluster: west", "cluster: hub")
    assert multi.spans("pool-cluster") == [multi.pos("pools.yaml", "cluster: ^hub")]


def test_single_cluster_pools_pass(policy):
    assert policy.spans("pool-cluster") == []


def test_two_managers(multi):
    multi.replace(
        "clusters.yaml",
        "  role: worker\n  credentials: {clusterProfile: west}",
        "  role: manager\n  credentials: {clusterProfile: west}",
    )
    multi.replace("pools.yaml", "cluster: west", "cluster: east")
    found = multi.findings("cluster-roles")
    assert [str(d.span) for d in found] == [
        multi.pos("clusters.yaml", "role: ^manager\n  credentials: {clusterProfile")
    ]
    assert [str(s) for s in found[0].related] == [multi.pos("clusters.yaml", "role: ^manager\n---")]


def test_workers_without_a_manager(multi):
    multi.replace("clusters.yaml", "role: manager", "role: standalone")
    assert multi.spans("cluster-roles") == [
        multi.pos("clusters.yaml", "role: ^worker\n  credentials: {secret")
    ]


def test_manager_without_workers(multi):
    multi.replace(
        "clusters.yaml",
        "role: worker\n  credentials: {secret",
        "role: standalone\n  credentials: {secret",
    )
    multi.replace(
        "clusters.yaml",
        "role: worker\n  credentials: {cluster",
        "role: standalone\n  credentials: {cluster",
    )
    assert multi.spans("cluster-roles") == [multi.pos("clusters.yaml", "role: ^manager")]


def test_inline_credentials_are_refused(multi):
    multi.replace(
        "clusters.yaml",
        "credentials: {secret: east-kubeconfig}",
        "credentials:\n    secret: east-kubeconfig\n"
        "    kubeconfig: 'apiVersion: v1'\n    token: abc",
    )
    assert multi.spans("cluster-credentials-inline") == [
        multi.pos("clusters.yaml", "    ^kubeconfig: 'api"),
        multi.pos("clusters.yaml", "    ^token: abc"),
    ]


def test_references_pass(multi):
    assert multi.spans("cluster-credentials-inline") == []
    assert multi.spans("cluster-credentials-missing") == []


def test_worker_without_credentials(multi):
    multi.replace("clusters.yaml", "  credentials: {secret: east-kubeconfig}\n", "")
    assert multi.spans("cluster-credentials-missing") == [
        multi.pos("clusters.yaml", "name: east\n^spec:")
    ]


def test_worker_with_two_credentials(multi):
    multi.replace("clusters.yaml", "{secret: east-kubeconfig}", "{secret: e, clusterProfile: e}")
    assert multi.spans("cluster-credentials-missing") == [
        multi.pos("clusters.yaml", "credentials: ^{secret: e,")
    ]


def test_old_kueue_on_a_worker(multi):
    multi.replace(
        "clusters.yaml", "  dispatchOrder: 2\n", "  dispatchOrder: 2\n  versions: {kueue: '0.14'}\n"
    )
    assert multi.spans("multikueue-kueue-version") == [
        multi.pos("clusters.yaml", "versions: {kueue: ^'0.14'}")
    ]


def test_new_kueue_passes(multi):
    assert multi.spans("multikueue-kueue-version") == []


def test_node_names_may_repeat_across_clusters(multi):
    """Per-cluster rule: two clusters may each have a node gpu-01; one cluster may not."""
    multi.replace("pools.yaml", '"gpu-l40s-[01:02]"', '"gpu-h100-[01:02]"')
    assert multi.spans("node-duplicate") == []


def test_node_names_repeat_within_a_cluster(multi):
    multi.replace("pools.yaml", '"gpu-l40s-[01:02]"', '"gpu-h100-[01:02]"')
    multi.replace("pools.yaml", "cluster: west", "cluster: east")
    found = multi.findings("node-duplicate")
    assert [str(d.span) for d in found] == [
        multi.pos("pools.yaml", 'names: ^"gpu-h100-[01:02]", zone: zone-b')
    ]
    assert found[0].message.startswith("[east] ") and found[0].cluster == "east"


def test_inline_credentials_are_never_echoed(multi):
    secret = "c2VjcmV0LXRva2VuLXZhbHVl"
    multi.replace(
        "clusters.yaml",
        "credentials: {secret: east-kubeconfig}",
        f"credentials: {{secret: east-kubeconfig, token: {secret}}}",
    )
    found = multi.diagnostics()
    assert [d.rule for d in found if d.rule == "cluster-credentials-inline"] == [
        "cluster-credentials-inline"
    ]
    for finding in found:
        text = " ".join([finding.message, finding.hint, *(r.message for r in finding.related)])
        assert secret not in text


def test_a_finding_every_cluster_makes_is_reported_once(multi):
    """volcano-plugin-conflict is about the Fleet both workers share: one finding."""
    multi.files["fleet.yaml"] += "  volcano: {queuePlugin: proportion}\n"
    found = multi.findings("volcano-plugin-conflict")
    assert len(found) == 1
    assert found[0].message.startswith("[east, west] ") and found[0].cluster == ""


def test_manager_with_pool_targets(multi):
    multi.replace(
        "clusters.yaml", "  role: manager\n", "  role: manager\n  targets: [kueue, volcano]\n"
    )
    assert multi.spans("cluster-roles") == [multi.pos("clusters.yaml", "[kueue, ^volcano]")]


def test_admission_checks_on_a_worker(multi):
    multi.replace(
        "clusters.yaml",
        "  dispatchOrder: 1\n",
        "  dispatchOrder: 1\n  admissionChecks: [{name: a, controllerName: example.com/a}]\n",
    )
    assert multi.spans("cluster-roles") == [multi.pos("clusters.yaml", "^admissionChecks:")]
