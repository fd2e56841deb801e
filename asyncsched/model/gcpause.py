"""Pause Python's cyclic garbage collector around one burst of scheduling work.

A session (and the snapshot before it) allocates hundreds of thousands of
short-lived objects; each allocation burst triggers generational collections
that walk the whole long-lived cache as well. Nearly all of a session's
garbage is freed by reference counting anyway, so collection is put off
until the burst ends and then runs as usual. The benchmark measured about a
fifth of a large session's time in collector passes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["freeze_long_lived", "gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable automatic collection inside the block; restore the previous state after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_long_lived() -> None:
    """Collect once, then move every object alive now out of the collector's reach.

    A scheduler's cache of a large cluster (its informers' first listing) is millions of
    objects that live as long as the process; every full collection walks them all (1.2 s
    of CPU at 100,000 pods, measured as one session in ten taking three times as long).
    Frozen, they are still freed by reference counting when the cache drops them; what
    sits in a reference cycle is never collected, so this is done once (after the first
    listing), which bounds that to the objects alive then.
    """
    gc.collect()
    gc.freeze()
