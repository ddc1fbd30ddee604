"""Schema stage: JSON Schema checks of policy documents; schemas/ is the single source."""

from __future__ import annotations

import functools
import json
import math
import reprlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from hetgitops.diagnostics import Diagnostic, error, register_rules
from hetgitops.load.documents import KINDS, Document, format_path
from hetgitops.load.resources import data_dir
from hetgitops.model import fastschema
from hetgitops.model.fastschema import Checker

register_rules(
    "model",
    {
        "schema": "A policy document does not match the JSON Schema of its kind (see "
        "`hetgitops schema KIND`, and docs/reference/policy.md for every field).\n"
        "Fails: `placement: pack` in a Pool.\nPasses: `placement: binpack`.\n"
        "Fix: change the field the finding points at; the hint lists the allowed values.",
    },
)

if TYPE_CHECKING:  # jsonschema is imported only to explain a document that fails
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

BASE_URI = "https://hetgitops.io/schemas/v1alpha1/"
# User values can be megabytes long (or an alias repeated thousands of times): show a prefix.
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 60
_MAX_MESSAGE = 200


def schema_file(kind: str) -> str:
    return f"{kind.lower()}.schema.json"


@functools.cache
def raw_schemas() -> dict[str, dict[str, Any]]:
    """Every schema file by file name, read once per process."""
    folder = data_dir("schemas")
    return {p.name: json.loads(p.read_text("utf-8")) for p in sorted(folder.glob("*.json"))}


@functools.cache
def validators() -> dict[str, Checker]:
    """One validator per kind (compiled; jsonschema, for the messages, on first failure),
    built once per process."""
    schemas = raw_schemas()
    shared = fastschema.registry((BASE_URI + name, body) for name, body in schemas.items())
    return {
        kind: Checker(
            schemas[schema_file(kind)],
            functools.partial(_jsonschema_validator, schema_file(kind)),
            shared=shared,
            formats=True,
        )
        for kind in KINDS
    }


def _jsonschema_validator(name: str) -> Validator:
    import jsonschema
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry().with_resources(
        (BASE_URI + file, Resource.from_contents(body)) for file, body in raw_schemas().items()
    )
    strict: type[Validator] = _strict_numbers(jsonschema.Draft202012Validator)
    return strict(
        raw_schemas()[name],
        registry=registry,
        format_checker=fastschema.format_checker(),
    )


