"""Reading a session in plugin unit tests: a task by name, every node's score for it."""

from __future__ import annotations

import numpy as np

from asyncsched.framework import Session
from asyncsched.model import TaskInfo

__all__ = ["scores", "task"]


def task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def scores(ssn: Session, name: str) -> dict[str, float]:
    """Every node's total score for the task (rounded so tests compare exactly)."""
    rows = np.arange(len(ssn.node_list), dtype=np.intp)
    found = ssn.node_scores(task(ssn, name), rows)
    return {ssn.node_list[i].name: round(float(s), 6) for i, s in zip(rows, found, strict=True)}
