"""Multi-cluster model: `kind: Cluster` loaded and schema-checked, `Pool.spec.cluster`, and the
plan stage's per-cluster policies, dispatch order and manager quotas (plan/clusters.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from hetgitops import api
from hetgitops.model.policy import MANAGER, WORKER, Policy
from hetgitops.plan import clusters
from tests.checks.conftest import BASE, PolicyText
from tests.checks.multi_policy import multi_policy

NOW = dt.date(2026, 12, 1)


def _policy(text: PolicyText) -> Policy:
    sources = [(name, body.encode()) for name, body in sorted(text.files.items())]
    result = api.validate_sources(sources, api.Options(now=NOW, check_output=False))
    assert result.policy is not None
    return result.policy


@pytest.fixture
def multi() -> PolicyText:
    return multi_policy()


def test_cluster_documents_are_loaded(multi):
    policy = _policy(multi)
    assert list(policy.clusters) == ["east", "hub", "west"]
    hub, east, west = (policy.clusters[n] for n in ("hub", "east", "west"))
    assert (hub.role, east.role, west.role) == (MANAGER, WORKER, WORKER)
    assert (east.secret, east.cluster_profile) == ("east-kubeconfig", None)
    assert (west.secret, west.cluster_profile) == (None, "west")
    assert (hub.dispatch_order, east.dispatch_order) == (100, 1)
    assert hub.kubernetes is None and east.inline_credentials == ()
    assert policy.pools["h100-train"].cluster == "east"
    assert policy.pools["l40s-infer"].cluster == "west"


def test_single_cluster_policy_has_no_clusters():
    loaded = _policy(PolicyText(BASE))
    assert loaded.clusters == {}
    assert {p.cluster for p in loaded.pools.values()} == {None}


def test_cluster_versions_and_inline_keys(multi):
    multi.replace(
        "clusters.yaml",
        "  credentials: {clusterProfile: west}\n",
        '  credentials: {clusterProfile: west, token: abc}\n  versions: {kubernetes: "1.32"}\n'
        "  targets: [core, kueue]\n",
    )
    west = _policy(multi).clusters["west"]
    assert west.kubernetes == (1, 32)
    assert west.inline_credentials == ("token",)
    assert west.targets == ("core", "kueue")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  role: manager\n", "  role: hub\n"),  # not a role
        ("  role: manager\n", "  region: eu\n"),  # role is required
        ("  dispatchOrder: 1\n", "  dispatchOrder: -1\n"),
        ("  credentials: {secret: east-kubeconfig}\n", "  credentials: {secret: East_Config}\n"),
        ("  dispatchOrder: 1\n", "  dispatchOrder: 1\n  colour: red\n"),
    ],
)
def test_cluster_schema_refuses(multi, old, new):
    multi.replace("clusters.yaml", old, new)
    assert [d.rule for d in multi.diagnostics() if d.rule == "schema"] != []


def test_pool_cluster_must_be_a_name(multi):
    multi.replace("pools.yaml", "cluster: west", "cluster: West_1")
    found = [d for d in multi.diagnostics() if d.rule == "schema"]
    assert [str(d.span).split(":")[0] for d in found] == ["pools.yaml"]


def test_workers_in_dispatch_order_then_name(multi):
    policy = _policy(multi)
    assert [c.name for c in clusters.workers(policy)] == ["east", "west"]
    assert [c.name for c in clusters.managers(policy)] == ["hub"]
    multi.replace("clusters.yaml", "dispatchOrder: 2", "dispatchOrder: 0")
    assert [c.name for c in clusters.workers(_policy(multi))] == ["west", "east"]
    multi.replace("clusters.yaml", "dispatchOrder: 0", "dispatchOrder: 1")
    assert [c.name for c in clusters.workers(_policy(multi))] == ["east", "west"]


def test_cluster_policy_narrows_pools_quotas_and_versions(multi):
    multi.replace(
        "clusters.yaml",
        "  dispatchOrder: 2\n",
        '  dispatchOrder: 2\n  versions: {kubernetes: "1.32"}\n',
    )
    policy = _policy(multi)
    west = clusters.cluster_policy(policy, "west")
    assert list(west.pools) == ["l40s-infer"]
    assert [q.pool for q in west.teams["ml"].quotas] == ["l40s-infer"]
    assert set(west.teams) == set(policy.teams)  # namespaces/LocalQueues everywhere
    assert west.clusters == {}
    assert west.fleet is not None and policy.fleet is not None
    assert west.fleet.kubernetes == (1, 32) and policy.fleet.kubernetes == (1, 33)
    assert west.fleet.kueue == policy.fleet.kueue
    assert clusters.cluster_policy(policy, "west") is west  # memoized
    hub = clusters.cluster_policy(policy, "hub")
    assert hub.pools == {} and hub.fleet is not None
    assert hub.fleet.targets == ("core", "kueue")


def test_manager_quota_is_the_sum_of_worker_quotas(multi):
    policy = _policy(multi)
    ml = policy.teams["ml"]
    sums = clusters.worker_sums(policy, ml)
    assert list(sums)[:2] == ["cpu", "memory"]
    assert sums["nvidia.com/gpu"] == "16"
    per_worker = [
        clusters.worker_sums(clusters.cluster_policy(policy, n), ml) for n in ("east", "west")
    ]
    assert per_worker == [{}, {}]  # a narrowed policy has no workers of its own
    assert [c.name for c in clusters.team_workers(policy, ml)] == ["east", "west"]
    assert clusters.manager_quota(policy, ml) == sums


def test_manager_quota_override(multi):
    multi.replace(
        "teams.yaml",
        "  budget: {monthly: 100000}\n",
        "  budget: {monthly: 100000}\n  managerQuota: {nvidia.com/gpu: 12}\n",
    )
    policy = _policy(multi)
    quota = clusters.manager_quota(policy, policy.teams["ml"])
    assert quota["nvidia.com/gpu"] == "12"
    assert quota["cpu"] == clusters.worker_sums(policy, policy.teams["ml"])["cpu"]


def test_a_team_on_one_worker_is_dispatched_there_only(multi):
    multi.replace(
        "teams.yaml", "    - {pool: l40s-infer, cards: 8}\n    - {pool: h100", "    - {pool: h100"
    )
    policy = _policy(multi)
    serving = policy.teams["serving"]  # its L40S quota is gone: H100 on east only
    assert [c.name for c in clusters.team_workers(policy, serving)] == ["east"]
    assert clusters.worker_sums(policy, serving)["nvidia.com/gpu"] == "8"
    assert [c.name for c in clusters.team_workers(policy, policy.teams["ml"])] == ["east", "west"]
