"""explain and the ClusterQueue's namespaceSelector: Kueue admits a workload only from a
namespace whose labels the selector matches (kueue v0.19.2 pkg/workload/resources.go:244-246);
explain reads the labels the core target writes (`plan.namespace_labels`, the team's
`namespaceLabels`) and answers as Kueue's scheduler does."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import bundled

from hetgitops.explain import run
from hetgitops.explain.explanation import explain
from hetgitops.explain.state import read_state
from hetgitops.explain.workload import from_manifest
from hetgitops.live.client import Forbidden

NOW = dt.date(2026, 12, 1)
SELECTOR = "  kueue:\n    namespaceSelector:\n      matchLabels: {team: nlp}\n"


def _policy(tmp: Path, fields: str) -> Any:
    return run.load_policy([bundled.copy(tmp, team_fields=fields)], NOW)


def _job() -> dict[str, Any]:
    limits = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "ft-nlp",
            "labels": {"kueue.x-k8s.io/queue-name": "finetune-nlp"},
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "main", "resources": {"limits": limits, "requests": limits}}
                    ]
                }
            }
        },
    }


def test_a_namespace_the_selector_does_not_match_is_pending_as_kueue_says(tmp_path: Path) -> None:
    found = explain(_policy(tmp_path, SELECTOR), from_manifest(_job()), with_advice=False)
    assert (found.verdict, found.reason) == ("pending", "Misconfigured")
    assert found.message == "workload namespace doesn't match ClusterQueue selector"
    assert "add team: nlp to spec.namespaceLabels" in found.policy[0]


def test_the_namespace_labels_the_selector_matches_admit(tmp_path: Path) -> None:
    fields = SELECTOR + "  namespaceLabels: {team: nlp}\n"
    found = explain(_policy(tmp_path, fields), from_manifest(_job()), with_advice=False)
    assert found.reason != "Misconfigured", found.message
    assert found.verdict == "admitted", found.message


def test_a_pod_past_the_teams_own_accelerator_cap_is_refused_at_creation(tmp_path: Path) -> None:
    """`namespaceQuota.accelerators` caps nvidia.com/gpu at 1 (a cluster's own quota, kept by
    import): the second one-GPU pod is refused by the API server's quota admission, though
    Kueue would admit the job (plan.namespace_quota, the fact the render writes)."""
    fields = "  namespaceQuota:\n    accelerators: {nvidia.com/gpu: 1}\n"
    job = _job()
    job["spec"]["parallelism"] = 2
    found = explain(_policy(tmp_path, fields), from_manifest(job), with_advice=False)
    assert (found.verdict, found.reason) == ("rejected", "Forbidden")
    assert "requests.nvidia.com/gpu=1" in found.message, found.message


# Live mode: Kueue matches the selector against the live Namespace's labels
# (kueue v0.19.2 pkg/workload/resources.go:237-246), not against what the policy renders.
TEAM_LABEL = "hetgitops.io/team"
CLUSTER_OWN = {"kubernetes.io/metadata.name": "ft-nlp"}


def test_live_labels_lacking_what_the_policy_renders_pend_and_the_advice_is_to_sync(
    tmp_path: Path,
) -> None:
    fields = SELECTOR + "  namespaceLabels: {team: nlp}\n"
    live = {"ft-nlp": {**CLUSTER_OWN, TEAM_LABEL: "finetune-nlp"}}
    found = explain(
        _policy(tmp_path, fields), from_manifest(_job()), namespaces=live, with_advice=False
    )
    assert (found.verdict, found.reason) == ("pending", "Misconfigured")
    (hint,) = found.policy
    assert "namespace ft-nlp is labelled in the cluster hetgitops.io/team=finetune-nlp" in hint
    assert "the policy renders team=nlp on it, which the selector selects" in hint
    assert "sync it" in hint
    assert "spec.namespaceLabels" not in hint
    assert found.fixes == ()  # nothing to edit in the policy


def test_live_labels_the_selector_matches_admit_though_the_policy_renders_none(
    tmp_path: Path,
) -> None:
    live = {"ft-nlp": {**CLUSTER_OWN, TEAM_LABEL: "finetune-nlp", "team": "nlp"}}
    found = explain(
        _policy(tmp_path, SELECTOR), from_manifest(_job()), namespaces=live, with_advice=False
    )
    assert found.verdict == "admitted", found.message
    assert any(
        "selects namespace ft-nlp by labels the cluster gave it" in line
        and "add team: nlp to spec.namespaceLabels" in line
        for line in found.policy
    ), found.policy


def test_live_labels_neither_selects_advise_the_policy_edit(tmp_path: Path) -> None:
    live = {"ft-nlp": {**CLUSTER_OWN, TEAM_LABEL: "finetune-nlp"}}
    found = explain(
        _policy(tmp_path, SELECTOR), from_manifest(_job()), namespaces=live, with_advice=False
    )
    assert (found.verdict, found.reason) == ("pending", "Misconfigured")
    (hint,) = found.policy
    assert "labelled in the cluster" in hint and "add team: nlp to spec.namespaceLabels" in hint
    assert len(found.fixes) == 1


def test_a_selected_namespace_lagging_the_policy_says_so(tmp_path: Path) -> None:
    """The bundled selector (the team label) still selects, but the namespace lacks a label the
    policy renders: admitted, and the lag is named."""
    fields = "  namespaceLabels: {cost-center: nlp}\n"
    live = {"ft-nlp": {**CLUSTER_OWN, TEAM_LABEL: "finetune-nlp"}}
    found = explain(
        _policy(tmp_path, fields), from_manifest(_job()), namespaces=live, with_advice=False
    )
    assert found.verdict == "admitted", found.message
    assert (
        "namespace ft-nlp lacks the policy's labels cost-center=nlp in the cluster: the cluster "
        "lags the policy, sync it (apply the render)"
    ) in found.policy


def test_a_namespace_the_cluster_lacks_is_judged_by_the_render(tmp_path: Path) -> None:
    found = explain(_policy(tmp_path, ""), from_manifest(_job()), namespaces={}, with_advice=False)
    assert found.verdict == "admitted", found.message
    assert any("namespace ft-nlp is not in the cluster" in line for line in found.policy)


class _Cluster:
    """What read_state LISTs: Namespaces (or a refusal of them), nothing else."""

    server = "https://fake"

    def __init__(self, namespaces: list[dict[str, Any]] | None) -> None:
        self.namespaces = namespaces

    def list(self, resource: Any) -> list[dict[str, Any]]:
        if resource.plural != "namespaces":
            return []
        if self.namespaces is None:
            raise Forbidden("namespaces", "forbidden")
        return self.namespaces


def test_live_mode_reads_the_policys_namespaces_and_judges_by_them(tmp_path: Path) -> None:
    policy = _policy(tmp_path, SELECTOR + "  namespaceLabels: {team: nlp}\n")
    namespaces = [
        {"metadata": {"name": "ft-nlp", "labels": {TEAM_LABEL: "finetune-nlp"}}},
        {"metadata": {"name": "kube-system", "labels": {"a": "b"}}},
    ]
    cluster: Any = _Cluster(namespaces)
    state = read_state(policy, cluster)
    assert state.namespaces == {"ft-nlp": {TEAM_LABEL: "finetune-nlp"}}
    (found,) = run.explain_all(policy, [from_manifest(_job())], state)
    assert (found.verdict, found.reason) == ("pending", "Misconfigured")
    assert "sync it" in found.policy[0]


def test_namespaces_the_reader_may_not_list_leave_the_policys_labels_and_a_note(
    tmp_path: Path,
) -> None:
    policy = _policy(tmp_path, SELECTOR + "  namespaceLabels: {team: nlp}\n")
    cluster: Any = _Cluster(None)
    state = read_state(policy, cluster)
    assert state.namespaces is None
    assert any(n.startswith("Namespaces not read") for n in state.notes), state.notes
    (found,) = run.explain_all(policy, [from_manifest(_job())], state)
    # judged by the rendered labels, which the selector selects (no node is listed here, so
    # the topology placement, not the namespace, is what keeps it pending)
    assert found.reason != "Misconfigured", found.message
