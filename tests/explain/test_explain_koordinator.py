"""explain for a pod of koord-scheduler: koord-scheduler v1.8.0's ElasticQuota PreFilter
(pkg/scheduler/plugins/elasticquota/plugin.go:256-283) replayed over the policy's quota trees;
the messages are those the real Koordinator writes in the sim (tests/sim/
test_sim_koordinator.py)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from hetgitops.cli import main as cli
from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.formats import render_markdown, render_text
from hetgitops.explain.koordinator import insufficient_quotas
from hetgitops.explain.workload import KOORDINATOR, from_manifest

REPO = Path(__file__).resolve().parents[2]
NOW = dt.date(2026, 12, 1)
GPU = "nvidia.com/gpu"
LABEL = "quota.scheduling.koordinator.sh/name"


@pytest.fixture(scope="module")
def policy() -> Any:
    return run.load_policy([REPO / "policies"], NOW)


def job(quota: str | None, pods: int, gpus: int, namespace: str = "ft-nlp") -> dict[str, Any]:
    labels = {} if quota is None else {LABEL: quota}
    limits = {"cpu": "8", "memory": "64Gi", GPU: gpus}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": namespace},
        "spec": {
            "parallelism": pods,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": "koord-scheduler",
                    "containers": [{"name": "main", "resources": {"limits": limits}}],
                },
            },
        },
    }


def test_a_koord_scheduler_pod_is_read_with_its_quota_label() -> None:
    workload = from_manifest(job("finetune-nlp-a100-transition", 2, 8))
    assert workload.scheduler == KOORDINATOR
    assert workload.queue == "finetune-nlp-a100-transition"


def test_a_label_on_the_job_itself_does_not_reach_the_pods() -> None:
    obj = job(None, 1, 1)
    obj["metadata"]["labels"] = {LABEL: "finetune-nlp-a100-transition"}
    assert from_manifest(obj).queue is None


def test_pods_above_the_quotas_max_get_koordinators_message(policy: Any) -> None:
    """16 of max 16 cards used by two pods: the third is refused by PreFilter, with the
    runtime the calculator gives the leaf (its request, capped at max)."""
    found = explain(policy, from_manifest(job("finetune-nlp-a100-transition", 3, 8)))
    assert (found.verdict, found.reason) == ("pending", "Unschedulable")
    assert found.message == (
        "Insufficient quotas, quotaName: finetune-nlp-a100-transition, runtime: "
        "cpu:24,memory:192Gi,nvidia.com/gpu:16, used: cpu:16,memory:128Gi,nvidia.com/gpu:16, "
        "pod's request: cpu:8,memory:64Gi,nvidia.com/gpu:8, exceedDimensions: [nvidia.com/gpu]"
    )
    (fix,) = found.fixes
    assert (str(fix.span), fix.resource, fix.amount) == (
        "policies/teams/training.yaml:49:7",
        GPU,
        8,
    )
    assert any("pod 3 of 3 is refused" in line for line in found.koordinator)


def test_pods_within_the_max_run_in_the_pool_of_the_quotas_tree(policy: Any) -> None:
    found = explain(policy, from_manifest(job("finetune-nlp-a100-transition", 2, 8)))
    assert (found.verdict, found.pool, found.fixes) == ("admitted", "a100-transition", ())
    # kube-scheduler sees only the tree's nodes: koord-manager pins the pod to its pool
    assert found.scheduler == ("pod set main: 2 node(s) fit a pod of 8 nvidia.com/gpu "
                               "(up to 1 such pods per node)",)  # fmt: skip
    assert "admitted in pool a100-transition" in render_text([found])


def test_a_pod_labelled_with_a_parent_quota_is_refused_by_the_webhook(policy: Any) -> None:
    found = explain(policy, from_manifest(job("cohort-training-a100-transition", 1, 1)))
    assert (found.verdict, found.reason) == ("rejected", "Forbidden")
    assert found.message == (
        "pod can not be linked to a parentQuotaGroup,quota:cohort-training-a100-transition, "
        "pod:train-<pod>"
    )
    assert str(found.fixes[0].span) == "policies/teams/training.yaml:47:5"  # spec.quotas


def test_an_unknown_quota_name_falls_silently_into_the_default_quota(policy: Any) -> None:
    """Counted in the default quota (plugin.go:339-358), but koord-manager's pod webhook,
    missing the name, finds the quota binding the pod's namespace and pins the pod to that
    quota's tree (multi_quota_tree_affinity.go:47-52, quota_topology.go:304-316): ft-nlp is
    bound to finetune-nlp-a800-train, so the pods may only run on a800-train's nodes."""
    found = explain(policy, from_manifest(job("finetune-nlp-a100-transiton", 9, 8)))
    assert found.verdict == "admitted" and found.pool == "a800-train"
    assert "koordinator-default-quota" in found.koordinator[0]
    assert "no ElasticQuota is named 'finetune-nlp-a100-transiton'" in found.policy[0]
    assert "pins the pod to pool a800-train" in found.policy[0]
    # only a800-train's 16 nodes are looked at (they are tainted, the job tolerates nothing)
    assert found.scheduler[0].startswith("pod set main: 0/16 nodes are available")
    elsewhere = explain(policy, from_manifest(job("x", 1, 8, namespace="nowhere")))
    assert elsewhere.pool is None and "pinned to no pool" in elsewhere.policy[0]


