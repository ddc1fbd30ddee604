"""Kubernetes quantities: parse, multiply and print in the API server's canonical form.

The API server rewrites quantities (`12000m` -> `12`, `1024Mi` -> `1Gi`); emitting the canonical
form ourselves is what keeps Argo CD from showing permanent drift.
"""

from __future__ import annotations

import re
from decimal import Decimal

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -3, "u": -2, "m": -1, "": 0, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$"
)


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


def parse(text: str | int | float) -> tuple[Decimal, bool]:
    """Value in base units and whether the binary (Ki/Mi/Gi) family was used."""
    match = _QUANTITY.match(str(text).strip())
    if not match:
        raise QuantityError(f"{text!r} is not a Kubernetes quantity")
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * (Decimal(1024) ** _BINARY[suffix]), True
    if suffix in _DECIMAL:
        return number * (Decimal(1000) ** _DECIMAL[suffix]), False
    return number * (Decimal(10) ** int(suffix[1:])), False


def canonical(value: Decimal, binary: bool = False) -> str | int:
    """Format like the API server: integers stay plain ints; binary sizes use the largest Xi."""
    if value == 0 or (value == value.to_integral_value() and not binary and abs(value) < 1000):
        return int(value)  # zero has no unit: `0`, never `0E`
    if binary and value == value.to_integral_value() and value != 0:
        for suffix, power in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
            unit = Decimal(1024) ** power
            if value % unit == 0:
                return f"{int(value / unit)}{suffix}"
        return int(value)
    for suffix, power in sorted(_DECIMAL.items(), key=lambda kv: -kv[1]):
        unit = Decimal(1000) ** power
        scaled = value / unit
        if scaled == scaled.to_integral_value() and (power <= 0 or value % unit == 0):
            return int(scaled) if suffix == "" else f"{int(scaled)}{suffix}"
    # Finer than nanounits: the API server rounds up to 1n.
    return f"{int((value * Decimal(10) ** 9).to_integral_value(rounding='ROUND_CEILING'))}n"


def times(quantity: str | int | float, factor: int | float) -> str | int:
    """`quantity * factor`, canonical; used for cpu/memory per card times cards."""
    value, binary = parse(quantity)
    return canonical(value * Decimal(str(factor)), binary)


def normalize(quantity: str | int | float) -> str | int:
    value, binary = parse(quantity)
    return canonical(value, binary)


def value_of(quantity: str | int | float) -> Decimal:
    return parse(quantity)[0]
