"""Output-validation stage, schema side: compiled validators for rendered objects.

Three sources: the Kubernetes schemas bundled with kubernetes-validate (strict variant), the
project's own target schemas (`schemas/targets/`) and CRDs from `--crd-dir`. Each validator is
built once per process: kubernetes-validate's own `validate()` re-reads a 1.5 MB definitions file
and rebuilds its validator on every call, about 100x slower than reusing one.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from hetgitops.conformance.crd_schemas import load_crd_schemas
from hetgitops.load.resources import data_dir
from hetgitops.model import fastschema
from hetgitops.model.fastschema import Checker

if TYPE_CHECKING:  # jsonschema (and kubernetes_validate, which imports it) load only when
    # an object fails the compiled check and needs jsonschema's message: ~0.2 s per process.
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator
    from referencing import Registry

_PACKAGE = "kubernetes_validate"

Minor = tuple[int, int]
GVK = tuple[str, str]  # (apiVersion, kind)
_BUNDLE_DIR = re.compile(r"^v(\d+)\.(\d+)\.\d+-local-strict$")
MAX_MESSAGE = 200


def _bundle_root() -> Path:
    spec = importlib.util.find_spec(_PACKAGE)  # its folder, without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(_PACKAGE)
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


def package_version() -> str:
    # Imported here: importlib.metadata brings email, csv and zipfile (~9 ms per process), and
    # only the rare "no schemas for this Kubernetes version" note needs it.
    import importlib.metadata

    try:
        return importlib.metadata.version("kubernetes-validate")
    except importlib.metadata.PackageNotFoundError:
        return "?"


@functools.cache
def bundled_minors() -> tuple[Minor, ...]:
    """Kubernetes minors with strict schemas, compared as numbers (1.4 < 1.36)."""
    found = (_BUNDLE_DIR.match(p.name) for p in _bundle_root().iterdir())
    return tuple(sorted((int(m[1]), int(m[2])) for m in found if m))


def resolve_minor(wanted: Minor) -> Minor | None:
    """The newest bundled minor not newer than `wanted`; None when all are newer."""
    older = [minor for minor in bundled_minors() if minor <= wanted]
    return older[-1] if older else None


def _strict_dir(minor: Minor) -> Path:
    return _bundle_root() / f"v{minor[0]}.{minor[1]}.0-local-strict"


@functools.cache
def _k8s_definitions(minor: Minor) -> dict[str, Any]:
    """The shared definitions of a version, parsed once, not per object."""
    definitions: dict[str, Any] = json.loads(
        (_strict_dir(minor) / "_definitions.json").read_text("utf-8")
    )
    return definitions


@functools.cache
def _k8s_registry(minor: Minor) -> Registry[Any]:
    from referencing import Registry, Resource

    return Resource.from_contents(_k8s_definitions(minor)) @ Registry()


def _schema_file(api_version: str, kind: str) -> str:
    # kubernetes-validate's naming: scheduling.k8s.io/v1 -> scheduling-v1; v1 -> v1.
    flat = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{flat}.json"


def _declares(schema: Mapping[str, Any], api_version: str, kind: str) -> bool:
    """Only the exact group/version/kind counts: `foo.example/v1 Queue` is no core kind."""
    group, _, version = api_version.rpartition("/")
    gvks = schema.get("x-kubernetes-group-version-kind") or []
    return any(
        (g.get("group", ""), g.get("version"), g.get("kind")) == (group, version, kind)
        for g in gvks
    )


@functools.cache
def k8s_validator(minor: Minor, api_version: str, kind: str) -> Checker | None:
    """Validator for a built-in kind in Kubernetes `minor`, or None if it is not built in."""
    path = _strict_dir(minor) / _schema_file(api_version, kind)
    if not path.is_file():
        return None
    schema = json.loads(path.read_text("utf-8"))
    if not _declares(schema, api_version, kind):
        return None
    return Checker(
        schema, lambda: _draft2020(schema, _k8s_registry(minor)), shared=_rs_registry(minor)
    )


@functools.cache
def _rs_registry(minor: Minor) -> jsonschema_rs.Registry:
    """The compiled side's registry of a version's definitions, shared by every kind."""
    definitions = _k8s_definitions(minor)
    return fastschema.registry([(definitions["$id"], definitions)])


def _draft2020(schema: Mapping[str, Any], registry: Registry[Any] | None = None) -> Validator:
    import jsonschema

    if registry is None:
        return jsonschema.Draft202012Validator(schema)
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _key_of(schema: Mapping[str, Any]) -> GVK | None:
    props = schema.get("properties", {})
    api_version = props.get("apiVersion", {}).get("const")
    kind = props.get("kind", {}).get("const")
    return (api_version, kind) if api_version and kind else None


# Keywords whose meaning depends on sibling keywords: a $ref next to them stays an allOf.
_SIBLING_SENSITIVE = {"properties", "patternProperties", "additionalProperties"}


def _inline(node: Any, home: Mapping[str, Any], files: Mapping[str, Any]) -> Any:
    """Replace every `$ref` of the (non-recursive) target schemas by its target.

    jsonschema resolves a `$ref` through the registry on every visit, which made these small
    schemas cost about 1 ms per object; inlined, validation is several times faster."""
    if isinstance(node, list):
        return [_inline(item, home, files) for item in node]
    if not isinstance(node, Mapping):
        return node
    rest = {k: _inline(v, home, files) for k, v in node.items() if k != "$ref"}
    if "$ref" not in node:
        return rest
    document, _, pointer = str(node["$ref"]).partition("#")
    target: Any = files[document] if document else home
    doc = target
    for part in pointer.strip("/").split("/"):
        target = target[part]
    resolved = _inline(target, doc, files)
    if set(rest) & (set(resolved) | _SIBLING_SENSITIVE):
        return {"allOf": [resolved], **rest}
    return {**resolved, **rest}


class _TargetValidators(Mapping[GVK, Checker]):
    """The target schemas by (apiVersion, kind), each inlined and compiled on first use: a
    render holds a handful of the kinds, and compiling all of them cost every process ~30 ms."""

    def __init__(self, files: Mapping[str, Any]) -> None:
        self._files = files
        self._schemas: dict[GVK, Any] = {}
        for schema in files.values():
            key = _key_of(schema)
            if key is not None:
                self._schemas[key] = schema
        self._compiled: dict[GVK, Checker] = {}

    def __getitem__(self, key: GVK) -> Checker:
        if key not in self._compiled:
            schema = self._schemas[key]
            flat = _inline(schema, schema, self._files)
            flat.pop("$defs", None)
            self._compiled[key] = Checker(flat, functools.partial(_draft2020, flat))
        return self._compiled[key]

    def __iter__(self) -> Iterator[GVK]:
        return iter(self._schemas)

    def __len__(self) -> int:
        return len(self._schemas)


@functools.cache
def target_validators() -> Mapping[GVK, Checker]:
    """The project's own schemas of the CRD objects it emits, keyed by (apiVersion, kind)."""
    folder = data_dir("schemas") / "targets"
    files = {p.name: json.loads(p.read_text("utf-8")) for p in sorted(folder.glob("*.json"))}
    return _TargetValidators(files)


CrdValidators = Mapping[GVK, tuple[Checker, str]]


@functools.cache
def _crd_validators(folders: tuple[str, ...]) -> tuple[CrdValidators, tuple[str, ...]]:
    schemas, unreadable = load_crd_schemas(Path(f) for f in folders)
    validators = {
        key: (Checker(schema, functools.partial(_draft2020, schema)), source)
        for key, (schema, source) in schemas.items()
    }
    return validators, tuple(unreadable)


def crd_validators(folders: tuple[Path, ...]) -> tuple[CrdValidators, tuple[str, ...]]:
    """Validators (with the CRD file each came from) for every served version in `folders`,
    and a message per file that could not be read."""
    return _crd_validators(tuple(str(f.resolve()) for f in folders))


def field_path(error: ValidationError) -> str:
    """`spec.resourceGroups[0].flavors` from a jsonschema error path."""
    text = ""
    for part in error.absolute_path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


def _shorten(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def problems(validator: Checker, obj: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(field path, message) per violation, most specific cause first for anyOf/oneOf."""
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return
    from jsonschema.exceptions import best_match

    for error in errors:
        cause = best_match(error.context) if error.context else error
        yield field_path(cause), _shorten(cause.message)
