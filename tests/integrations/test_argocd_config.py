"""`hetgitops argocd-cm`: the diff rules hold for every rendered scenario and the upstream CRDs.

A custom resource is Synced in Argo CD when (a) quantities compare as quantities — the
knownTypeFields paths must reach the rendered quota values, walked through lists as Argo CD's
knownTypes normaliser walks them — and (b) no CRD default the API server adds inside a rendered
object is missing from the render (list items are compared whole, so a defaulted field inside a
list item would show as drift) unless an ignoreDifferences rule covers it."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from harness import upstream

from hetgitops import api
from hetgitops.cli.main import main
from hetgitops.compilers.argocd_config import (
    IGNORE_DIFFERENCES,
    KNOWN_TYPE_FIELDS,
    group_kind,
    health_scripts,
)
from hetgitops.model.quantities import parse as parse_quantity
from hetgitops.output.manifests import Manifest
from tests.integrations.conftest import REPO

SCENARIOS = [
    REPO / "policies",
    REPO / "examples" / "multicluster",
    *sorted((REPO / "tests/cases/render").glob("*/policy")),
]
GROUPS = ("kueue.x-k8s.io", "scheduling.volcano.sh")


@functools.cache
def manifests() -> tuple[Manifest, ...]:
    found: list[Manifest] = []
    for policy in SCENARIOS:
        result = api.render([policy], api.Options(now=dt.date(2026, 9, 1), check_output=False))
        assert not result.failed(), policy
        found += result.manifests
    return tuple(found)


def _walk(value: Any, path: list[str]) -> Iterator[Any]:
    """Values at a dotted path, descending into every list item (Argo CD's `normalize`)."""
    if isinstance(value, list):
        for item in value:
            yield from _walk(item, path)
    elif not path:
        yield value
    elif isinstance(value, dict) and path[0] in value:
        yield from _walk(value[path[0]], path[1:])


@pytest.mark.parametrize(
    ("key", "field", "kind"),
    [(key, field, kind) for key, rows in KNOWN_TYPE_FIELDS.items() for field, kind in rows],
)
def test_known_type_fields_reach_quantities(key: str, field: str, kind: str) -> None:
    values = [
        v for m in manifests() if group_kind(m.obj) == key for v in _walk(m.obj, field.split("."))
    ]
    assert values, f"{key}: {field} matches nothing hetgitops renders"
    quantities = [q for v in values for q in (v.values() if kind.endswith("ResourceList") else [v])]
    for quantity in quantities:
        parse_quantity(str(quantity))  # raises for a non-quantity


def _upstream_crds() -> dict[tuple[str, str], Mapping[str, Any]]:
    shared = upstream.for_test()
    schemas: dict[tuple[str, str], Mapping[str, Any]] = {}
    for path in [*shared.glob("kueue/crds/*.yaml"), *shared.glob("volcano/crds/*.yaml")]:
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            for version in spec["versions"]:
                api_version = f"{spec['group']}/{version['name']}"
                schema = version["schema"]["openAPIV3Schema"]
                schemas[(api_version, spec["names"]["kind"])] = schema
    return schemas


def missing_defaults(schema: Mapping[str, Any], value: Any, pointer: str = "") -> Iterator[str]:
    """JSON pointers of defaulted fields the API server would add inside `value`."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from missing_defaults(schema.get("items", {}), item, f"{pointer}/{index}")
        return
    if not isinstance(value, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        here = f"{pointer}/{key}"
        if key in value:
            yield from missing_defaults(sub, value[key], here)
        elif "default" in sub:
            yield here


def _ignored(key: str, pointer: str) -> bool:
    rules = IGNORE_DIFFERENCES.get(key, {}).get("jsonPointers", [])
    return any(pointer == rule or pointer.startswith(rule + "/") for rule in rules)


@pytest.mark.slow  # every rendered object against the upstream CRD schemas
def test_no_crd_default_is_left_to_the_api_server() -> None:
    schemas = _upstream_crds()
    checked, missing = 0, []
    for manifest in manifests():
        obj = manifest.obj
        if not manifest.applied or not str(obj.get("apiVersion", "")).startswith(GROUPS):
            continue
        schema = schemas.get((str(obj["apiVersion"]), str(obj["kind"])))
        assert schema is not None, f"no upstream CRD for {obj['apiVersion']} {obj['kind']}"
        checked += 1
        key = group_kind(obj)
        missing += [
            f"{key} {manifest.name}: {p}"
            for p in missing_defaults(schema, obj)
            if not p.startswith("/status") and not _ignored(key, p)
        ]
    assert checked > 100
    assert not missing, "\n".join(sorted(set(missing))[:20])


def test_missing_default_detection_can_fail() -> None:
    schema = {
        "properties": {
            "spec": {
                "properties": {
                    "items": {
                        "items": {"properties": {"mode": {"default": "x"}, "n": {}}},
                    }
                }
            }
        }
    }
    assert list(missing_defaults(schema, {"spec": {"items": [{"n": 1}]}})) == ["/spec/items/0/mode"]


def test_argocd_cm_command_prints_one_configmap_for_the_rendered_kinds() -> None:
    result = CliRunner().invoke(main, ["argocd-cm", str(REPO / "policies"), "--now", "2026-09-01"])
    assert result.exit_code == 0, result.output
    (cm,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert (cm["kind"], cm["metadata"]["name"], cm["metadata"]["namespace"]) == (
        "ConfigMap",
        "argocd-cm",
        "argocd",
    )
    assert all(isinstance(v, str) for v in cm["data"].values())
    health = {k.split(".health.", 1)[1] for k in cm["data"] if ".health." in k}
    multikueue = {"kueue.x-k8s.io_AdmissionCheck", "kueue.x-k8s.io_MultiKueueCluster"}
    assert health == set(health_scripts()) - multikueue  # a single-cluster fleet has none
    example = str(REPO / "examples" / "multicluster")
    result = CliRunner().invoke(main, ["argocd-cm", example, "--now", "2026-09-01"])
    assert result.exit_code == 0, result.output
    (multi,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert {k.split(".health.", 1)[1] for k in multi["data"] if ".health." in k} >= multikueue
    known = yaml.safe_load(
        cm["data"]["resource.customizations.knownTypeFields.kueue.x-k8s.io_ClusterQueue"]
    )
    assert {"field": "spec.resourceGroups.flavors.resources.nominalQuota",
            "type": "core/Quantity"} in known  # fmt: skip


def test_argocd_cm_only_covers_the_kinds_of_the_fleet() -> None:
    policy = REPO / "tests/cases/render/volcano-only/policy"
    result = CliRunner().invoke(main, ["argocd-cm", str(policy), "--now", "2026-09-01"])
    assert result.exit_code == 0, result.output
    keys = yaml.safe_load(result.stdout)["data"]
    assert keys and all(k.endswith("scheduling.volcano.sh_Queue") for k in keys)


def test_argocd_cm_of_an_invalid_policy_prints_nothing(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text("apiVersion: hetgitops.io/v1alpha1\nkind: Fleet\n")
    result = CliRunner().invoke(main, ["argocd-cm", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stdout == ""
