"""Resource vectors: cpu (millicores), memory (bytes) and any extended resource.

A Resource is immutable; arithmetic returns new values, so a snapshot can never
change the cache by accident. Only non-zero entries are stored.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from asyncsched.api.quantity import format_units, to_units
from asyncsched.model import kernels

__all__ = ["CPU", "MEMORY", "PODS", "Resource"]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

# Volcano treats a request below these floors as empty (a BestEffort pod).
_MIN_MILLI_CPU = 10
_MIN_MEMORY = 1


class Resource:
    """A sparse, immutable vector of resource amounts in integer units."""

    __slots__ = ("_hash", "_values")

    def __init__(self, values: Mapping[str, int] | None = None) -> None:
        self._values: dict[str, int] = {k: v for k, v in values.items() if v} if values else {}
        self._hash: int | None = None

    @classmethod
    def from_quantities(cls, quantities: Mapping[str, str | int | float]) -> Resource:
        """Parse a Kubernetes resource list (``{"cpu": "500m", "memory": "1Gi"}``)."""
        return cls({name: to_units(name, q) for name, q in quantities.items()})

    def get(self, name: str) -> int:
        return self._values.get(name, 0)

    def names(self) -> frozenset[str]:
        return frozenset(self._values)

    def items(self) -> Iterator[tuple[str, int]]:
        return iter(self._values.items())

    def as_dict(self) -> dict[str, int]:
        return dict(self._values)

    def is_empty(self) -> bool:
        """True when the request is below Volcano's floors: the pod is BestEffort."""
        for name, value in self._values.items():
            floor = _MIN_MILLI_CPU if name == CPU else _MIN_MEMORY
            if value >= floor:
                return False
        return True

    def is_zero(self) -> bool:
        return not self._values

    def __add__(self, other: Resource) -> Resource:
        return _sum(self, other)

    def __sub__(self, other: Resource) -> Resource:
        return _merged(self, other, True)

    def scale(self, factor: float) -> Resource:
        return Resource({k: int(v * factor) for k, v in self._values.items()})

    def fits_in(self, other: Resource) -> bool:
        """Every dimension of self is at most other's (absent dimensions are zero)."""
        return all(value <= other.get(name) for name, value in self._values.items())

    def fits_in_where_set(self, other: Resource) -> bool:
        """Like fits_in, but dimensions other does not mention are unlimited (a capability)."""
        return all(
            value <= other._values[name]
            for name, value in self._values.items()
            if name in other._values
        )

    def within(self, used: Resource, limit: Resource, ignore: str = "") -> bool:
        """Does ``used`` + self stay within ``limit`` in every dimension self asks a positive
        amount of (but ``ignore``)? Absent dimensions are zero; the sum is never built."""
        return kernels.within_limits(self._values, used._values, limit._values, ignore)

    def minimum(self, other: Resource) -> Resource:
        names = self.names() | other.names()
        return Resource({n: min(self.get(n), other.get(n)) for n in names})

    def maximum(self, other: Resource) -> Resource:
        names = self.names() | other.names()
        return Resource({n: max(self.get(n), other.get(n)) for n in names})

    def clamp_non_negative(self) -> Resource:
        return Resource({k: v for k, v in self._values.items() if v > 0})

    def insufficient(self, available: Resource) -> list[str]:
        """Names of the dimensions where self exceeds available, sorted."""
        return sorted(n for n, v in self._values.items() if v > available.get(n))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resource) and self._values == other._values

    def __hash__(self) -> int:
        found = self._hash
        if found is None:
            found = self._hash = hash(frozenset(self._values.items()))
        return found

    def __bool__(self) -> bool:
        return bool(self._values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}: {format_units(k, v)}" for k, v in sorted(self._values.items()))
        return f"Resource({{{inner}}})"


def _sum(a: Resource, b: Resource) -> Resource:
    """``a + b``; typed by ``resource.pxd`` when compiled, as ``_merged`` is."""
    if not b._values:
        return a  # immutable, so sharing is safe
    if not a._values:
        return b  # no zeros stored: nothing to drop
    return _merged(a, b, False)


def _merged(a: Resource, b: Resource, negate: bool) -> Resource:
    """A new Resource of ``a`` plus (minus, when ``negate``) ``b``, its hash not taken.

    Compiled, ``resource.pxd`` types the three as Resource, so the amounts are read and the
    answer made without a lookup by name: several of these run for every task placed.
    """
    made = Resource.__new__(Resource)
    made._values = kernels.merge_amounts(a._values, b._values, negate)
    made._hash = None
    return made


def _of(values: dict[str, int]) -> Resource:
    """A Resource of a dict the caller hands over (zeros dropped), without copying it twice."""
    made = Resource.__new__(Resource)
    made._values = values if all(values.values()) else {k: v for k, v in values.items() if v}
    made._hash = None
    return made


EMPTY = Resource()
