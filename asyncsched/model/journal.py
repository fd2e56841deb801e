"""Change tracking for the mutable model objects (TaskInfo, JobInfo, NodeInfo).

Every method or property that changes one of these objects calls ``touch``:
the object is marked touched and, the first time, appended to its journal
(a plain list its owner handed it). The cache reads its journals when it
builds the next snapshot, so it copies only what changed, and it never hands
out again an object a session touched (but for a job whose only change was its
phase, made current in place). See ``asyncsched.model.snapshot``.
"""

from __future__ import annotations

__all__ = ["Journal", "Tracked"]

Journal = list["Tracked"]


class Tracked:
    """Base of the model objects whose changes a journal records."""

    __slots__ = ("journal", "touched")

    journal: Journal | None
    touched: bool

    def touch(self) -> None:
        """Record that this object changed (once until its owner clears ``touched``)."""
        if not self.touched:
            self.touched = True
            journal = self.journal
            if journal is not None:
                journal.append(self)
