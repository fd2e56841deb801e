"""The plugin's arguments, read once when the configuration is loaded.

A wrong value fails the configuration with one line naming the plugin and the
argument; on a hot reload the scheduler then keeps the configuration it had.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from asyncsched.api.quantity import QuantityError, to_units
from asyncsched.framework import ArgumentError, Arguments
from asyncsched.model import Resource

__all__ = ["PREFIX", "Settings", "parse_duration"]

PREFIX = "antistarvation."

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
    """Seconds in ``text``: a number of seconds (``90``) or a Go duration (``1h30m``).

    Raises ValueError for anything else, negative or infinite."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ValueError(text) from None
        seconds = sum(float(n) * _UNIT[u] for n, u in parts)
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(text)
    return seconds


@dataclass(frozen=True)
class Settings:
    waiting_threshold: float = 1800.0
    """Seconds a job waits (since its PodGroup was created) before it may be starving."""
    large_cluster_share: float = 0.25
    """A job is large when it asks for this share of the cluster in some resource (0: not
    asked; the default holds only when neither of the other two tests is named)."""
    large_queue_share: float = 0.0
    """... or this share of its queue's capability (0: not asked)."""
    large_resources: Resource = field(default_factory=Resource)
    """... or at least this much of some resource (empty: not asked)."""
    min_priority: int = 0
    """Jobs below this priority never starve here."""
    max_reserved_share: float = 0.5
    """At most this share of the cluster (each resource) is held for starving jobs."""
    max_hold: float = 7200.0
    """A reservation holds this long, then rests as long (0: holds until the job starts)."""

    @classmethod
    def from_arguments(cls, arguments: Arguments) -> Settings:
        known = [PREFIX + key for key in _KNOWN]
        given: list[str] = arguments.keys()
        unknown = [key for key in given if key not in known]
        if unknown:
            raise ArgumentError(
                f"plugin antistarvation: unknown argument {unknown[0]!r} "
                f"(known: {', '.join(known)})"
            )
        defaults = cls()
        threshold = _duration(arguments, "waitingThreshold", defaults.waiting_threshold)
        if threshold <= 0:
            raw = arguments.raw(PREFIX + "waitingThreshold")
            raise _fail("waitingThreshold", raw, "a duration above 0")
        # The cluster share is the default test of largeness only when no other is named.
        named = any(PREFIX + key in arguments for key in ("largeQueueShare", "largeResources"))
        return cls(
            waiting_threshold=threshold,
            large_cluster_share=_share(
                arguments, "largeClusterShare", 0.0 if named else defaults.large_cluster_share
            ),
            large_queue_share=_share(arguments, "largeQueueShare", defaults.large_queue_share),
            large_resources=_resources(arguments, "largeResources"),
            min_priority=arguments.get_int(PREFIX + "minPriority", defaults.min_priority),
            max_reserved_share=_share(arguments, "maxReservedShare", defaults.max_reserved_share),
            max_hold=_duration(arguments, "maxHold", defaults.max_hold),
        )


_KNOWN = (
    "waitingThreshold",
    "largeClusterShare",
    "largeQueueShare",
    "largeResources",
    "minPriority",
    "maxReservedShare",
    "maxHold",
)


def _fail(key: str, value: object, wanted: str) -> ArgumentError:
    return ArgumentError(
        f"plugin antistarvation: argument {PREFIX + key!r} must be {wanted}, got {value!r}"
    )


def _duration(arguments: Arguments, key: str, default: float) -> float:
    value = arguments.raw(PREFIX + key)
    if value is None:
        return default
    try:
        return parse_duration(str(value))
    except ValueError:
        raise _fail(key, value, "a duration such as 30m or 1h30m") from None


def _share(arguments: Arguments, key: str, default: float) -> float:
    value = arguments.raw(PREFIX + key)
    if value is None:
        return default
    try:
        share = float(str(value))
    except ValueError:
        share = math.nan
    if isinstance(value, bool) or not 0 < share <= 1:
        raise _fail(key, value, "a share above 0, at most 1")
    return share


def _resources(arguments: Arguments, key: str) -> Resource:
    value = arguments.raw(PREFIX + key)
    if value is None:
        return Resource()
    wanted = "a map of resource names to quantities, such as {nvidia.com/gpu: 8}"
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise _fail(key, value, wanted)
    try:
        amounts = {name: to_units(name, q, strict=True) for name, q in value.items()}
    except (QuantityError, TypeError, ValueError):
        raise _fail(key, value, wanted) from None
    if any(amount <= 0 for amount in amounts.values()):
        raise _fail(key, value, "positive quantities")
    return Resource(amounts)
