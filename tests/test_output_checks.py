"""Output validation: rendered objects against schemas and Kueue rules, reported at the policy."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hetgitops import api
from hetgitops.conformance import k8s_schemas, output_checks
from hetgitops.diagnostics import Diagnostic, Severity
from hetgitops.model.policy import Policy
from hetgitops.output.manifests import Manifest

POLICIES = Path(__file__).resolve().parents[1] / "policies"
Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def rendered() -> tuple[Policy, list[Manifest]]:
    result = api.validate([POLICIES], api.Options(check_output=False))
    assert result.policy is not None and result.manifests
    return result.policy, result.manifests


def _broken(
    rendered: tuple[Policy, list[Manifest]], kind: str, name: str, edit: Edit
) -> tuple[list[Manifest], Manifest]:
    """The render with one object edited by hand; returns the edited manifest too. Flavors and
    the Topology are named `<name>-<digest of their immutable fields>`: `name` is the stem."""
    out: list[Manifest] = []
    target: Manifest | None = None
    for manifest in rendered[1]:
        named = manifest.name == name or manifest.name.rpartition("-")[0] == name
        if manifest.kind == kind and named and target is None:
            obj = copy.deepcopy(dict(manifest.obj))
            edit(obj)
            manifest = Manifest(manifest.target, obj, manifest.origin, manifest.depth)
            target = manifest
        out.append(manifest)
    assert target is not None
    return out, target


def _errors(found: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in found if d.severity is Severity.ERROR]


def _check(
    rendered: tuple[Policy, list[Manifest]], kind: str, name: str, edit: Edit, **kwargs: Any
) -> tuple[list[Diagnostic], Manifest]:
    manifests, target = _broken(rendered, kind, name, edit)
    return _errors(output_checks.check(manifests, rendered[0], **kwargs)), target


def test_bundled_render_is_clean(rendered: tuple[Policy, list[Manifest]]) -> None:
    assert output_checks.check(rendered[1], rendered[0]) == []


def test_kueue_cel_at_the_team_line(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["preemption"]["reclaimWithinCohort"] = "Never"

    found, target = _check(rendered, "ClusterQueue", "pretraining", edit)
    assert [(d.rule, d.span, d.path) for d in found] == [
        ("kueue-cel", target.origin, "spec.preemption.borrowWithinCohort.policy")
    ]
    assert "ClusterQueue/pretraining" in found[0].message
    assert target.origin.line > 0 and target.origin.file.endswith("training.yaml")


def test_resources_out_of_order(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["resourceGroups"][0]["flavors"][1]["resources"].reverse()

    found, target = _check(rendered, "ClusterQueue", "pretraining", edit)
    assert {(d.rule, d.span, d.path) for d in found} == {
        ("kueue-cel", target.origin, "spec.resourceGroups[0].flavors[1].resources")
    }


def test_limits_without_cohort(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        del obj["spec"]["cohortName"]

    found, _ = _check(rendered, "ClusterQueue", "pretraining", edit)
    assert [d.rule for d in found] == ["kueue-cel"]


def test_lending_above_nominal(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "1k"

    found, _ = _check(rendered, "ClusterQueue", "pretraining", edit)
    assert [(d.rule, d.path) for d in found] == [
        ("kueue-cel", "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit")
    ]


def test_crd_schema_rejects_unknown_field(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["nodeSelector"] = {"a": "b"}

    found, target = _check(rendered, "ResourceFlavor", "a800-train", edit)
    assert [(d.rule, d.span, d.path) for d in found] == [("crd-schema", target.origin, "spec")]
    assert found[0].message.startswith(f"ResourceFlavor/{target.name}: spec: ")
    assert target.name.startswith("a800-train-")


def test_k8s_schema_rejects_unknown_field(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["preemptionPolicy"] = "Sometimes"
        obj["priority"] = 3

    found, target = _check(rendered, "PriorityClass", "dev", edit)
    assert {(d.rule, d.span) for d in found} == {("k8s-schema", target.origin)}
    assert len(found) == 1  # strict schema: the unknown `priority` field


def test_k8s_schema_type_error_names_the_field(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["hard"]["requests.nvidia.com/gpu"] = ["many"]

    found, _ = _check(rendered, "ResourceQuota", "hetgitops-accelerators", edit)
    assert [(d.rule, d.path) for d in found] == [
        ("k8s-schema", "spec.hard.requests.nvidia.com/gpu")
    ]


def test_label_values_checked_on_every_kind(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["metadata"]["labels"]["example.io/x"] = "y" * 64

    found, _ = _check(rendered, "Namespace", "pretrain", edit)
    assert [(d.rule, d.path) for d in found] == [("k8s-schema", "metadata.labels.example.io/x")]


def test_flavor_toleration_and_topology_rules(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["tolerations"][0]["operator"] = "Exists"
        obj["spec"]["tolerations"].append(
            {"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}
        )
        del obj["spec"]["nodeLabels"]

    found, _ = _check(rendered, "ResourceFlavor", "a800-train", edit)
    assert sorted((d.rule, d.path) for d in found) == [
        ("kueue-cel", "spec.tolerations[0].value"),
        ("kueue-cel", "spec.tolerations[1].tolerationSeconds"),
        ("kueue-cel", "spec.topologyName"),
    ]


def test_topology_hostname_must_be_last(rendered: tuple[Policy, list[Manifest]]) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["levels"].reverse()

    found, _ = _check(rendered, "Topology", "fleet-topology", edit)
    assert [(d.rule, d.path) for d in found] == [("kueue-cel", "spec.levels[0]")]


def test_description_and_local_queue_limits(rendered: tuple[Policy, list[Manifest]]) -> None:
    def long_description(obj: dict[str, Any]) -> None:
        obj["description"] = "x" * 2049

    found, _ = _check(rendered, "WorkloadPriorityClass", "dev", long_description)
    assert ("kueue-limits", "description") in {(d.rule, d.path) for d in found}

    def long_name(obj: dict[str, Any]) -> None:
        obj["metadata"]["name"] = "q" * 64

    found, _ = _check(rendered, "LocalQueue", "pretraining", long_name)
    assert ("kueue-limits", "metadata.name") in {(d.rule, d.path) for d in found}


def _many_flavors(count: int) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        group = obj["spec"]["resourceGroups"][0]
        template = group["flavors"][0]
        group["flavors"] = [{**template, "name": f"f{i}"} for i in range(count)]

    return edit


def test_flavor_limit_64_or_16_before_kueue_0_14(rendered: tuple[Policy, list[Manifest]]) -> None:
    policy, manifests = rendered
    assert policy.fleet is not None
    found, _ = _check(rendered, "ClusterQueue", "pretraining", _many_flavors(17))
    assert not [d for d in found if d.rule == "kueue-limits"]
    found, _ = _check(rendered, "ClusterQueue", "pretraining", _many_flavors(65))
    assert ("kueue-limits", "spec.resourceGroups[0].flavors") in {(d.rule, d.path) for d in found}

    legacy = dataclasses.replace(policy, fleet=_with_kueue(policy, (0, 13, 0)))
    broken, _ = _broken((legacy, manifests), "ClusterQueue", "pretraining", _many_flavors(17))
    found = _errors(output_checks.check(broken, legacy))
    assert ("kueue-limits", "spec.resourceGroups[0].flavors") in {(d.rule, d.path) for d in found}


def _with_kueue(policy: Policy, version: tuple[int, ...]) -> Any:
    assert policy.fleet is not None
    return dataclasses.replace(policy.fleet, kueue=version)


def test_unknown_kubernetes_minor_falls_back_with_a_warning(
    rendered: tuple[Policy, list[Manifest]],
) -> None:
    policy, manifests = rendered
    assert policy.fleet is not None
    newest = k8s_schemas.bundled_minors()[-1]
    future = dataclasses.replace(policy.fleet, kubernetes=(newest[0], newest[1] + 5))
    found = output_checks.check(manifests, dataclasses.replace(policy, fleet=future))
    assert [(d.rule, d.severity, d.span) for d in found] == [
        ("k8s-schema", Severity.WARNING, future.origin.at("spec", "versions", "kubernetes"))
    ]


def test_minor_versions_compare_as_numbers() -> None:
    minors = k8s_schemas.bundled_minors()
    assert minors == tuple(sorted(minors))
    assert k8s_schemas.resolve_minor((1, 4)) is None  # 1.4 is older than 1.36, not newer
    assert k8s_schemas.resolve_minor((1, 99)) == minors[-1]
    assert k8s_schemas.resolve_minor(minors[0]) == minors[0]


def test_validators_are_built_once(rendered: tuple[Policy, list[Manifest]]) -> None:
    output_checks.check(rendered[1], rendered[0])
    before = k8s_schemas.k8s_validator.cache_info().misses
    output_checks.check(rendered[1], rendered[0])
    assert k8s_schemas.k8s_validator.cache_info().misses == before


CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.io}
spec:
  group: example.io
  names: {kind: Widget, plural: widgets}
  scope: Cluster
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              properties:
                size: {x-kubernetes-int-or-string: true, pattern: '^[0-9]+$'}
                note: {type: string, nullable: true}
                free: {type: object, x-kubernetes-preserve-unknown-fields: true,
                       properties: {a: {type: string}}}
                count: {type: integer, format: int32}
"""


