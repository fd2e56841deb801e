"""Orders given by sort keys: the same answers as the plugins' comparisons, compared in C.

An order hook (job, task, queue order) is a comparison of two items, asked on
every sort and heap comparison, through the hook's rule over every plugin.
With thousands of pending jobs a session spends much of its time there. A
plugin whose comparison is really "compare these keys" registers it as a
``KeyOrder``: it still answers comparisons as before, and when every plugin of
the hook has a key the session can order items by one tuple per item, the
plugins' keys in tier order and then the session's fallback, which Python's
sorts and heaps compare without calling back into the plugins. That tuple
orders exactly as the rule does: the first plugin whose keys differ decides,
as the first non-zero comparison does.

A key is read when it is taken. A sort takes every key at once and changes
nothing while it sorts, so taken keys are exact. A heap that keeps keys taken
when items entered it (``Session.job_key(frozen=True)``) is exact only while no
item's key changes inside the heap; so a key may depend only on its item's own
standing (drf's share of the job, gang's readiness, the priority), which in
allocate and enqueue changes only for the item taken out of the heap. Preempt
and reclaim evict from jobs that may sit in the heap, so they compare keys read
at each comparison (still without the rule's per-plugin calls).

``ASYNCSCHED_SHORTCUTS=0`` turns keyed orders off (every comparison goes
through the rule, as before keys existed); so do the call modes of
:mod:`asyncsched.framework.calls`. tests/scenarios/properties checks that the
events are byte-identical either way.

An order without keys sorts through ``OrderKey``, a sort key over the
session's ``before(left, right)`` comparison, and waits in heaps as a
``HeapEntry``: right for any comparison, but each one calls the plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["NO_OPINION", "HeapEntry", "KeyOrder", "OrderKey", "live_before", "tuple_key"]

T = TypeVar("T")


class KeyOrder(Generic[T]):
    """A comparison defined by a key: -1 when ``key(left) < key(right)``, 1 when
    ``key(right) < key(left)``, else 0 (no opinion).

    Keys must be totally preordered by ``<`` and ``==`` (numbers without NaN,
    strings, tuples of those) and depend only on the item's own standing (see the
    module's docstring). ``fixed``: the key reads only what no session changes on a
    handed-out item (a task's priority) and never raises, so an order of given items is
    the same whenever it is taken (``Session.fixed_task_order``).
    """

    __slots__ = ("fixed", "key")

    def __init__(self, key: Callable[[T], Any], *, fixed: bool = False) -> None:
        self.key = key
        self.fixed = fixed

    def __call__(self, left: T, right: T) -> int:
        a, b = self.key(left), self.key(right)
        if a < b:
            return -1
        return 1 if b < a else 0


class _NoOpinion:
    """A key part equal to every other and less than none: the place of a plugin whose
    key raised (it has no opinion, as a comparison that raised has none)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "NO_OPINION"


NO_OPINION: Any = _NoOpinion()


def tuple_key(
    keys: Sequence[tuple[str, Callable[[Any], Any]]],
    fallback: Callable[[Any], tuple[Any, ...]],
    failed: Callable[[str, Exception], None],
) -> Callable[[Any], tuple[Any, ...]]:
    """One tuple per item: each plugin's key (``(plugin, key)`` in tier order), then
    ``fallback``. A key that raises is reported through ``failed`` and has no opinion."""
    plain = [key for _, key in keys]

    def key_of(item: Any) -> tuple[Any, ...]:
        try:
            return (*[key(item) for key in plain], *fallback(item))
        except Exception:
            return _contained(keys, fallback, failed, item)

    return key_of


def _contained(
    keys: Sequence[tuple[str, Callable[[Any], Any]]],
    fallback: Callable[[Any], tuple[Any, ...]],
    failed: Callable[[str, Exception], None],
    item: Any,
) -> tuple[Any, ...]:
    """``tuple_key``'s tuple when a key raised: each key asked alone, the failing ones
    reported and without an opinion. (A module function: an inner one that ``key_of``
    named would, compiled, hold the closure that holds it, a cycle per key made.)"""
    parts = []
    for plugin, key in keys:
        try:
            parts.append(key(item))
        except Exception as exc:  # a plugin must never take the scheduler down
            failed(plugin, exc)
            parts.append(NO_OPINION)
    return (*parts, *fallback(item))


def live_before(key: Callable[[Any], Any]) -> Callable[[Any, Any], bool]:
    """``before(left, right)`` from keys read at each comparison (for walks whose items
    may change while they wait)."""

    def before(left: Any, right: Any) -> bool:
        return bool(key(left) < key(right))

    return before


class OrderKey:
    """A sort key from a ``before(left, right)`` order, like ``functools.cmp_to_key`` of
    ``-1 if before(l, r) else 1 if before(r, l) else 0``, with the same answers.

    Sorts and heaps only ask ``<``, which is ``before(l, r)`` alone: one round of
    plugin calls per comparison instead of two when ``l`` does not go first.
    """

    __slots__ = ("before", "item")

    def __init__(self, before: Callable[[Any, Any], bool], item: Any) -> None:
        self.before = before
        self.item = item

    def __lt__(self, other: OrderKey) -> bool:
        return self.before(self.item, other.item)

    def __gt__(self, other: OrderKey) -> bool:
        return self.before(other.item, self.item)

    def __le__(self, other: OrderKey) -> bool:
        return not self.before(other.item, self.item)

    def __ge__(self, other: OrderKey) -> bool:
        return not self.before(self.item, other.item)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OrderKey):
            return NotImplemented
        return not self.before(self.item, other.item) and not self.before(other.item, self.item)

    __hash__ = None  # type: ignore[assignment]


class HeapEntry:
    """A heap entry ordered by an OrderKey, then by insertion: a (key, counter, item) tuple
    without the tuple's ``==`` probe, which would run the plugins' order twice more."""

    __slots__ = ("counter", "item", "key")

    def __init__(self, key: OrderKey, counter: int, item: Any) -> None:
        self.key = key
        self.counter = counter
        self.item = item

    def __lt__(self, other: HeapEntry) -> bool:
        mine, theirs = self.key, other.key
        if mine.before(mine.item, theirs.item):
            return True
        if mine.before(theirs.item, mine.item):
            return False
        return self.counter < other.counter
