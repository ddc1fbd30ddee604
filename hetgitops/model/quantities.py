"""Kubernetes quantities: parse, multiply and print in the API server's canonical form.

The API server rewrites quantities (`12000m` -> `12`, `1024Mi` -> `1Gi`); emitting the canonical
form ourselves is what keeps Argo CD from showing permanent drift.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal
from fractions import Fraction

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -3, "u": -2, "m": -1, "": 0, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$"
)


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


# Pure functions of a few hundred distinct values, asked tens of thousands of times per fleet
# (every queue, quota and pod): cached by value (typed: 1 and 1.0 are different texts).
@functools.lru_cache(maxsize=1 << 14, typed=True)
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
    exponent = int(suffix[1:]) if len(suffix) < 12 else None
    if exponent is not None and abs(exponent) <= 30:
        return number * (Decimal(10) ** exponent), False
    return _exact(text, match.group(1) + suffix), False


_NANO = Decimal("1E-9")
_LARGEST_EXPONENT = 999_999  # Decimal's default Emax: past it, arithmetic is an Overflow


def _exact(text: str | int | float, written: str) -> Decimal:
    """A far exponent read without rounding to Decimal's context (`Decimal(10) ** e` made
    1e-999999999 zero and 1e999999999 an Overflow). Kubernetes keeps the exact value
    (apimachinery quantity.go:355, the exponent set as the scale) and rounds a nonzero value
    up to a nanounit (quantity.go:374); a value past Decimal's range is refused here, and
    every reader refuses one past Kubernetes' int64 anyway."""
    try:
        value = Decimal(written)
    except ArithmeticError:
        value = Decimal("Infinity")
    if value.is_finite() and value.adjusted() < -9:
        return _NANO.copy_sign(value) if value else value
    if not value.is_finite() or value.adjusted() > _LARGEST_EXPONENT:
        raise QuantityError(f"{str(text)[:40]!r}: its exponent is out of range")
    return value


@functools.lru_cache(maxsize=1 << 14)
def canonical(value: Decimal, binary: bool = False) -> str:
    """Format like the API server: plain integers below 1000, binary sizes in the largest Xi.

    Always a string: Kubernetes serialises a `resource.Quantity` as a JSON string, so a YAML
    int (`960`) comes back from the webhooks as `"960"` and a GitOps diff never settles."""
    if value == 0 or (value == value.to_integral_value() and not binary and abs(value) < 1000):
        return str(int(value))  # zero has no unit: `0`, never `0E`
    if binary and value == value.to_integral_value() and value != 0:
        for suffix, power in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
            unit = Decimal(1024) ** power
            if value % unit == 0:
                return f"{int(value / unit)}{suffix}"
        return str(int(value))
    for suffix, power in sorted(_DECIMAL.items(), key=lambda kv: -kv[1]):
        unit = Decimal(1000) ** power
        scaled = value / unit
        if scaled == scaled.to_integral_value() and (power <= 0 or value % unit == 0):
            return f"{int(scaled)}{suffix}"
    # Finer than nanounits: the API server rounds up to 1n.
    return f"{int((value * Decimal(10) ** 9).to_integral_value(rounding='ROUND_CEILING'))}n"


def times(quantity: str | int | float, factor: int | float) -> str:
    """`quantity * factor`, canonical; used for cpu/memory per card times cards."""
    value, binary = parse(quantity)
    return canonical(value * Decimal(str(factor)), binary)


@functools.lru_cache(maxsize=1 << 14, typed=True)
def times_rounded_up(quantity: str | int | float, factor: Fraction, *, step: str) -> str:
    """`quantity * factor` rounded up to a whole number of `step`s (`1`, `1Gi`), canonical in
    the step's family; exact, so 56 x 1/7 x 12 is 96 and not 97."""
    value, _ = parse(quantity)
    unit, binary = parse(step)
    steps = math.ceil(Fraction(value) * factor / Fraction(unit))
    return canonical(steps * unit, binary)


def normalize(quantity: str | int | float) -> str:
    value, binary = parse(quantity)
    return canonical(value, binary)


def value_of(quantity: str | int | float) -> Decimal:
    return parse(quantity)[0]
