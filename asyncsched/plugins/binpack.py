"""binpack: prefer the nodes a task fills most, to keep whole nodes free for large jobs.

Volcano's formula, evaluated over the candidate rows of the node table: for
each resource the task requests and binpack weighs, (used + request) /
allocatable x weight; the sum is divided by the sum of those weights and
scaled to 0..100 x ``binpack.weight``. A node where any weighed resource would
overflow scores 0, as in Volcano.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from asyncsched.framework import ArgumentError, Arguments, Session
from asyncsched.framework.hooks import BATCH_NODE_ORDER, FloatArray, IntArray
from asyncsched.model import TaskInfo
from asyncsched.model.resource import CPU, MEMORY

__all__ = ["BinpackPlugin"]

log = logging.getLogger(__name__)

MAX_NODE_SCORE = 100
WEIGHT = "binpack.weight"
CPU_WEIGHT = "binpack.cpu"
MEMORY_WEIGHT = "binpack.memory"
RESOURCES = "binpack.resources"
RESOURCE_PREFIX = RESOURCES + "."


class BinpackPlugin:
    """Scores nodes by how full they would be with the task on them."""

    name: ClassVar[str] = "binpack"

    def __init__(self, arguments: Arguments) -> None:
        self.weight = arguments.get_int(WEIGHT, 1)
        self.resource_weights = _resource_weights(arguments)

    def on_session_open(self, ssn: Session) -> None:
        if self.weight == 0:
            return

        def score(task: TaskInfo, candidates: IntArray) -> FloatArray:
            return self.scores(ssn, task, candidates)

        ssn.add(BATCH_NODE_ORDER, self.name, score)

    def on_session_close(self, ssn: Session) -> None:
        pass

    def scores(self, ssn: Session, task: TaskInfo, candidates: IntArray) -> FloatArray:
        table = ssn.table
        total = np.zeros(len(candidates), dtype=np.float64)
        overflow = np.zeros(len(candidates), dtype=np.bool_)
        weight_sum = 0
        for name, request in task.resreq.items():
            weight = self.resource_weights.get(name)
            if weight is None or request == 0:
                continue
            weight_sum += weight
            column = table.index.get(name)
            if weight == 0 or column is None:
                continue
            allocatable = table.allocatable[candidates, column]
            after = allocatable - table.idle[candidates, column] + request
            present = allocatable > 0
            overflow |= present & (after > allocatable)
            total += np.where(present, after * weight / np.where(present, allocatable, 1), 0.0)
        if weight_sum > 0:
            total /= weight_sum
        total *= MAX_NODE_SCORE * self.weight
        total[overflow] = 0.0
        return total


def _resource_weights(arguments: Arguments) -> dict[str, int]:
    """Weight per resource name; negative weights fall back to 1, as Volcano does."""
    listed = arguments.raw(RESOURCES)
    if listed is None:
        names: list[str] = []
    elif isinstance(listed, str):
        names = [n.strip() for n in listed.split(",") if n.strip()]
    elif isinstance(listed, list) and all(isinstance(n, str) for n in listed):
        names = [n.strip() for n in listed if n.strip()]
    else:
        raise ArgumentError(
            f"plugin binpack: argument {RESOURCES!r} must be a comma-separated list "
            f"of resource names, got {listed!r}"
        )
    weights = {name: _non_negative(arguments, RESOURCE_PREFIX + name) for name in names}
    weights[CPU] = _non_negative(arguments, CPU_WEIGHT)
    weights[MEMORY] = _non_negative(arguments, MEMORY_WEIGHT)
    given: list[str] = arguments.keys()
    for key in given:
        if key.startswith(RESOURCE_PREFIX) and key[len(RESOURCE_PREFIX) :] not in names:
            log.warning("binpack: %s has no effect: the resource is not in %s", key, RESOURCES)
    return weights


def _non_negative(arguments: Arguments, key: str) -> int:
    value = arguments.get_int(key, 1)
    return 1 if value < 0 else value