def test_without_a_label_the_namespace_binding_names_the_quota(policy: Any) -> None:
    found = explain(policy, from_manifest(job(None, 6, 8)))
    assert "namespace ft-nlp is bound to quota finetune-nlp-a800-train" in found.policy[0]
    assert "quotaName: finetune-nlp-a800-train" in found.message
    assert "runtime: cpu:48,memory:384Gi,nvidia.com/gpu:40" in found.message


def test_an_unbound_namespace_counts_in_the_default_quota(policy: Any) -> None:
    found = explain(policy, from_manifest(job(None, 1, 1, namespace="nowhere")))
    assert found.verdict == "admitted" and found.team is None
    assert "no quota binds namespace nowhere" in found.policy[0]


def test_the_message_sorts_exceeded_dimensions_and_prints_empty_usage() -> None:
    message = insufficient_quotas(
        "q", {"memory": 2**30, GPU: 1, "cpu": 500}, {}, {GPU: 2, "cpu": 1000}, [GPU, "cpu"]
    )
    assert message == (
        "Insufficient quotas, quotaName: q, runtime: cpu:500m,memory:1Gi,nvidia.com/gpu:1, "
        "used: <empty>, pod's request: cpu:1,nvidia.com/gpu:2, "
        "exceedDimensions: [cpu nvidia.com/gpu]"
    )


@pytest.fixture()
def koord_fleet(tmp_path: Path) -> Path:
    """The bundled fleet rendered for Koordinator only, each tree at half the pool."""
    root = tmp_path / "policies"
    shutil.copytree(REPO / "policies", root)
    fleet = root / "fleet.yaml"
    text = fleet.read_text().replace(
        "targets: [core, kueue, volcano, nodes, gpu-operator]",
        "targets: [core, volcano, nodes, gpu-operator, koordinator]\n"
        '  koordinator:\n    resourceRatio: "0.5"',
    )
    fleet.write_text(text)
    return root


def test_a_quota_gets_its_min_even_where_the_tree_holds_less(koord_fleet: Path) -> None:
    """At a ratio of 0.5 the l40s tree holds 16 cards, less than the teams' min (32, which
    validate reports as koordinator-min-over-capacity). Koordinator's calculator gives a
    quota whose request is within its min that request whatever the parent holds
    (runtime_quota_calculator.go:117-147): 20 cards pass PreFilter; kube-scheduler is left
    to refuse what the nodes lack."""
    policy = run.load_policy([koord_fleet], NOW)
    found = explain(policy, from_manifest(job("finetune-vision-l40s-infer", 5, 4)))
    assert found.verdict == "admitted"
    assert found.koordinator[0].endswith("runtime 40 cpu, 320Gi memory, 20 nvidia.com/gpu")
    found = explain(policy, from_manifest(job("finetune-vision-l40s-infer", 6, 4)))
    assert "runtime: cpu:48,memory:384Gi,nvidia.com/gpu:20" in found.message


def test_a_profile_rendered_for_koordinator_is_explained_in_every_format(
    koord_fleet: Path,
) -> None:
    base = ["explain", "--policy", str(koord_fleet), "--now", NOW.isoformat()]
    args = [*base, "--profile", "data-filter", "--team", "finetune-nlp", "--format", "json"]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    schema = json.loads((REPO / "schemas" / "explain.schema.json").read_text())
    jsonschema.validate(body, schema)
    first = body["explanations"][0]
    assert first["workload"]["scheduler"] == "koordinator"
    assert first["koordinator"][0].startswith("quota finetune-nlp-")
    policy = run.load_policy([koord_fleet], NOW)
    workloads = run.workloads_asked(
        policy, text=None, profile="data-filter", team="finetune-nlp", asked=None
    )
    markdown = render_markdown(run.explain_all(policy, workloads))
    assert "- Koordinator: quota finetune-nlp-" in markdown


def test_each_ray_worker_group_is_judged_in_its_own_pools_quota(koord_fleet: Path) -> None:
    """jobs labels a worker group on another card type with that pool's leaf quota
    (compilers/jobs/ray_context.py): each quota is judged apart, and kube-scheduler looks at
    each pod set's own tree."""
    policy = run.load_policy([koord_fleet], NOW)
    (found,) = run.explain_all(
        policy,
        run.workloads_asked(
            policy, text=None, profile="ray-rlhf", team="finetune-vision", asked=None
        ),
    )
    assert found.workload.kind == "RayJob" and found.verdict == "admitted"
    quotas = [line.split()[1] for line in found.koordinator]
    assert quotas == ["finetune-vision-a800-train", "finetune-vision-l40s-infer"]
    assert found.scheduler[2].startswith("pod set rollout: 4 node(s) fit")
