"""`explain --preempt` on the bundled fleet: the victims, their reasons and settings, why no
preemption helps, the usage file's two forms and its errors, the JSON schema, exit codes, and
explain's live lines answering from the same model."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner, Result

from hetgitops.cli.main import main
from hetgitops.explain import run
from hetgitops.explain.state import Holder, LiveState

REPO = Path(__file__).resolve().parents[2]
NOW = "2026-12-01"
USAGE = REPO / "examples" / "preempt" / "usage.yaml"
SCHEMA = json.loads((REPO / "schemas" / "explain-preempt.schema.json").read_text("utf-8"))
H100 = "h100-infer-ddcde6d9"  # the bundled render's flavor of h100-infer
A800 = ("--card", "a800-80gb", "--per-node", "8", "--tier", "training")


def ask(*args: str, usage: Path | str = USAGE, stdin: str | None = None) -> Result:
    base = ["explain", "--policy", str(REPO / "policies"), "--now", NOW, "--preempt"]
    return CliRunner().invoke(main, [*base, "--usage", str(usage), *args], input=stdin)


def test_pretraining_reclaims_while_borrowing_and_preempts_its_own_dev_job() -> None:
    result = ask("--team", "pretraining", "--gpus", "16", *A800, "--format", "json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    jsonschema.validate(body, SCHEMA)
    (report,) = body["reports"]
    assert report["outcome"] == "preempt"
    assert report["pool"] == "a800-train"
    assert [(v["name"], v["reason"], v["setting"]) for v in report["victims"]] == [
        (
            "ft-nlp/sft-b",
            "InCohortReclaimWhileBorrowing",
            "borrowWithinCohort: LowerPriority (maxPriorityThreshold 100)",
        ),
        ("pt/ablation-1", "InClusterQueue", "withinClusterQueue: LowerPriority"),
    ]


def test_a_queue_that_would_borrow_reclaims_nothing_without_borrow_within_cohort() -> None:
    """finetune-vision is at its nominal 24; finetune-nlp borrows 8 of a lower priority, but
    reclaiming them would leave finetune-vision borrowing, which borrowWithinCohort Never
    forbids (the issue's "reclaims only when the request fits within nominal quota")."""
    result = ask("--team", "finetune-vision", "--gpus", "8", *A800)
    assert result.exit_code == 1, result.output
    assert "no preemption admits it" in result.output
    assert "only if ClusterQueue finetune-vision would not borrow afterwards" in result.output
    assert "preempts " not in result.output


def test_within_cluster_queue_markdown() -> None:
    result = ask("--team", "finetune-nlp", "--gpus", "8", *A800, "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("### ft-nlp/8 nvidia.com/gpu (team finetune-nlp")
    assert (
        "- preempts `ft-nlp/sft-b` of ClusterQueue finetune-nlp, priority 100: InClusterQueue, "
        "allowed by ClusterQueue finetune-nlp's withinClusterQueue: LowerPriority"
    ) in result.output


def test_a_request_above_what_the_queue_can_ever_hold_is_exceeds_max_quota() -> None:
    result = ask("--team", "finetune-vision", "--gpus", "64", *A800)
    assert result.exit_code == 1, result.output
    assert (
        "768 cpu in a800-train is more than ClusterQueue finetune-vision can ever hold (384): "
        "ExceedsMaxQuota"
    ) in result.output


def test_a_free_pool_admits_without_preemption() -> None:
    result = ask("--team", "online-inference", "--card", "l40s-48gb", "--gpus", "4")
    assert result.exit_code == 0, result.output
    assert "admitted without preemption in pool l40s-infer" in result.output


def _workload(name: str, priority: int, gpus: int, at: str) -> dict[str, Any]:
    """A Kueue v1beta2 Workload admitted in finetune-nlp's h100-infer flavor."""
    requests = {"nvidia.com/gpu": str(gpus)}
    assignment = {"name": "main", "flavors": {"nvidia.com/gpu": H100}, "resourceUsage": requests}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ft-nlp", "creationTimestamp": at},
        "spec": {"queueName": "ft-nlp", "priority": priority},
        "status": {
            "admission": {"clusterQueue": "finetune-nlp", "podSetAssignments": [assignment]},
            "conditions": [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": at}],
        },
    }


WORKLOADS = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        _workload("dev-a", 100, 4, "2026-12-01T01:00:00Z"),
        _workload("dev-b", 100, 4, "2026-12-01T02:00:00Z"),
        _workload("train-a", 10000, 4, "2026-12-01T00:00:00Z"),
    ],
}
H100_ASK = ("--team", "finetune-nlp", "--card", "h100-80gb", "--gpus", "8", "--per-node", "4")


