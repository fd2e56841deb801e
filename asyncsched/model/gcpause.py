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

__all__ = [
    "MIDDLE_GENERATION_THRESHOLD",
    "YOUNG_GENERATION_THRESHOLD",
    "freeze_long_lived",
    "freeze_young",
    "gc_paused",
]

YOUNG_GENERATION_THRESHOLD = 50_000
"""Allocations (net of frees) of tracked objects between two young passes (Python's
default: 700).

A scheduler's cyclic garbage is rare: in a burst of 10,000 plain pods on the real bed,
none of the collector's ~430 passes between the first bind and the last freed anything,
yet they took 0.8 s of the 3.9 s the scheduler spent there (and the 35 passes of the whole
run that freed anything, 3,591 objects, came at its start and end): the watch's new pods,
each session's snapshot copies, the binds in flight, walked while alive and walked again in
the middle generation. A young pass every 50,000 allocations walks the same survivors once
but no longer the many that die within that span, and the middle passes (one every
``MIDDLE_GENERATION_THRESHOLD`` young ones) fall out of such a burst. What a cycle holds
waits longer to be freed: at most 50,000 young objects, and what reached the middle
generation until its next pass; nothing is kept for good."""

MIDDLE_GENERATION_THRESHOLD = 10
"""Young passes between two middle-generation passes (Python's default, also 10): one
every ~500,000 allocations at ``YOUNG_GENERATION_THRESHOLD``. At Python's young threshold
this was 100, a middle pass every ~70,000 allocations rather than ~7,000, so that a
session's short-lived survivors were gone before it; the larger young threshold now does
that on its own."""


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
    listing), which bounds that to the objects alive then. The young generation's threshold
    is raised as well (``YOUNG_GENERATION_THRESHOLD``, ``MIDDLE_GENERATION_THRESHOLD``),
    never lowered.
    """
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(
        max(young, YOUNG_GENERATION_THRESHOLD), max(middle, MIDDLE_GENERATION_THRESHOLD), old
    )


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