@pytest.mark.parametrize(
    ("spec", "errors"),
    [
        ({"size": 3, "note": None, "free": {"a": "x", "b": 1}, "count": 5}, []),
        ({"size": "3"}, []),
        ({"size": "x3"}, ["spec.size"]),
        ({"extra": 1}, ["spec"]),
        ({"count": 2**31}, ["spec.count"]),
    ],
)
def test_crd_dir(tmp_path: Path, spec: dict[str, Any], errors: list[str]) -> None:
    (tmp_path / "widget.yaml").write_text(CRD)
    result = api.validate([POLICIES], api.Options(check_output=False))
    assert result.policy is not None and result.policy.fleet is not None
    origin = result.policy.fleet.origin.span
    widget = {
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    }
    manifests = [*result.manifests, Manifest("core", widget, origin)]
    found = _errors(output_checks.check(manifests, result.policy, crd_dirs=[tmp_path]))
    assert [(d.rule, d.path, d.span) for d in found] == [("crd-schema", p, origin) for p in errors]


def test_unknown_kind_is_reported_once(rendered: tuple[Policy, list[Manifest]]) -> None:
    policy, manifests = rendered
    odd = [
        Manifest("core", {"apiVersion": "x.io/v1", "kind": "Odd", "metadata": {"name": n}})
        for n in ("a", "b")
    ]
    found = output_checks.check([*manifests, *odd], policy)
    assert [(d.rule, d.severity) for d in found] == [("crd-schema", Severity.INFO)]