def test_a_list_of_kueue_workloads_is_read_through_the_live_reader() -> None:
    """The e2e live fixture's three Workloads as a file: finetune-nlp holds 12 H100s; of its
    two dev Workloads Kueue preempts the one admitted most recently (ordering.go)."""
    result = ask(*H100_ASK, "--tier", "training", usage="-", stdin=yaml.safe_dump(WORKLOADS))
    assert result.exit_code == 0, result.output
    assert "Kueue preempts 1 workload(s) in pool h100-infer" in result.output
    assert "preempts ft-nlp/dev-b of ClusterQueue finetune-nlp, priority 100: InClusterQueue" in (
        result.output
    )


def test_explain_live_lines_answer_from_the_model() -> None:
    """The live "may preempt ... (enough)" line named every candidate by rule; the answer now
    names the victims Kueue picks."""
    policy = run.load_policy([REPO / "policies"], dt.date(2026, 12, 1))
    holders = tuple(
        Holder(f"ft-nlp/{n}", "finetune-nlp", p, {("h100-infer", "nvidia.com/gpu"): 4}, at)
        for n, p, at in (
            ("dev-a", 100, "2026-12-01T01:00:00Z"),
            ("dev-b", 100, "2026-12-01T02:00:00Z"),
            ("train-a", 10000, "2026-12-01T00:00:00Z"),
        )
    )
    state = LiveState(
        {("finetune-nlp", "h100-infer", "nvidia.com/gpu"): 12}, {}, (), "https://x", (), holders
    )
    from hetgitops.explain import request

    asked = request.Request("finetune-nlp", 8, "h100-80gb", None, 4, None, {}, "training")
    (e,) = run.explain_all(policy, [request.from_request(policy, asked)], state)
    assert e.verdict == "pending"
    lines = [n for n in e.notes if n.startswith("preemption: ")]
    assert lines == [
        "preemption: Kueue preempts 1 workload(s) in pool h100-infer to admit it (running "
        "workloads from the cluster)",
        "preemption: preempts ft-nlp/dev-b of ClusterQueue finetune-nlp, priority 100: "
        "InClusterQueue, allowed by ClusterQueue finetune-nlp's withinClusterQueue: LowerPriority",
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("kind: RunningWorkloads\nworkloads: [{name: x}]\n", "workloads/0: 'clusterQueue'"),
        (
            "kind: RunningWorkloads\nworkloads: [{name: x, clusterQueue: pretraining, "
            "priority: 1, pool: nowhere, usage: {nvidia.com/gpu: 1}}]\n",
            "no pool nowhere in the policy",
        ),
        (
            "kind: RunningWorkloads\nworkloads: [{name: x, clusterQueue: a, pool: p, usage: {}}]\n",
            "workloads/0",
        ),
    ],
)
def test_a_bad_usage_file_is_a_usage_error_with_where(text: str, said: str) -> None:
    result = ask("--team", "pretraining", "--gpus", "8", *A800, usage="-", stdin=text)
    assert result.exit_code == 2, result.output
    assert said in result.output


def test_preempt_needs_one_source_of_running_workloads() -> None:
    base = ["explain", "--policy", str(REPO / "policies"), "--now", NOW, "--preempt"]
    result = CliRunner().invoke(main, [*base, "--team", "pretraining", "--gpus", "8"])
    assert result.exit_code == 2
    assert "--usage FILE or from --kubeconfig" in result.output


