"""Schema stage: findings point at the offending key or value; the schemas themselves are sound."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from referencing import Registry, Resource

from hetgitops.cli import main as cli
from hetgitops.diagnostics import Diagnostic
from hetgitops.load.documents import KINDS, load_paths, load_sources
from hetgitops.model import schema

REPO = Path(__file__).resolve().parents[1]
HEAD = "apiVersion: hetgitops.io/v1alpha1\nkind: PriorityTier\nmetadata:\n  name: gold\n"
POOL = """\
apiVersion: hetgitops.io/v1alpha1
kind: Pool
metadata:
  name: train
spec:
  cardType: h100
  purpose: training
  cardsPerNode: 8
  nodes:
    - {names: "gpu-[1:4]", zone: zone-a}
"""


def schema_findings(text: str) -> list[Diagnostic]:
    loaded = load_sources([("p.yaml", text.encode())])
    assert loaded.diagnostics == []
    return [d for doc in loaded.documents for d in schema.check_document(doc)]


def located(text: str) -> list[tuple[str, int, int, str]]:
    return [(d.rule, d.span.line, d.span.column, d.path) for d in schema_findings(text)]


# -- findings are located at the key or value a user has to change ----------------------------


def test_unknown_field_points_at_the_key() -> None:
    text = HEAD + "spec:\n  value: 10\n  colour: red\n"
    assert located(text) == [("schema", 7, 3, "spec.colour")]


def test_unknown_field_hint_lists_the_allowed_ones() -> None:
    (finding,) = schema_findings(HEAD + "spec:\n  value: 10\n  colour: red\n")
    assert "preemptionPolicy" in finding.hint


def test_unknown_top_level_field_points_at_the_key() -> None:
    assert located(HEAD + "spec: {value: 1}\nstatus: {}\n") == [("schema", 6, 1, "status")]


def test_wrong_enum_points_at_the_value() -> None:
    text = HEAD + "spec:\n  value: 10\n  preemptionPolicy: Sometimes\n"
    assert located(text) == [("schema", 7, 21, "spec.preemptionPolicy")]


def test_wrong_enum_hint_lists_the_choices() -> None:
    (finding,) = schema_findings(HEAD + "spec: {value: 1, preemptionPolicy: x}\n")
    assert finding.hint == "one of: PreemptLowerPriority, Never"


def test_wrong_type_points_at_the_value() -> None:
    assert located(HEAD + "spec:\n  value: high\n") == [("schema", 6, 10, "spec.value")]


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("012", "the number 10 (YAML 1.1)"),
        ("0x1F", "the number 31 (YAML 1.1)"),
        ("1:30", "the number 90 (YAML 1.1)"),
        ("on", "the boolean true (YAML 1.1)"),
        ("7", "the number 7"),
    ],
)
def test_an_unquoted_value_read_as_no_text_is_shown_as_written(written: str, read: str) -> None:
    text = POOL.replace("zone: zone-a", f"zone: zone-a, rack: {written}")
    (finding,) = schema_findings(text)
    assert (finding.span.line, finding.span.column) == (10, 48)
    assert finding.message == f"Pool: spec.nodes[0].rack: {written} is read as {read}, not as text"
    assert finding.hint == f"it needs quotes: '{written}'"


def test_out_of_range_points_at_the_value() -> None:
    assert located(HEAD + "spec: {value: 2000000000}\n") == [("schema", 5, 15, "spec.value")]


def test_missing_field_points_at_the_mapping_that_lacks_it() -> None:
    assert located(HEAD + "spec:\n  description: x\n") == [("schema", 6, 3, "spec")]


def test_error_inside_a_list_item_points_into_the_item() -> None:
    text = POOL.replace("zone: zone-a", "zone: zone-a, shelf: 3")
    assert located(text) == [("schema", 10, 42, "spec.nodes[0].shelf")]


def test_error_inside_an_alias_points_at_the_anchored_value() -> None:
    text = HEAD + "defaults: &d {value: high}\nspec: *d\n"
    assert located(text) == [("schema", 5, 1, "defaults"), ("schema", 5, 22, "spec.value")]


def test_every_error_of_a_document_is_reported() -> None:
    text = HEAD + "spec:\n  value: x\n  preemptible: maybe\n  extra: 1\n"
    assert sorted(located(text)) == [
        ("schema", 6, 10, "spec.value"),
        ("schema", 7, 16, "spec.preemptible"),
        ("schema", 8, 3, "spec.extra"),
    ]


def test_huge_values_are_shortened_in_messages() -> None:
    text = HEAD + "spec:\n  value: " + "9" * 100 + "x" * 100_000 + "\n"
    (finding,) = schema_findings(text)
    assert len(finding.message) < 300


def test_bundled_policies_are_schema_clean() -> None:
    loaded = load_paths([REPO / "policies"])
    assert loaded.diagnostics == []
    assert [d for doc in loaded.documents for d in schema.check_document(doc)] == []


# -- the schema files ----------------------------------------------------------------------


SCHEMA_FILES = sorted((REPO / "schemas").glob("*.schema.json"))


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.name)
def test_schema_file_is_valid_draft_2020_12(path: Path) -> None:
    body = json.loads(path.read_text("utf-8"))
    assert body["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert body["$id"] == schema.BASE_URI + path.name
    jsonschema.Draft202012Validator.check_schema(body)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_a_schema(kind: str) -> None:
    body = schema.kind_schema(kind)
    assert body["properties"]["kind"] == {"const": kind}


def test_every_schema_file_is_a_kind_or_shared() -> None:
    expected = {schema.schema_file(kind) for kind in KINDS}
    expected |= {"policy.schema.json", "common.schema.json"}
    expected |= {"diff.schema.json"}  # a report shape (hetgitops diff --format json), no kind
    expected |= {"explain.schema.json"}  # hetgitops explain --format json
    expected |= {"maintenance.schema.json"}  # hetgitops capacity --without ... --format json
    assert {p.name for p in SCHEMA_FILES} == expected


def _editor_validator() -> jsonschema.Draft202012Validator:
    """What yaml-language-server does: validate any document against policy.schema.json."""
    raw = schema.raw_schemas()
    registry: Registry[Any] = Registry().with_resources(
        (schema.BASE_URI + name, Resource.from_contents(body)) for name, body in raw.items()
    )
    return jsonschema.Draft202012Validator(raw["policy.schema.json"], registry=registry)


def test_dispatching_schema_accepts_the_bundled_policies() -> None:
    validator = _editor_validator()
    for doc in load_paths([REPO / "policies"]).documents:
        assert list(validator.iter_errors(doc.data)) == [], doc.name


def test_dispatching_schema_rejects_what_the_kind_schema_rejects() -> None:
    doc = load_sources([("p.yaml", (HEAD + "spec: {value: x}\n").encode())]).documents[0]
    assert list(_editor_validator().iter_errors(doc.data)) != []


# -- `hetgitops schema KIND` -----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_schema_command_prints_the_kind_schema(kind: str) -> None:
    result = CliRunner().invoke(cli.main, ["schema", kind.lower()])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == schema.kind_schema(kind)


def test_schema_command_defaults_to_the_dispatching_schema() -> None:
    result = CliRunner().invoke(cli.main, ["schema"])
    assert json.loads(result.stdout) == schema.raw_schemas()["policy.schema.json"]


def test_schema_command_all() -> None:
    result = CliRunner().invoke(cli.main, ["schema", "all"])
    assert set(json.loads(result.stdout)) == {p.name for p in SCHEMA_FILES}


def test_schema_command_rejects_an_unknown_kind_as_usage_error() -> None:
    assert CliRunner().invoke(cli.main, ["schema", "Deployment"]).exit_code == 2
