"""The collector's settings for a scheduler's long-lived object graph (``gcpause``)."""

from __future__ import annotations

import gc
import weakref

from asyncsched.model.gcpause import MIDDLE_GENERATION_THRESHOLD, freeze_long_lived


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_after_the_freeze_middle_passes_are_rarer_and_new_cycles_are_still_collected() -> None:
    before = gc.get_threshold()
    try:
        freeze_long_lived()
        young, middle, old = gc.get_threshold()
        assert (young, old) == (before[0], before[2])
        assert middle == max(before[1], MIDDLE_GENERATION_THRESHOLD) > 10
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None  # made after the freeze: a cycle is freed as before
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
