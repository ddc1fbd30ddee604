"""The team namespace's ResourceQuota as one plan fact (issue 34): `render` writes it and
explain applies it at pod creation from the same `plan.namespace_quota`, an adopted quota's
other limits (cpu, pods: `Team.spec.namespaceQuota.hard`) included."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import bundled
import pytest

from hetgitops.api import Options, render
from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.koord_runtime import KoordUsage
from hetgitops.explain.koord_state import _namespaces
from hetgitops.explain.namespace_quota import charged_as
from hetgitops.explain.workload import from_manifest
from hetgitops.plan.namespace_quota import of_namespace

NOW = dt.date(2026, 12, 1)
FT = "finetune-nlp-a100-transition"
LABEL = "quota.scheduling.koordinator.sh/name"
ADOPTED = """  namespaceQuota:
    name: compute
    hard: {cpu: "3", pods: "4", limits.memory: 64Gi, services: "2"}
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled fleet with the koordinator target, finetune-nlp's quota adopted from a
    cluster whose ResourceQuota `compute` also capped cpu, pods, limits and services."""
    return bundled.copy(tmp_path_factory.mktemp("ns-quota"), koordinator=True, team_fields=ADOPTED)


@pytest.fixture(scope="module")
def policy(root: Path) -> Any:
    return run.load_policy([root], NOW)


def job(pods: int, cpu: str) -> dict[str, Any]:
    limits = {"cpu": cpu, "memory": "1Gi"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ft-nlp"},
        "spec": {
            "parallelism": pods,
            "template": {
                "metadata": {"labels": {LABEL: FT}},
                "spec": {
                    "schedulerName": "koord-scheduler",
                    "containers": [
                        {"name": "main", "resources": {"limits": limits, "requests": limits}}
                    ],
                },
            },
        },
    }


def test_a_pod_over_the_adopted_cpu_limit_is_refused_at_creation(policy: Any) -> None:
    """`cpu: 3` charges each pod's cpu request: the fourth pod of 1 cpu is refused by the API
    server's quota admission, in its words (the exceeded key only, as the quota spells it)."""
    found = explain(policy, from_manifest(job(4, "1")))
    assert (found.verdict, found.reason) == ("rejected", "Forbidden")
    assert found.message == (
        'pods "train-<pod 4>" is forbidden: exceeded quota: compute, requested: cpu=1, '
        "used: cpu=3, limited: cpu=3"
    )
    assert "the API server creates 3 of 4 pod(s): ResourceQuota compute" in found.koordinator[-1]
    assert explain(policy, from_manifest(job(3, "1"))).verdict == "admitted"


def test_a_pod_over_the_adopted_pod_count_is_refused(policy: Any) -> None:
    """`pods: 4` counts each pod that has not finished: the fifth is refused though its cpu
    (5 x 500m) fits; live, the namespace's running pods count and its finished ones do not."""
    found = explain(policy, from_manifest(job(5, "500m")))
    assert found.message == (
        'pods "train-<pod 5>" is forbidden: exceeded quota: compute, requested: pods=1, '
        "used: pods=4, limited: pods=4"
    )
    running = {"metadata": {"namespace": "ft-nlp"}, "spec": {}, "status": {"phase": "Running"}}
    done = {**running, "status": {"phase": "Succeeded"}}
    used = _namespaces([running, running, done])
    assert used["ft-nlp"]["pods"] == 2 and used["ft-nlp"]["count/pods"] == 3
    found = explain(policy, from_manifest(job(3, "500m")), koord=KoordUsage(namespaces=used))
    assert found.verdict == "rejected" and "requested: pods=1, used: pods=4" in found.message


def test_render_and_explain_read_the_same_quota(root: Path, policy: Any) -> None:
    """Every ResourceQuota the render writes is the plan's fact for its namespace, name and
    hard keys alike; explain applies exactly the keys of it that charge a pod's requests."""
    result = render([root], Options(targets=("core",), now=NOW))
    quotas = {m.namespace: m.obj for m in result.manifests if m.kind == "ResourceQuota"}
    assert "ft-nlp" in quotas
    for namespace, obj in quotas.items():
        fact = of_namespace(policy, namespace)
        assert fact is not None, namespace
        assert (fact.name, dict(fact.hard)) == (obj["metadata"]["name"], obj["spec"]["hard"])
    rendered = quotas["ft-nlp"]["spec"]["hard"]
    assert rendered["cpu"] == "3" and rendered["services"] == "2"
    applied = {k for k in rendered if charged_as(k) is not None}
    assert applied == {"cpu", "pods"} | {k for k in rendered if k.startswith("requests.")}


@pytest.mark.parametrize(
    ("key", "charged"),
    [
        ("pods", "pods"),
        ("count/pods", "count/pods"),
        ("cpu", "cpu"),
        ("requests.memory", "memory"),
        ("requests.nvidia.com/gpu", "nvidia.com/gpu"),
        ("hugepages-2Mi", "hugepages-2Mi"),
        ("requests.hugepages-2Mi", "hugepages-2Mi"),
        (
            "requests.deviceclass.resource.kubernetes.io/gpu",
            "deviceclass.resource.kubernetes.io/gpu",
        ),
        ("nvidia.com/gpu", None),  # an extended resource counts only as requests.<name>
        ("limits.cpu", None),  # a pod set's requests do not say its limits
        ("requests.storage", None),  # the PersistentVolumeClaim evaluator's
        ("gpu.example.com.deviceclass.resource.k8s.io/devices", None),  # the claims'
        ("services", None),
    ],
)
def test_the_keys_a_pod_is_charged_under(key: str, charged: str | None) -> None:
    """The pod evaluator's matching resources (k8s.io/kubernetes pods.go, docs/upstream.md)."""
    assert charged_as(key) == charged
