"""`hetgitops.model.quantities`: canonical forms are strings, as the API server returns them."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from hetgitops.model import quantities


@pytest.mark.parametrize(
    ("given", "canonical"),
    [(0, "0"), (12, "12"), ("12000m", "12"), ("1024Mi", "1Gi"), ("9216Gi", "9Ti"), ("0.5", "500m")],
)
def test_canonical_forms_are_strings(given: str | int, canonical: str) -> None:
    assert quantities.normalize(given) == canonical


def test_times_rounded_up_to_a_whole_step() -> None:
    # 240/7 cards (online-inference on h100-infer) x 12 cpu = 411.4 -> 412; x 96Gi -> 3292Gi
    assert quantities.times_rounded_up("12", Fraction(240, 7), step="1") == "412"
    assert quantities.times_rounded_up("96Gi", Fraction(240, 7), step="1Gi") == "3292Gi"
    # exact: 7 x 1/7 of a card is one card, not a hair more
    assert quantities.times_rounded_up("12", Fraction(1, 7) * 7, step="1") == "12"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # Was 0 (Decimal's context underflow): Kubernetes rounds it up to a nanounit.
        ("1e-999999999", Decimal("1E-9")),
        ("1e999999", Decimal("1E+999999")),  # was an Overflow (an internal error)
        ("2e3", Decimal(2000)),
        ("1.5e-3", Decimal("0.0015")),
    ],
)
def test_an_exponent_is_read_exactly_as_kubernetes_does(text: str, value: Decimal) -> None:
    assert quantities.parse(text) == (value, False)


@pytest.mark.parametrize("text", ["1e999999999", "1e99999999999999999999", "1e" + "9" * 5000])
def test_an_exponent_past_any_bound_is_a_quantity_error(text: str) -> None:
    with pytest.raises(quantities.QuantityError, match="exponent is out of range"):
        quantities.parse(text)
