"""Schema stage helper: a compiled JSON Schema validator (jsonschema-rs) in front of jsonschema.

jsonschema (pure Python) writes the messages hetgitops reports, but walking a fleet's ~9,000
rendered objects through it took seconds. jsonschema-rs answers "valid or not" two orders of
magnitude faster; only what it rejects goes through jsonschema, so every finding and message is
still exactly jsonschema's. The compiled side may be stricter than jsonschema (then jsonschema
finds nothing and nothing is reported), never laxer: formats use jsonschema's own checkers, and
a value it cannot take (NaN, huge integers, dates) sends the document down the slow path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import jsonschema_rs
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

_DRAFT = "https://json-schema.org/draft/2020-12/schema"


class Checker:
    """`iter_errors` like jsonschema's validator, with a compiled pre-check; `valid_all` checks
    a whole batch (all objects of one kind) in one call."""

    def __init__(
        self,
        slow: Validator,
        *,
        resources: Iterable[tuple[str, Any]] = (),
        base_uri: str | None = None,
    ) -> None:
        self.slow = slow
        schema = dict(slow.schema) if not isinstance(slow.schema, bool) else {}
        formats = {}
        checker = getattr(slow, "format_checker", None)
        if checker is not None:
            formats = {name: _conforms(checker, name) for name in checker.checkers}
        listed = list(resources)
        options: dict[str, Any] = {
            "registry": jsonschema_rs.Registry(listed) if listed else None,
            "validate_formats": checker is not None,
            "formats": formats or None,
            "base_uri": base_uri,
        }
        self._one = jsonschema_rs.validator_for(schema, **options)
        # The same schema as the items of an array: one call checks every object of a kind.
        # (Our schemas carry an $id or no local `#/` refs, so embedding keeps every $ref.)
        batch = {"$schema": schema.get("$schema", _DRAFT), "type": "array", "items": schema}
        self._many = jsonschema_rs.validator_for(batch, **options)

    def is_valid(self, instance: Any) -> bool:
        try:
            return bool(self._one.is_valid(instance))
        except Exception:  # a value the compiled side cannot represent: ask jsonschema
            return False

    def valid_all(self, instances: Sequence[Any]) -> bool:
        try:
            return bool(self._many.is_valid(list(instances)))
        except Exception:
            return False

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
        if self.is_valid(instance):
            return iter(())
        return self.slow.iter_errors(instance)


def _conforms(checker: Any, name: str) -> Any:
    def conforms(value: str) -> bool:
        return bool(checker.conforms(value, name))

    return conforms
