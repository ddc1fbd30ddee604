"""Every default is written twice, once in the JSON Schemas (what editors show and `schema`
documents) and once in the model builders (what the code does); this test ties the two.

For each `"default"` in a policy kind's schema, on the bundled policy, the multi-cluster
example, the render cases and generated policies: a document that leaves the field out and the
same document with the field set to the schema's default must build the same model (spans
aside). A builder that falls back on another value than the schema's fails here. A default
that no base reaches is reached by writing its parent object with only that field; a default
still unreached fails the test, so a new default cannot slip past it."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastyaml
import pytest
import yaml
from generated.policygen import generate

from hetgitops.load.documents import load_sources
from hetgitops.model.building import build_policy
from hetgitops.model.origin import Origin
from hetgitops.model.schema import check_documents

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"
KINDS = {
    "Fleet": "fleet",
    "Pool": "pool",
    "Team": "team",
    "CardType": "cardtype",
    "PriorityTier": "prioritytier",
    "WorkloadProfile": "workloadprofile",
    "LabelTaxonomy": "labeltaxonomy",
    "Cluster": "cluster",
}
Path_ = tuple[str, ...]  # "*" is every item of a list


def _resolve(ref: str, file: str) -> tuple[Any, str]:
    name, _, fragment = ref.partition("#")
    name = name or file
    node: Any = json.loads((SCHEMAS / name).read_text())
    for part in filter(None, fragment.split("/")):
        node = node[part]
    return node, name


def _defaults(node: Any, file: str, path: Path_, seen: set[Any]) -> Iterator[tuple[Path_, Any]]:
    """(path, default) for every default the schema `node` reaches, through $ref and allOf."""
    if not isinstance(node, dict):
        return
    if "$ref" in node and (node["$ref"], file, path) not in seen:
        seen.add((node["$ref"], file, path))
        yield from _defaults(*_resolve(node["$ref"], file), path, seen)
    if "default" in node:
        yield path, node["default"]
    for key, sub in node.get("properties", {}).items():
        yield from _defaults(sub, file, (*path, key), seen)
    if isinstance(node.get("items"), dict):
        yield from _defaults(node["items"], file, (*path, "*"), seen)
    for sub in [*node.get("allOf", []), *node.get("anyOf", []), *node.get("oneOf", [])]:
        yield from _defaults(sub, file, path, seen)
    for branch in ("then", "else"):
        yield from _defaults(node.get(branch), file, path, seen)


def schema_defaults() -> list[tuple[str, Path_, Any]]:
    found = {
        (kind, path, json.dumps(value))
        for kind, name in KINDS.items()
        for path, value in _defaults(
            json.loads((SCHEMAS / f"{name}.schema.json").read_text()),
            f"{name}.schema.json",
            (),
            set(),
        )
    }
    return [(kind, path, json.loads(value)) for kind, path, value in sorted(found)]


def _parents(data: Any, path: Path_) -> Iterator[dict[str, Any]]:
    """The objects at `path` in `data` ("*" fans out over a list)."""
    if not path:
        if isinstance(data, dict):
            yield data
        return
    head, rest = path[0], path[1:]
    if head == "*":
        for item in data if isinstance(data, list) else []:
            yield from _parents(item, rest)
    elif isinstance(data, dict) and head in data:
        yield from _parents(data[head], rest)


# Model fields that record which keys were written, not what they mean: writing a default
# changes them by design (a check refuses generated-tier settings beside written tiers).
WRITTEN_KEYS = {"volcano_settings"}


def _facts(value: Any) -> Any:
    """A model value as plain data, without where it was written (spans move with the text)
    and without the record of which keys were written."""
    if isinstance(value, Origin):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _facts(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in WRITTEN_KEYS
        }
    if isinstance(value, dict):
        return {k: _facts(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        items = [_facts(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, frozenset | set) else items
    return value


def _model(docs: list[dict[str, Any]]) -> Any | None:
    """The model of `docs`, or None when they do not pass the schema."""
    loaded = load_sources([("policy.yaml", fastyaml.dump_all(docs).encode())])
    assert not loaded.diagnostics, loaded.diagnostics
    if any(check_documents(loaded.documents)):
        return None
    policy, _ = build_policy(loaded.documents)
    return _facts(policy)


def _bases() -> dict[str, list[dict[str, Any]]]:
    def read(folder: Path) -> list[dict[str, Any]]:
        return [
            d
            for f in sorted(folder.rglob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text())
            if isinstance(d, dict) and d.get("kind") in KINDS
        ]

    bases = {"bundled": read(ROOT / "policies")}
    bases["examples/multicluster"] = read(ROOT / "examples" / "multicluster")
    for case in sorted((ROOT / "tests" / "cases" / "render").glob("*/policy")):
        bases[f"render/{case.parent.name}"] = read(case)
    for seed in range(6):
        bases[f"generated/{seed}"] = [d for docs in generate(seed).values() for d in docs]
    return bases


def _variants(
    base: list[dict[str, Any]], kind: str, path: Path_, value: Any
) -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(without, with) pairs: one object of a `kind` document that could hold the field,
    once without it and once with the schema's default."""
    *parent, leaf = path
    for index, doc in enumerate(base):
        if doc.get("kind") != kind:
            continue
        for number, _ in enumerate(_parents(doc, tuple(parent))):
            without, with_default = copy.deepcopy(base), copy.deepcopy(base)
            list(_parents(without[index], tuple(parent)))[number].pop(leaf, None)
            list(_parents(with_default[index], tuple(parent)))[number][leaf] = value
            yield without, with_default


def _with_parent(base: list[dict[str, Any]], kind: str, path: Path_, value: Any) -> Iterator[Any]:
    """Pairs for a default whose parent no document writes: the missing objects are written,
    once empty and once holding only the default."""
    *parent, leaf = path
    if "*" in parent:
        return
    for index, doc in enumerate(base):
        if doc.get("kind") != kind or any(_parents(doc, tuple(parent))):
            continue
        empty, filled = copy.deepcopy(base), copy.deepcopy(base)
        for docs, last in ((empty, {}), (filled, {leaf: value})):
            node = docs[index]
            for key in parent:
                node = node.setdefault(key, {})
            node.update(last)
        yield empty, filled
        return


DEFAULTS = schema_defaults()


def test_the_schemas_have_the_defaults_this_test_expects() -> None:
    """The walk finds the schemas' defaults (52 when written); an empty walk proves nothing."""
    assert len(DEFAULTS) >= 50, DEFAULTS


@pytest.mark.slow
def test_every_schema_default_is_the_builders_default() -> None:
    bases = _bases()
    differ: list[str] = []
    unreached: list[str] = []
    for kind, path, value in DEFAULTS:
        where = f"{kind} {'.'.join(path)} = {json.dumps(value)}"
        compared = 0
        for name, base in bases.items():
            pairs = list(_variants(base, kind, path, value))[:2] or list(
                _with_parent(base, kind, path, value)
            )
            for without, with_default in pairs:
                old, new = _model(without), _model(with_default)
                if old is None or new is None:
                    continue
                compared += 1
                if old != new:
                    differ.append(f"{where}: on {name} writing the default changes the model")
                    break
            if compared >= 3:
                break
        if not compared:
            unreached.append(where)
    assert not differ, "\n".join(differ)
    assert not unreached, "no base policy reaches these defaults:\n" + "\n".join(unreached)
