"""Explain stage, manifest input: a submitted object read through typed, located accessors.

Every field `explain -f` reads goes through `Field`: a value of the wrong type, a count or a
quantity the API server would refuse is a `WorkloadError` naming the file, line, column and
path, never an exception from deep inside. The text is parsed by the load stage's bounded
YAML reader (depth, aliases, size), so a hostile file is refused as early as a policy file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NoReturn

from hetgitops.diagnostics import Severity
from hetgitops.load.policyfiles import MAX_FILE_BYTES
from hetgitops.load.sourcemap import PathKey, SourceMap, format_path
from hetgitops.load.yamlbuild import Parsed
from hetgitops.load.yamlread import read_documents
from hetgitops.model import quantities

INT32_MAX = 2**31 - 1
# Kubernetes holds a quantity in an int64 of its scale: nothing larger is represented.
QUANTITY_MAX = Decimal(2**63 - 1)


class WorkloadError(ValueError):
    """The manifest is not something this command can read (a usage error, exit 2)."""


@dataclass(frozen=True)
class Field:
    """A value of a manifest at `path`; `source` locates it (None for data made in memory)."""

    value: Any
    path: PathKey = ()
    source: SourceMap | None = None

    def refuse(self, problem: str) -> NoReturn:
        where = format_path(self.path) or "document"
        if self.source is not None:
            raise WorkloadError(f"{self.source.at(self.path)}: {where}: {problem}")
        raise WorkloadError(f"{where}: {problem}")

    def __getitem__(self, key: str | int) -> Field:
        """The member `key` (absent: a Field of None); a scalar where a mapping or list
        belongs is refused."""
        if isinstance(key, int):
            items = self.list()
            return Field(items[key] if key < len(items) else None, (*self.path, key), self.source)
        return Field(self.mapping().get(key), (*self.path, key), self.source)

    @property
    def absent(self) -> bool:
        return self.value is None

    def mapping(self) -> dict[str, Any]:
        if self.value is None:
            return {}
        if not isinstance(self.value, dict):
            self.refuse(f"expected a mapping, got {_kind(self.value)}")
        return self.value

    def list(self) -> list[Any]:
        if self.value is None:
            return []
        if not isinstance(self.value, list):
            self.refuse(f"expected a list, got {_kind(self.value)}")
        return self.value

    def items(self) -> Iterator[tuple[str, Field]]:
        for key in self.mapping():
            yield str(key), self[key]

    def each(self) -> Iterator[Field]:
        for i in range(len(self.list())):
            yield self[i]

    def text(self, default: str | None = None) -> str | None:
        if self.value is None:
            return default
        if not isinstance(self.value, str):
            self.refuse(f"expected a string, got {_kind(self.value)}")
        return self.value

    def strings(self) -> dict[str, str]:
        """A map[string]string (labels, annotations, nodeSelector)."""
        return {key: str(value.text()) for key, value in self.items() if not value.absent}

    def count(self, default: int, *, least: int = 0) -> int:
        """A replica count, parallelism or size: an int32 of at least `least`."""
        if self.value is None:
            return default
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            self.refuse(f"expected a whole number, got {_kind(self.value)}")
        if not least <= self.value <= INT32_MAX:
            self.refuse(f"{self.value} is out of range ({least} to {INT32_MAX})")
        return self.value

    def quantity(self) -> Decimal:
        """A resource quantity, as the API server reads it (a string or a number)."""
        if isinstance(self.value, bool) or not isinstance(self.value, (str, int, float)):
            self.refuse(f"expected a quantity, got {_kind(self.value)}")
        try:
            value, _ = quantities.parse(self.value)
        except (quantities.QuantityError, ArithmeticError):
            self.refuse(f"{self.value!r} is not a quantity")
        if not value.is_finite() or abs(value) > QUANTITY_MAX:
            self.refuse(f"{self.value!r} is larger than Kubernetes represents")
        return value


def _kind(value: Any) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}
    return names.get(type(value), "a number" if isinstance(value, (int, float)) else "null")


def documents(text: str, name: str) -> list[Field]:
    """The non-empty documents of `text`, each a Field at its root; a file too large, not
    YAML, too deep or an alias bomb is refused with the load stage's located message."""
    if len(text) > MAX_FILE_BYTES:
        raise WorkloadError(f"{name}: larger than the {MAX_FILE_BYTES} byte limit")
    found: list[Field] = []
    for item in read_documents(name, text):
        if isinstance(item, Parsed):
            found.append(Field(item.data, (), item.source))
        elif item.severity is Severity.ERROR:
            raise WorkloadError(f"{item.span}: {item.message}")
    return found
