"""Schema stage helper: a compiled JSON Schema validator (jsonschema-rs) in front of jsonschema.

jsonschema (pure Python) writes the messages hetgitops reports, but walking a fleet's ~9,000
rendered objects through it took seconds. jsonschema-rs answers "valid or not" two orders of
magnitude faster; only what it rejects goes through jsonschema, so every finding and message is
still exactly jsonschema's. The compiled side may be stricter than jsonschema (then jsonschema
finds nothing and nothing is reported), never laxer: formats use jsonschema's own checkers, and
a value it cannot take (NaN, huge integers, dates) sends the document down the slow path.
"""

from __future__ import annotations

import datetime as dt
import mmap
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import jsonschema_rs

if TYPE_CHECKING:  # jsonschema itself is imported only when a document fails
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

_DRAFT = "https://json-schema.org/draft/2020-12/schema"
_RE_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)


def _is_regex(value: str) -> bool:
    """jsonschema's `regex` format: Python's re compiles it."""
    try:
        re.compile(value)
    except re.error:
        return False
    return True


def _is_date(value: str) -> bool:
    """jsonschema's `date` format: YYYY-MM-DD that datetime accepts."""
    try:
        return bool(_RE_DATE.fullmatch(value) and dt.date.fromisoformat(value))
    except ValueError:
        return False


# Kubernetes holds a quantity in an int64 of its scale (apimachinery resource.Quantity); Kueue
# and the API server saturate or refuse one past it, so the policy refuses it first.
QUANTITY_FORMAT = "k8s-quantity"
QUANTITY_MAX = 2**63 - 1


def _is_quantity_in_range(value: object) -> bool:
    """hetgitops' `k8s-quantity` format: at most int64 base units. A text that is no quantity
    at all conforms here (the schema's pattern refuses it, with its own message), as does a
    value that is no text (formats apply to strings only)."""
    from hetgitops.model.quantities import QuantityError, parse

    if not isinstance(value, str):
        return True
    try:
        number, _ = parse(value)
    except QuantityError:
        return True
    return abs(number) <= QUANTITY_MAX


# The formats the policy schemas use, checked as jsonschema's FORMAT_CHECKER does (a test
# compares them) and, for hetgitops' own, as the jsonschema side registers them
# (`format_checker()`); jsonschema-rs' own formats would follow other dialects (ECMA regexes).
FORMATS: dict[str, Callable[[Any], bool]] = {
    "regex": _is_regex,
    "date": _is_date,
    QUANTITY_FORMAT: _is_quantity_in_range,
}


def format_checker() -> Any:
    """jsonschema's format checker with hetgitops' own formats added (used to explain a
    document the compiled validator refused: both sides must judge alike)."""
    import jsonschema

    checker = jsonschema.FormatChecker(
        list(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)
    )
    checker.checks(QUANTITY_FORMAT)(_is_quantity_in_range)
    return checker


# jsonschema-rs is Rust: an allocation that fails there aborts the process (SIGABRT, no word
# said) where Python would raise MemoryError. So before each call into it the address space it
# may need is mapped and released (a few microseconds; no page is touched): if that fails, the
# MemoryError is raised here, where the CLI can still say "out of memory" (exit 4). Compiling
# the largest Kubernetes schema takes under 8 MiB; the margin covers a batch of every object.
HEADROOM = 16 << 20


def ensure_headroom(size: int = HEADROOM) -> None:
    """Raise MemoryError unless `size` more bytes of address space can be had right now."""
    try:
        mmap.mmap(-1, size).close()
    except OSError as exc:
        raise MemoryError(f"cannot map {size >> 20} MiB for the compiled validator") from exc


def registry(resources: Iterable[tuple[str, Any]]) -> jsonschema_rs.Registry:
    """The compiled side's registry of `resources` (URI, schema), to share between Checkers:
    building one converts every schema in it (the Kubernetes definitions are 1.5 MB), which
    cost more than compiling the kind's own validator."""
    ensure_headroom()
    return jsonschema_rs.Registry(list(resources))


class Checker:
    """`iter_errors` like jsonschema's validator, with a compiled pre-check; `valid_all` checks
    a whole batch (all objects of one kind) in one call. `slow` builds the jsonschema
    validator, on the first instance that fails."""

    def __init__(
        self,
        schema: dict[str, Any],
        slow: Callable[[], Validator],
        *,
        resources: Iterable[tuple[str, Any]] = (),
        shared: jsonschema_rs.Registry | None = None,
        base_uri: str | None = None,
        formats: bool = False,
    ) -> None:
        """`resources` (URI, schema) the schema refers to, or a `shared` registry of them."""
        self._slow_factory = slow
        self._slow: Validator | None = None
        listed = list(resources)
        if shared is None and listed:
            shared = registry(listed)
        ensure_headroom()
        options: dict[str, Any] = {
            "registry": shared,
            "validate_formats": formats,
            "formats": FORMATS if formats else None,
            "base_uri": base_uri,
        }
        self._one = jsonschema_rs.validator_for(schema, **options)
        # The same schema as the items of an array: one call checks every object of a kind.
        # (Our schemas carry an $id or no local `#/` refs, so embedding keeps every $ref.)
        batch = {"$schema": schema.get("$schema", _DRAFT), "type": "array", "items": schema}
        self._many = jsonschema_rs.validator_for(batch, **options)

    @property
    def slow(self) -> Validator:
        if self._slow is None:
            self._slow = self._slow_factory()
        return self._slow

    def is_valid(self, instance: Any) -> bool:
        ensure_headroom()
        try:
            return bool(self._one.is_valid(instance))
        except Exception:  # a value the compiled side cannot represent: ask jsonschema
            return False

    def valid_all(self, instances: Sequence[Any]) -> bool:
        ensure_headroom()
        try:
            return bool(self._many.is_valid(list(instances)))
        except Exception:
            return False

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
        if self.is_valid(instance):
            return iter(())
        return self.slow.iter_errors(instance)