def test_cohorts_need_kueue_0_13(rendered: tuple[Policy, list[Manifest]]) -> None:
    policy, manifests = rendered
    old = dataclasses.replace(policy, fleet=_with_kueue(policy, (0, 12, 0)))
    found = [d for d in output_checks.check(manifests, old) if d.path == "spec.versions.kueue"]
    assert old.fleet is not None
    assert [(d.rule, d.severity, d.span) for d in found] == [
        ("kueue-limits", Severity.ERROR, old.fleet.origin.at("spec", "versions", "kueue"))
    ]


_BAD = {"example.io/profile": "p" * 64}


def _pod(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {"containers": []}}


@pytest.mark.parametrize(
    ("api_version", "kind", "spec", "path"),
    [
        ("batch/v1", "Job", {"template": _pod(_BAD)}, "spec.template"),
        (
            "jobset.x-k8s.io/v1alpha2",
            "JobSet",
            {"replicatedJobs": [{"template": {"spec": {"template": _pod(_BAD)}}}]},
            "spec.replicatedJobs[0].template.spec.template",
        ),
        (
            "kubeflow.org/v1",
            "PyTorchJob",
            {"pytorchReplicaSpecs": {"Worker": {"template": _pod(_BAD)}}},
            "spec.pytorchReplicaSpecs.Worker.template",
        ),
        (
            "batch.volcano.sh/v1alpha1",
            "Job",
            {"tasks": [{"template": _pod(_BAD)}]},
            "spec.tasks[0].template",
        ),
        (
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            {"leaderWorkerTemplate": {"workerTemplate": _pod(_BAD)}},
            "spec.leaderWorkerTemplate.workerTemplate",
        ),
    ],
)
def test_pod_template_labels_are_checked(
    rendered: tuple[Policy, list[Manifest]],
    api_version: str,
    kind: str,
    spec: dict[str, Any],
    path: str,
) -> None:
    """Any `metadata.labels` inside the object, reported with its path."""
    policy, _ = rendered
    obj = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "j", "namespace": "t", "labels": {"ok": "fine"}},
        "spec": spec,
    }
    found = [
        d for d in output_checks.check([Manifest("jobs", obj)], policy) if d.rule == "k8s-schema"
    ]
    assert [(d.path, d.severity) for d in found] == [
        (f"{path}.metadata.labels.example.io/profile", Severity.ERROR)
    ]
