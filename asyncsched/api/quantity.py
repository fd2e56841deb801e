"""Kubernetes resource quantities, parsed exactly.

A quantity such as ``500m``, ``1.5Gi`` or ``2e3`` becomes a ``Fraction`` so no
precision is lost; callers round to the unit they store (millicores, bytes,
device counts) in one place, :func:`to_units`.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["QuantityError", "format_units", "parse_quantity", "to_units"]


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exp>[+-]?\d+))?$"
)


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity; raise QuantityError if it is not one."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    text = value.strip()
    match = _PATTERN.match(text)
    if match is None:
        raise QuantityError(f"invalid quantity {value!r}")
    number = Fraction(match.group("num"))
    suffix = match.group("suffix")
    exponent = match.group("exp")
    if exponent is not None:
        number *= Fraction(10) ** int(exponent)
    elif suffix in _BINARY:
        number *= _BINARY[suffix]
    else:
        number *= _DECIMAL[suffix or ""]
    return -number if match.group("sign") == "-" else number


def to_units(resource: str, value: str | int | float) -> int:
    """Convert a quantity to the integer unit asyncsched stores for ``resource``.

    CPU is kept in millicores; every other resource in its base unit (bytes,
    devices, pods), rounded up as Kubernetes does for requests.
    """
    exact = parse_quantity(value)
    if resource == "cpu":
        exact *= 1000
    whole = -((-exact.numerator) // exact.denominator)
    return int(whole)


def format_units(resource: str, units: int) -> str:
    """Render stored units back in the notation users write (``1500m``, ``4Gi``, ``8``)."""
    if resource == "cpu":
        return f"{units // 1000}" if units % 1000 == 0 else f"{units}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if units and units % factor == 0:
                return f"{units // factor}{suffix}"
    return str(units)
