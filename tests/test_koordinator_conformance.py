"""`koordinator-webhook` and `koordinator-quota-label`: Koordinator v1.8.0's quota webhook and
quota plugin replayed over rendered objects; each rule fires on an object broken the way the
webhook refuses it, at the policy line of that object, and is quiet on the bundled render."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hetgitops import api
from hetgitops.compilers.jobs.render import compile_jobs
from hetgitops.conformance import koordinator_rules
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rendered() -> tuple[Policy, list[Manifest]]:
    result = api.render([REPO / "policies"], api.Options(targets=("koordinator",)))
    assert result.policy is not None and not result.failed()
    return result.policy, result.manifests


def _edited(manifests: list[Manifest], name: str, edit: Any) -> list[Manifest]:
    out = []
    for m in manifests:
        if m.kind == "ElasticQuota" and m.name == name:
            obj = copy.deepcopy(dict(m.obj))
            edit(obj)
            m = replace(m, obj=obj)
        out.append(m)
    return out


def _messages(policy: Policy, manifests: list[Manifest], rule: str) -> list[str]:
    return [d.message for d in koordinator_rules.check(manifests, policy) if d.rule == rule]


def test_the_bundled_render_passes(rendered: tuple[Policy, list[Manifest]]) -> None:
    policy, manifests = rendered
    assert koordinator_rules.check(manifests, policy) == []


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda o: o["spec"]["max"].pop("nvidia.com/gpu"), "min lists nvidia.com/gpu, max does"),
        (lambda o: o["spec"]["min"].update({"nvidia.com/gpu": "999"}), "is above max"),
        (lambda o: o["spec"]["max"].update({"cpu": "-1"}), "spec.max.cpu is negative"),
        (lambda o: o["metadata"]["labels"].update({
            "quota.scheduling.koordinator.sh/parent": "nowhere"}), "neither rendered"),
        (lambda o: o["metadata"]["labels"].update({
            "quota.scheduling.koordinator.sh/tree-id": "1"}), "differs from its parent"),
        (lambda o: o["spec"]["max"].update({"koordinator.sh/gpu-core": "0"}), "are not its parent"),
    ],
)  # fmt: skip
def test_a_quota_the_webhook_refuses(
    rendered: tuple[Policy, list[Manifest]], edit: Any, said: str
) -> None:
    policy, manifests = rendered
    broken = _edited(manifests, "pretraining-a800-train", edit)
    found = [d for d in koordinator_rules.check(broken, policy)]
    assert found and all(d.rule == "koordinator-webhook" for d in found)
    assert any(said in d.message for d in found), [d.message for d in found]
    leaf = next(m for m in manifests if m.name == "pretraining-a800-train")
    assert {str(d.span) for d in found if "pretraining-a800-train:" in d.message} == {
        str(leaf.origin)
    }
    # the team's quota entry for the pool: `- {pool: a800-train, cards: 80, ...}`
    assert (leaf.origin.file.endswith("teams/training.yaml"), leaf.origin.line) == (True, 10)


def test_children_above_their_parent(rendered: tuple[Policy, list[Manifest]]) -> None:
    policy, manifests = rendered
    broken = _edited(
        manifests,
        "cohort-training-a800-train",
        lambda o: o["spec"]["min"].update({"nvidia.com/gpu": "100"}),
    )
    said = _messages(policy, broken, "koordinator-webhook")
    assert any("children's min of nvidia.com/gpu add up to 128" in m for m in said), said


def test_a_child_of_a_leaf(rendered: tuple[Policy, list[Manifest]]) -> None:
    policy, manifests = rendered
    broken = _edited(
        manifests,
        "cohort-training-a800-train",
        lambda o: o["metadata"]["labels"].update(
            {"quota.scheduling.koordinator.sh/is-parent": "false"}
        ),
    )
    said = _messages(policy, broken, "koordinator-webhook")
    assert any("is not a parent" in m for m in said), said


def test_a_namespace_bound_twice(rendered: tuple[Policy, list[Manifest]]) -> None:
    policy, manifests = rendered
    broken = _edited(
        manifests,
        "finetune-nlp-a800-train",
        lambda o: o["metadata"]["annotations"].update(
            {"quota.scheduling.koordinator.sh/namespaces": '["pretrain"]'}
        ),
    )
    said = _messages(policy, broken, "koordinator-webhook")
    assert any("namespace pretrain is already bound" in m for m in said), said


def _jobs(policy: Policy) -> list[Manifest]:
    manifests, found = compile_jobs(policy, scheduler="koordinator")
    assert found == []
    return manifests


def _relabelled(manifests: list[Manifest], quota: str) -> list[Manifest]:
    out = []
    for m in manifests:
        text = json.dumps(m.obj)
        if "koord-scheduler" in text:
            m = replace(m, obj=json.loads(text.replace('"finetune-nlp-a800-train"', f'"{quota}"')))
        out.append(m)
    return out


def test_job_templates_name_only_leaves(rendered: tuple[Policy, list[Manifest]]) -> None:
    policy, _ = rendered
    jobs = _jobs(policy)
    assert koordinator_rules.check(jobs, policy) == []
    parent = _messages(
        policy, _relabelled(jobs, "cohort-training-a800-train"), "koordinator-quota-label"
    )
    assert parent and all("parent quota" in m for m in parent)
    typo = _messages(policy, _relabelled(jobs, "finetune-nlp-a80-train"), "koordinator-quota-label")
    assert typo and all("koordinator-default-quota" in m for m in typo)


def test_a_pod_requesting_a_resource_its_quota_lacks(
    rendered: tuple[Policy, list[Manifest]],
) -> None:
    policy, _ = rendered
    jobs = [
        replace(m, obj=json.loads(text.replace('"nvidia.com/gpu"', '"koordinator.sh/gpu-core"')))
        for m in _jobs(policy)
        if "finetune-nlp-a800-train" in (text := json.dumps(m.obj))
    ]
    said = _messages(policy, jobs, "koordinator-quota-label")
    assert said and all("does not list koordinator.sh/gpu-core" in m for m in said), said


def test_a_root_without_the_is_parent_quota_label(
    rendered: tuple[Policy, list[Manifest]],
) -> None:
    """The real webhook refuses every child of a root whose profile has no quotaLabels
    is-parent (tests/sim/test_sim_koordinator.py, quota_topology_check.go:196-198)."""
    policy, manifests = rendered
    out = []
    for m in manifests:
        if m.kind == "ElasticQuotaProfile":
            obj = copy.deepcopy(dict(m.obj))
            obj["spec"].pop("quotaLabels")
            m = replace(m, obj=obj)
        out.append(m)
    said = _messages(policy, out, koordinator_rules.WEBHOOK)
    assert said and all("a profile's root without" in s for s in said), said


def test_an_init_container_request_counts_against_the_quota(
    rendered: tuple[Policy, list[Manifest]],
) -> None:
    """Koordinator charges the Kubernetes pod request, init containers included
    (elasticquota/core/helper.go:27-33): one requesting a resource its quota lacks is not
    limited by the quota either."""
    policy, _ = rendered
    jobs = []
    for m in _jobs(policy):
        if "finetune-nlp-a800-train" not in json.dumps(m.obj):
            continue
        obj = copy.deepcopy(dict(m.obj))
        for spec in _specs(obj):
            init = {"name": "fetch", "resources": {"limits": {"koordinator.sh/gpu-core": "1"}}}
            spec["initContainers"] = [init]
        jobs.append(replace(m, obj=obj))
    assert jobs
    said = _messages(policy, jobs, "koordinator-quota-label")
    assert said and all("does not list koordinator.sh/gpu-core" in m for m in said), said


def _specs(value: Any) -> list[dict[str, Any]]:
    """Every pod spec (a mapping with containers) inside `value`."""
    if isinstance(value, dict):
        if "containers" in value:
            return [value]
        return [s for item in value.values() for s in _specs(item)]
    if isinstance(value, list):
        return [s for item in value for s in _specs(item)]
    return []
