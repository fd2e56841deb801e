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

__all__ = ["MIDDLE_GENERATION_THRESHOLD", "freeze_long_lived", "freeze_young", "gc_paused"]

MIDDLE_GENERATION_THRESHOLD = 100
"""Young-generation passes between two middle-generation passes (Python's default: 10).

What survives a young pass in a scheduler is mostly snapshot copies (jobs and nodes a
session touched, binds, statuses written) that live for one or a few sessions. At the
default every survivor is walked again about one session later, long-lived or not; at
100 (in the core benchmark, a middle pass every ~8 budgeted sessions) most of the
short-lived ones are gone by then. Cyclic garbage that reached the middle generation
waits longer to be freed; nothing is kept for good. Measured: the collector's CPU in a
budgeted 10,000-node run fell from 0.93-1.02 s to 0.58-0.59 s (BENCHMARKS.md)."""


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
    listing), which bounds that to the objects alive then. The middle generation's
    threshold is raised as well (``MIDDLE_GENERATION_THRESHOLD``).
    """
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young, max(middle, MIDDLE_GENERATION_THRESHOLD), old)


def freeze_young() -> None:
    """Move every object alive now out of the collector's reach, without a collection.

    For a burst of long-lived objects without reference cycles made inside a
    ``gc_paused`` block, before the collector walks them: a first snapshot copies every
    task of the cluster (100,000 at the benchmark's size), and those copies live as long
    as the tasks do (later snapshots make them current in place). Left young, they were
    walked by a young pass when the block ended and again by a middle pass (250 ms of CPU
    in that first session). A collection first would walk them too, so there is none:
    whatever else alive is not frozen yet (little, just after ``freeze_long_lived``) is
    frozen with them, and a cycle among those is never collected; so, once.
    """
    gc.freeze()
