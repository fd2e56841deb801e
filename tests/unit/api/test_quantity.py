from __future__ import annotations

from fractions import Fraction

import pytest

from asyncsched.api import QuantityError, parse_quantity, to_units


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", Fraction(1)),
        ("500m", Fraction(1, 2)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("2e3", Fraction(2000)),
        ("1Ki", Fraction(1024)),
        ("100M", Fraction(10**8)),
        (".5", Fraction(1, 2)),
        ("0.1", Fraction(1, 10)),
        (4, Fraction(4)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_quantities_parse_exactly(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["12x", "", "1.2.3", "Gi", "1 Gi", "1gi"])
def test_bad_quantities_are_refused(text: str) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        parse_quantity(text)


def test_units_cpu_in_millicores_others_rounded_up() -> None:
    assert to_units("cpu", "1.5") == 1500
    assert to_units("cpu", "100m") == 100
    assert to_units("cpu", "0.0001") == 1
    assert to_units("memory", "1Gi") == 2**30
    assert to_units("memory", "1.5") == 2
    assert to_units("nvidia.com/gpu", 8) == 8
