"""The progress line of a long simulation: simulated time, pods done, wall rate.

Shown on stderr only when stderr is a terminal, with tqdm (which people know
from their own training scripts); redrawn at most a few times a second, and
never written into files or pipes.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import IO, Never

from tqdm import tqdm

from asyncsched.backends.sim import Simulation

__all__ = ["Progress"]

_EVERY = 0.25
"""Seconds of wall time between redraws."""


class Progress:
    """Call with the simulation after each instant; ``close`` (or leave the ``with``) at the end."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self._bar: tqdm[Never] | None = None
        self._next = 0.0
        self._done = 0

    def __call__(self, sim: Simulation) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + _EVERY
        bar = self._bar
        if bar is None:
            bar = self._bar = tqdm(
                file=self.stream, unit=" pods", desc="simulating", leave=False, dynamic_ncols=True
            )
        done = sim.recorder.ended
        bar.update(done - self._done)
        self._done = done
        bar.set_postfix_str(
            f"t={sim.now:g}s, {sim.recorder.waiting} waiting, {sim.sessions} sessions",
            refresh=False,
        )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