def _template(tmp_path: Path, profile: str, team: str, name: str) -> dict[str, Any]:
    """A job template `hetgitops jobs` writes for the bundled fleet."""
    out = tmp_path / "jobs"
    result = CliRunner().invoke(
        main, ["jobs", str(REPO / "policies"), "--now", NOW, "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    loaded: dict[str, Any] = yaml.safe_load((out / profile / team / name).read_text("utf-8"))
    return loaded


def test_a_ray_job_whose_pod_sets_need_two_pools_is_not_answered_for_one(tmp_path: Path) -> None:
    """finetune-vision's RLHF RayJob: head, policy and submitter on a800-train, rollout on
    l40s-infer only. Kueue gives each pod set its own flavor; the model answers for one flavor
    per workload, so `unknown`, naming each pod set's pools. explain --preempt once read the
    pools from the last replayed cycle, where Kueue's assigner had stopped at the first pod set
    short of quota, and answered "no flavor of the team's ClusterQueue matches"."""
    job = _template(tmp_path, "ray-rlhf", "finetune-vision", "a800-80gb+l40s-48gb.yaml")
    result = ask("--format", "json", "-f", "-", stdin=yaml.safe_dump(job))
    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    jsonschema.validate(body, SCHEMA)
    (report,) = body["reports"]
    assert (report["outcome"], report["pool"]) == ("unknown", None), report
    assert report["why"][0].startswith(
        "its pod sets can run only in different pools (head: a800-train; policy: a800-train; "
        "rollout: l40s-infer; submitter: a800-train)"
    ), report


def test_a_volcano_job_is_not_answered_with_kueues_preemption(tmp_path: Path) -> None:
    """The bundled ascend-pretrain profile is a Volcano Job in a Volcano queue: Kueue never
    admits it, so its preemption does not apply (once: "no flavor ... matches")."""
    job = _template(tmp_path, "ascend-pretrain", "pretraining", "ascend-910b.yaml")
    result = ask("-f", "-", stdin=yaml.safe_dump(job))
    assert result.exit_code == 1, result.output
    assert "Volcano places this job, not Kueue: Kueue's preemption does not apply" in result.output
    assert "8 huawei.com/Ascend910" in result.output


def test_a_later_pod_set_short_of_quota_is_answered_in_the_shared_pool(tmp_path: Path) -> None:
    """finetune-nlp's llm-finetune JobSet on a800-train, leader and workers in one pod set
    group dropped: with the usage file the queue has room for the leader's 8 cards but not the
    workers' 8 more. Kueue's next cycle would resume the leader after a800-train, where it
    matches nothing; the flavor for preemption is still a800-train, where both pod sets run."""
    job = _template(tmp_path, "llm-finetune", "finetune-nlp", "a800-80gb.yaml")
    for replicated in job["spec"]["replicatedJobs"]:
        replicated["template"]["spec"]["template"]["metadata"]["annotations"].pop(
            "kueue.x-k8s.io/podset-group-name", None
        )
    result = ask("--format", "json", "-f", "-", stdin=yaml.safe_dump(job))
    body = json.loads(result.stdout)
    jsonschema.validate(body, SCHEMA)
    (report,) = body["reports"]
    assert report["pool"] == "a800-train", report
    assert report["requests"]["nvidia.com/gpu"] == 16
    assert report["outcome"] in ("preempt", "none"), report


def test_pod_sets_that_need_different_pools_are_not_answered_for_one(tmp_path: Path) -> None:
    """A JobSet whose leader selects a800-train and whose workers select a100-transition: Kueue
    gives each pod set its own flavor; the model answers for one flavor per workload, so the
    answer is `unknown`, naming each pod set's pools, not "no flavor matches"."""
    job = _template(tmp_path, "llm-finetune", "finetune-nlp", "a800-80gb.yaml")
    a100 = _template(tmp_path, "llm-finetune", "finetune-nlp", "a100-40gb.yaml")
    leader, workers = job["spec"]["replicatedJobs"]
    workers["template"] = a100["spec"]["replicatedJobs"][1]["template"]
    for replicated in (leader, workers):
        replicated["template"]["spec"]["template"]["metadata"]["annotations"].pop(
            "kueue.x-k8s.io/podset-group-name", None
        )
    result = ask("--format", "json", "-f", "-", stdin=yaml.safe_dump(job))
    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    jsonschema.validate(body, SCHEMA)
    (report,) = body["reports"]
    assert report["outcome"] == "unknown", report
    assert report["pool"] is None
    assert report["why"] == [
        "its pod sets can run only in different pools (leader: a800-train; workers: "
        "a100-transition): Kueue gives each pod set its own flavor, and hetgitops replays "
        "preemption for one flavor per workload, so no victims are predicted"
    ]


class _EmptyCluster:
    """A cluster with no Node, Pod or Workload: every node of the policy is missing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def list(self, resource: Any) -> list[dict[str, Any]]:
        return []

    def close(self) -> None:
        pass


def test_live_preemption_says_which_nodes_it_could_not_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The node reading's notes reach the user (they were dropped): a policy node missing from
    the cluster counts as full, and the answer says so on stderr before the report."""
    monkeypatch.setattr("hetgitops.live.client.Cluster", _EmptyCluster)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    base = ["explain", "--policy", str(REPO / "policies"), "--now", NOW, "--preempt"]
    asked = ["--team", "pretraining", "--gpus", "8", *A800, "--kubeconfig", str(kubeconfig)]
    result = CliRunner().invoke(main, [*base, *asked])
    assert result.exit_code in (0, 1), result.output
    said = [line for line in result.stderr.splitlines() if "not in the cluster" in line]
    assert said == [
        f"hetgitops explain: {_policy_nodes()} node(s) of the policy are not in the cluster "
        "(counted as full)"
    ], result.stderr


def _policy_nodes() -> int:
    from hetgitops.explain.nodes import pool_nodes

    policy = run.load_policy([REPO / "policies"], NOW)
    return sum(len(pool_nodes(policy, pool)) for pool in policy.pools.values())
