"""Per-session state of actions and plugins, in typed slots.

A module that keeps something for the length of a session (a cache shared by
the actions, sums several plugins ask for) declares a ``Slot`` next to the
code that uses it, with the type and the factory of its state;
``Session.state(slot)`` gives the session's value, made on first use and
dropped with the session.
Nothing is looked up by a string key, and a slot's type is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Slot"]

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Slot(Generic[T]):
    """A place for one module's per-session state; ``owner`` is that module."""

    owner: str
    make: Callable[[], T]
    doc: str
