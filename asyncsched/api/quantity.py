"""Kubernetes resource quantities, parsed exactly.

A quantity such as ``500m``, ``1.5Gi`` or ``2e3`` becomes a ``Fraction`` so no
precision is lost; callers round to the unit they store (millicores, bytes,
device counts) in one place, :func:`to_units`, which also keeps the amount
within what the model's int64 arrays hold.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

__all__ = [
    "MAX_UNITS",
    "QuantityError",
    "format_units",
    "parse_quantity",
    "to_units",
    "unit_name",
]

MAX_UNITS = 2**63 - 1
"""The largest amount stored, in the resource's unit: an int64, as Kubernetes' own
quantities are capped at 2**63-1. :func:`to_units` never returns more, so the node
arrays never wrap around."""
_MAX_EXPONENT = 1000
"""A quantity with a larger decimal exponent is refused before its exact value is built
(1e999999999 would take all memory); anything past about 1e19 is refused anyway."""


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
    r"(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?\Z"
)


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity; raise QuantityError if it is not one."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}: not a finite number")
        return Fraction(str(value))
    text = value.strip()
    match = _PATTERN.match(text)
    if match is None:
        raise QuantityError(f"invalid quantity {_shown(value)}")
    try:
        number = Fraction(match.group("num"))
        exponent = int(match.group("exp") or 0)
    except ValueError:  # more digits than Python converts
        raise QuantityError(f"invalid quantity {_shown(value)}: too many digits") from None
    if abs(exponent) > _MAX_EXPONENT:
        raise QuantityError(f"invalid quantity {_shown(value)}: exponent out of range")
    suffix = match.group("suffix")
    if match.group("exp") is not None:
        number *= Fraction(10) ** exponent
    elif suffix in _BINARY:
        number *= _BINARY[suffix]
    else:
        number *= _DECIMAL[suffix or ""]
    return -number if match.group("sign") == "-" else number


def to_units(resource: str, value: str | int | float, *, strict: bool = False) -> int:
    """Convert a quantity to the integer unit asyncsched stores for ``resource``.

    CPU is kept in millicores; every other resource in its base unit (bytes,
    devices, pods), rounded up as Kubernetes does for requests. An amount beyond
    :data:`MAX_UNITS` either way is capped there, as Kubernetes caps its quantities
    (what an API server hands us stays readable); with ``strict`` it is refused
    with QuantityError instead, for input a user can still fix.
    """
    exact = parse_quantity(value)
    if resource == "cpu":
        exact *= 1000
    whole = -((-exact.numerator) // exact.denominator)
    if abs(whole) > MAX_UNITS:
        if strict:
            raise QuantityError(
                f"invalid quantity {_shown(value)}: more than 2^63-1 {unit_name(resource)}, "
                "the largest amount asyncsched can hold"
            )
        whole = MAX_UNITS if whole > 0 else -MAX_UNITS
    return int(whole)


def unit_name(resource: str) -> str:
    """What one stored unit of ``resource`` is, for messages."""
    return "millicores" if resource == "cpu" else "bytes" if _is_bytes(resource) else "units"


def _is_bytes(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def _shown(value: str | int | float) -> str:
    """The value as messages quote it, cut short when it is absurdly long."""
    text = repr(value)
    if len(text) <= 60:
        return text
    return f"{text[:40]}...{text[-10:]} ({len(str(value))} characters)"


def format_units(resource: str, units: int) -> str:
    """Render stored units back in the notation users write (``1500m``, ``4Gi``, ``8``)."""
    if resource == "cpu":
        return f"{units // 1000}" if units % 1000 == 0 else f"{units}m"
    if _is_bytes(resource):
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if units and units % factor == 0:
                return f"{units // factor}{suffix}"
    return str(units)