def _strict_numbers(base: Any) -> Any:
    """The validator class with the model's idea of a number: `integer` is a whole number
    written as one (`8.0` is not: Python would carry a float into range() and int fields),
    `number` is finite (NaN passes every `minimum`, and inf every bound but `maximum`)."""
    import jsonschema

    def integer(checker: Any, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def number(checker: Any, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return isinstance(value, int) or math.isfinite(value)

    types = base.TYPE_CHECKER.redefine_many({"integer": integer, "number": number})
    return jsonschema.validators.extend(base, type_checker=types)  # type: ignore[no-untyped-call]


def _odd_numbers(value: Any) -> bool:
    """A value the compiled validator reads differently from the model: an integral or
    non-finite float, or an integer past 64 bits. Such documents go to jsonschema itself."""
    if isinstance(value, float):
        return not math.isfinite(value) or value.is_integer()
    if isinstance(value, int):
        return abs(value) >= 2**63
    if isinstance(value, dict):
        return any(_odd_numbers(v) for v in value.values())
    if isinstance(value, list):
        return any(_odd_numbers(v) for v in value)
    return False


def check_document(doc: Document) -> Iterator[Diagnostic]:
    validator = validators()[doc.kind]
    errors = validator.slow.iter_errors if _odd_numbers(doc.data) else validator.iter_errors
    found = [_deepest(err) for err in errors(doc.data)]
    misspelt = {
        (tuple(e.absolute_path), key) for e in found if e.validator == "additionalProperties"
        for key in _extra_keys(e)
    }  # fmt: skip
    for err in found:
        if not _follows_from_a_typo(err, misspelt):
            yield _diagnostic(doc, err)


def _follows_from_a_typo(err: ValidationError, misspelt: set[tuple[tuple[Any, ...], str]]) -> bool:
    """A required field reported missing next to an unknown key that is its misspelling
    (`cardTyp:`): the reader has one mistake to fix, which the unknown key's did-you-mean names."""
    import difflib

    if err.validator != "required":
        return False
    missing, where = _missing(err), tuple(err.absolute_path)
    keys = [key for path, key in misspelt if path == where]
    return missing is not None and bool(difflib.get_close_matches(missing, keys, n=1, cutoff=0.6))


class CleanMemo:
    """Documents' data already found schema-valid, by identity: diff's head shares the data of
    every file both sides hold byte for byte (`load.ParseMemo`), and the same kind's schema
    gives the same answer for the same data. The data is held here, so no id is reused."""

    def __init__(self) -> None:
        self._clean: dict[int, tuple[str, Any]] = {}

    def known(self, doc: Document) -> bool:
        seen = self._clean.get(id(doc.data))
        return seen is not None and seen[0] == doc.kind and seen[1] is doc.data

    def add(self, doc: Document) -> None:
        self._clean[id(doc.data)] = (doc.kind, doc.data)


def check_documents(
    docs: Iterable[Document], memo: CleanMemo | None = None
) -> list[list[Diagnostic]]:
    """check_document() for each document, in order; the documents of a kind are checked by
    one compiled call first, and only a kind with a failure goes document by document. With a
    `memo`, data found valid before is not checked again."""
    docs = list(docs)
    known = [memo is not None and memo.known(d) for d in docs]
    todo = [d for d, seen in zip(docs, known, strict=True) if not seen]
    clean: set[str] = set()
    for kind in {doc.kind for doc in todo}:
        mine = [d.data for d in todo if d.kind == kind]
        if not any(map(_odd_numbers, mine)) and validators()[kind].valid_all(mine):
            clean.add(kind)
    found = [
        [] if seen or doc.kind in clean else list(check_document(doc))
        for doc, seen in zip(docs, known, strict=True)
    ]
    if memo is not None:
        for doc, problems in zip(docs, found, strict=True):
            if not problems:
                memo.add(doc)
    return found


def _deepest(err: ValidationError) -> ValidationError:
    """For oneOf/anyOf, the most specific sub-error is the one a user can act on; a format
    failure (a quantity past int64) first: its branch's type and pattern held."""
    if err.validator in ("oneOf", "anyOf") and err.context:
        best = max(
            err.context,
            key=lambda e: (len(e.absolute_path), e.validator == "format", -len(e.message)),
        )
        if best.validator not in ("type", "const") or len(best.absolute_path) > len(
            err.absolute_path
        ):
            return _deepest(best)
    return err


def _diagnostic(doc: Document, err: ValidationError) -> Diagnostic:
    path = tuple(err.absolute_path)
    message, hint, span = _explain(err), _described(err), doc.source.at(path)
    if err.validator == "additionalProperties":
        extra = _extra_keys(err)
        if extra:
            path = (*path, extra[0])
            span = doc.source.key_at(path)
            hint = _unknown_key_hint(extra[0], path[:-1], _properties(err))
    elif err.validator == "required":
        missing = _missing(err)
        described = _description(_properties(err).get(missing or ""))
        hint = f"add {missing}" + (f": {described}" if described else "")
    elif err.validator == "enum":
        choices = err.validator_value
        hint = "one of: " + ", ".join(map(str, choices)) if isinstance(choices, list) else ""
    elif err.validator == "format" and err.validator_value == fastschema.QUANTITY_FORMAT:
        where = format_path(path) or "document"
        message = (
            f"{where}: {_SHOWN.repr(err.instance)} is more than Kubernetes holds in a quantity "
            f"({fastschema.QUANTITY_MAX} base units, an int64): Kueue and the API server would "
            "saturate or refuse it"
        )
        hint = "write the real amount, with a suffix (64Gi, 2Ti, 500m)"
    written = doc.source.written.get(path)
    if written is not None and _wants_text(err):
        message, hint = _needs_quotes(path, written, err.instance)
    return error("schema", f"{doc.kind}: {message}", span, format_path(path), hint)


def _wants_text(err: ValidationError) -> bool:
    """A text field given a plain scalar YAML did not read as text."""
    expected = err.validator_value
    if err.validator == "type":
        return "string" in (expected if isinstance(expected, list) else [expected])
    return (
        err.validator == "enum"
        and isinstance(expected, list)
        and any(isinstance(choice, str) for choice in expected)
    )


def _needs_quotes(path: tuple[Any, ...], written: str, value: Any) -> tuple[str, str]:
    # YAML 1.1 (PyYAML, go-yaml v2, kubectl) reads `012` as 10, `0x1F` as 31, `1:30` as 90 and
    # `on` as true: the message names what was typed, not the number it became.
    read = (
        f"the boolean {str(value).lower()}" if isinstance(value, bool) else f"the number {value!r}"
    )
    where = format_path(path) or "document"
    yaml11 = written.lower() not in (str(value).lower(), json.dumps(value))
    rule = " (YAML 1.1)" if yaml11 else ""
    message = f"{where}: {_SHOWN.repr(written)[1:-1]} is read as {read}{rule}, not as text"
    return message, f"it needs quotes: '{written}'"


def _description(schema: Any) -> str:
    text = schema.get("description", "") if isinstance(schema, Mapping) else ""
    return str(text)


def _described(err: ValidationError) -> str:
    """The failing field's own description, when the schema has one: what the value means and
    which values it takes, in the schema's words (a regex alone tells a reader nothing)."""
    if err.validator == "type" and isinstance(err.instance, list):
        one = "give one value, not a list"
        return f"{one}: {_description(err.schema)}" if _description(err.schema) else one
    if err.validator == "pattern":
        shape = f"(pattern {err.validator_value})"
        return f"{_description(err.schema)} {shape}" if _description(err.schema) else ""
    if err.validator in ("type", "minimum", "maximum", "maxLength", "minLength"):
        return _description(err.schema)
    if err.validator == "minItems":
        return _description(err.schema) or "give at least one entry"
    return ""


def _unknown_key_hint(key: str, where: tuple[Any, ...], properties: Mapping[str, Any]) -> str:
    """did you mean `cardType` for `cardTyp`; for a key that is valid one level down (a
    misindent: `reclaim:` moved out of `lending:`), the field it belongs under."""
    import difflib

    allowed = sorted(properties)
    parents = [
        name
        for name, sub in sorted(properties.items())
        if isinstance(sub, Mapping) and key in (sub.get("properties") or {})
    ]
    if parents:
        under = format_path((*where, parents[0]))
        return f"this field belongs under {under} (indent it below {parents[0]}:)"
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    listing = "allowed here: " + ", ".join(allowed) if allowed else ""
    if close:
        return f"did you mean {close[0]}? ({listing})" if listing else f"did you mean {close[0]}?"
    return listing


def _missing(err: ValidationError) -> str | None:
    instance = err.instance if isinstance(err.instance, dict) else {}
    required = err.validator_value if isinstance(err.validator_value, list) else []
    return next((str(k) for k in required if k not in instance), None)


def _properties(err: ValidationError) -> dict[str, Any]:
    schema = err.schema
    return dict(schema.get("properties", {})) if isinstance(schema, Mapping) else {}


def _extra_keys(err: ValidationError) -> list[str]:
    known = set(_properties(err))
    instance = err.instance if isinstance(err.instance, dict) else {}
    return sorted(k for k in instance if k not in known)


def _explain(err: ValidationError) -> str:
    where = format_path(tuple(err.absolute_path)) or "document"
    if err.validator == "required":
        return f"{where}: the required field {_missing(err)} is missing"
    if err.validator == "minItems" and isinstance(err.instance, list) and not err.instance:
        return f"{where}: the list is empty"
    if err.validator == "type":
        return f"{where}: expected {_kinds(err.validator_value)}, got {_kind_of(err.instance)}"
    if err.validator == "maximum":
        return f"{where}: {_SHOWN.repr(err.instance)} is above the maximum {err.validator_value}"
    if err.validator == "minimum":
        return f"{where}: {_SHOWN.repr(err.instance)} is below the minimum {err.validator_value}"
    if err.validator == "additionalProperties":
        return f"{where}: unknown field(s) " + ", ".join(_SHOWN.repr(k) for k in _extra_keys(err))
    if err.validator == "pattern" and _description(err.schema):
        return f"{where}: {_SHOWN.repr(err.instance)} is not of the required form"
    if err.validator == "pattern":
        return f"{where}: {_SHOWN.repr(err.instance)} does not match {err.validator_value}"
    return f"{where}: {_shortened(err)}"


_TYPE_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "null": "nothing",
}


def _kinds(expected: Any) -> str:
    names = expected if isinstance(expected, list) else [expected]
    return " or ".join(_TYPE_WORDS.get(str(n), str(n)) for n in names)


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, list):
        return f"a list ({_SHOWN.repr(value)})"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "nothing (null)"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return f"the text {_SHOWN.repr(value)}"


def _shortened(err: ValidationError) -> str:
    """jsonschema's message with the offending value cut down to a readable prefix."""
    if len(err.message) <= _MAX_MESSAGE:
        return err.message
    message = err.message.replace(repr(err.instance), _SHOWN.repr(err.instance))
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."


def kind_schema(kind: str) -> dict[str, Any]:
    return raw_schemas()[schema_file(kind)]
