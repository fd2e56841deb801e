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


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("cpu", "1e400", "invalid quantity '1e400': more than 2^63-1 millicores"),
        ("cpu", "9223372036854776", "more than 2^63-1 millicores"),
        ("memory", "8Ei", "invalid quantity '8Ei': more than 2^63-1 bytes"),
        ("memory", 2**63, "invalid quantity 9223372036854775808: more than 2^63-1 bytes"),
        ("nvidia.com/gpu", "1e19", "more than 2^63-1 units"),
        ("memory", "-8Ei", "more than 2^63-1 bytes"),
        ("cpu", float("inf"), "invalid quantity inf: not a finite number"),
        ("cpu", float("nan"), "invalid quantity nan: not a finite number"),
        ("cpu", "1e99999999", "invalid quantity '1e99999999': exponent out of range"),
        ("cpu", "1e-99999999", "exponent out of range"),
        ("cpu", "1" * 5000, "(5000 characters): too many digits"),
        ("cpu", "\u0661", "invalid quantity '\u0661'"),
    ],
)
def test_quantities_beyond_int64_or_not_finite_are_refused_when_strict(
    resource: str, value: str | int | float, expected: str
) -> None:
    with pytest.raises(QuantityError) as caught:
        to_units(resource, value, strict=True)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("resource", "value", "units"),
    [
        ("cpu", "1e400", 2**63 - 1),
        ("memory", "8Ei", 2**63 - 1),
        ("memory", "-8Ei", -(2**63 - 1)),
        ("cpu", "9223372036854775807", 2**63 - 1),
    ],
)
def test_quantities_beyond_int64_are_capped_as_kubernetes_caps_them(
    resource: str, value: str, units: int
) -> None:
    """What an API server hands over (already capped in its own unit) stays readable."""
    assert to_units(resource, value) == units


@pytest.mark.parametrize(
    ("resource", "value", "units"),
    [
        ("cpu", "9223372036854775.807", 2**63 - 1),
        ("memory", 2**63 - 1, 2**63 - 1),
        ("memory", "7Ei", 7 * 2**60),
        ("cpu", "1e-400", 1),
        ("cpu", "0e999", 0),
        ("memory", "-1Gi", -(2**30)),
    ],
)
def test_quantities_up_to_int64_are_held_exactly(
    resource: str, value: str | int, units: int
) -> None:
    assert to_units(resource, value, strict=True) == units
