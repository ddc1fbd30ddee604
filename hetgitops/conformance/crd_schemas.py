"""Output-validation stage, CRD side: CustomResourceDefinition files -> JSON Schemas.

The API server validates custom resources against a structural OpenAPI v3 schema with a few
Kubernetes extensions; this converts one into a Draft 2020-12 JSON Schema with the same meaning,
and rejects unknown fields the way `kubectl apply --validate=strict` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

GVK = tuple[str, str]
_COPIED = (
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "multipleOf",
)
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_EMBEDDED = ("apiVersion", "kind", "metadata")
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _type(node: Mapping[str, Any]) -> dict[str, Any]:
    if node.get("x-kubernetes-int-or-string"):
        return {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    if "type" not in node:
        return {}
    return {"type": [node["type"], "null"] if node.get("nullable") else node["type"]}


def _bounds(node: Mapping[str, Any], out: dict[str, Any]) -> None:
    """OpenAPI 3.0 booleans exclusiveMinimum/Maximum become 2020-12 numbers; intN formats
    become ranges (the API server rejects overflow)."""
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if node.get(flag) and bound in out:
            out[flag] = out.pop(bound)
    low_high = _INT_RANGES.get(str(node.get("format")))
    if low_high and node.get("type") == "integer":
        out.setdefault("minimum", low_high[0])
        out.setdefault("maximum", low_high[1])


def _object(node: Mapping[str, Any], out: dict[str, Any]) -> None:
    props = {k: to_json_schema(v) for k, v in node.get("properties", {}).items()}
    if node.get("x-kubernetes-embedded-resource"):
        props = {**{k: {} for k in _EMBEDDED}, **props}
    if props:
        out["properties"] = props
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        out["additionalProperties"] = to_json_schema(extra)
    elif extra is not None:
        out["additionalProperties"] = bool(extra)
    elif props and not node.get("x-kubernetes-preserve-unknown-fields"):
        # Listed properties and no preserve-unknown: any other field is an unknown field.
        out["additionalProperties"] = False


# Go's RE2 takes a flag group anywhere (`^(?i)[a-z]...`, Kueue's AdmissionCheck
# parameters.kind); Python's `re` only at the very start, so it becomes a scoped group.
_LATE_FLAGS = re.compile(r"^(\^?)\(\?([ims]+)\)(.*)$", re.DOTALL)


def _pattern(pattern: str) -> str:
    return _LATE_FLAGS.sub(r"\1(?\2:\3)", pattern) if pattern.startswith("^(?") else pattern


def to_json_schema(node: Mapping[str, Any]) -> dict[str, Any]:
    """One structural-schema node, converted recursively."""
    out = _type(node)
    out.update({key: node[key] for key in _COPIED if key in node})
    if "pattern" in out:
        out["pattern"] = _pattern(str(out["pattern"]))
    if node.get("nullable") and "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    _bounds(node, out)
    _object(node, out)
    if isinstance(node.get("items"), Mapping):
        out["items"] = to_json_schema(node["items"])
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    for key in ("allOf", "anyOf", "oneOf"):
        if key in node:
            out[key] = [to_json_schema(n) for n in node[key]]
    if "not" in node:
        out["not"] = to_json_schema(node["not"])
    return out


def _versions(crd: Mapping[str, Any]) -> Iterator[tuple[GVK, Mapping[str, Any]]]:
    spec = crd.get("spec") or {}
    group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
    legacy = (spec.get("validation") or {}).get("openAPIV3Schema")
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or legacy
        if schema:
            yield (f"{group}/{version['name']}", kind), schema


def _crd_documents(path: Path) -> Iterator[Mapping[str, Any]]:
    for doc in yaml.load_all(path.read_text("utf-8"), Loader=_Loader):
        if isinstance(doc, Mapping) and doc.get("kind") == "CustomResourceDefinition":
            yield doc


CrdSchemas = dict[GVK, tuple[dict[str, Any], str]]


def _read(path: Path, found: CrdSchemas) -> None:
    for crd in _crd_documents(path):
        for key, schema in _versions(crd):
            converted = to_json_schema(schema)
            converted["$schema"] = "https://json-schema.org/draft/2020-12/schema"
            found[key] = (converted, str(path))


def load_crd_schemas(folders: Iterable[Path]) -> tuple[CrdSchemas, list[str]]:
    """(apiVersion, kind) -> (JSON Schema, file) for every served version of every CRD in the
    YAML files directly inside `folders` (a later folder wins), plus unreadable-file messages."""
    found: CrdSchemas = {}
    unreadable: list[str] = []
    for folder in folders:
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
            try:
                _read(path, found)
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                unreadable.append(f"{path}: {exc}".splitlines()[0])
    return found, unreadable
