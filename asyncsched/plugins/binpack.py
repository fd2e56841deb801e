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
import numpy.typing as npt

from asyncsched.framework import ArgumentError, Arguments, Session, Slot
from asyncsched.framework.hooks import BATCH_NODE_ORDER, BatchNodeOrderFn, FloatArray, IntArray
from asyncsched.model import Resource, TaskInfo, kernels
from asyncsched.model.resource import CPU, MEMORY

__all__ = ["BinpackPlugin", "resource_weights"]

log = logging.getLogger(__name__)

MAX_NODE_SCORE = 100
WEIGHT = "binpack.weight"


class BinpackPlugin:
    """Scores nodes by how full they would be with the task on them."""

    name: ClassVar[str] = "binpack"

    def __init__(self, arguments: Arguments) -> None:
        self.weight = arguments.get_int(WEIGHT, 1)
        self.resource_weights = resource_weights(arguments)

    def on_session_open(self, ssn: Session) -> None:
        if self.weight == 0:
            return

        score: BatchNodeOrderFn = _Scorer(self, ssn)
        ssn.add(BATCH_NODE_ORDER, self.name, score)

    def on_session_close(self, ssn: Session) -> None:
        pass

    def scores(self, ssn: Session, task: TaskInfo, candidates: IntArray) -> FloatArray:
        """The task's score on each candidate, read from its request's cached row scores."""
        found: FloatArray = self.all_rows(ssn, task)[candidates]
        return found

    def all_rows(self, ssn: Session, task: TaskInfo) -> FloatArray:
        """Every node's score (binpack normalizes nothing across candidates)."""
        cache = ssn.state(_CLASSES)
        table = ssn.table
        if cache.epoch != table.epoch:
            cache.epoch, cache.classes = table.epoch, {}
        n = len(ssn.node_list)
        entry = cache.classes.get(task.resreq)
        if entry is None:
            entry = cache.classes[task.resreq] = _Class(self._parameters(ssn, task), n)
        version = table.version
        if entry.version != version:
            rows = table.refresh_rows(entry.version, n)
            kernels.binpack_rows(
                table.allocatable,
                table.idle,
                np.arange(n, dtype=np.intp) if rows is None else rows,
                *entry.parameters,
                entry.scores,
            )
            entry.version = version
        return entry.scores

    def _parameters(self, ssn: Session, task: TaskInfo) -> _Parameters:
        """Columns, requests and weights of the resources that score, in request order."""
        cols: list[int] = []
        reqs: list[int] = []
        weights: list[int] = []
        weight_sum = 0
        for name, request in task.resreq.items():
            weight = self.resource_weights.get(name)
            if weight is None or request == 0:
                continue
            weight_sum += weight
            column = ssn.table.index.get(name)
            if weight == 0 or column is None:
                continue
            cols.append(column)
            reqs.append(request)
            weights.append(weight)
        return (
            np.array(cols, dtype=np.intp),
            np.array(reqs, dtype=np.int64),
            np.array(weights, dtype=np.int64),
            weight_sum,
            MAX_NODE_SCORE * self.weight,
        )


class _Scorer:
    """binpack's RowScorer for one session."""

    def __init__(self, plugin: BinpackPlugin, ssn: Session) -> None:
        self.plugin = plugin
        self.ssn = ssn

    def __call__(self, task: TaskInfo, candidates: IntArray) -> FloatArray:
        return self.plugin.scores(self.ssn, task, candidates)

    def all_rows(self, task: TaskInfo) -> FloatArray:
        return self.plugin.all_rows(self.ssn, task)


_Parameters = tuple[IntArray, npt.NDArray[np.int64], npt.NDArray[np.int64], int, int]


class _Class:
    """Binpack scores of every node for one request, and the table version they match."""

    __slots__ = ("parameters", "scores", "version")

    def __init__(self, parameters: _Parameters, n: int) -> None:
        self.parameters = parameters
        self.scores: FloatArray = np.zeros(n, dtype=np.float64)
        self.version = -1


class _Classes:
    __slots__ = ("classes", "epoch")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.classes: dict[Resource, _Class] = {}


_CLASSES: Slot[_Classes] = Slot(
    __name__, lambda: _Classes(-1), "Every node's binpack score per request, kept up to date."
)


def resource_weights(
    arguments: Arguments, owner: str = "binpack", prefix: str = "binpack"
) -> dict[str, int]:
    """Weight per resource name from ``<prefix>.cpu``, ``<prefix>.memory``,
    ``<prefix>.resources`` and ``<prefix>.resources.<name>``; negative weights fall back to
    1, as Volcano does (binpack's and network-topology-aware's HyperNode binpack)."""
    listing = f"{prefix}.resources"
    listed = arguments.raw(listing)
    if listed is None:
        names: list[str] = []
    elif isinstance(listed, str):
        names = [n.strip() for n in listed.split(",") if n.strip()]
    elif isinstance(listed, list) and all(isinstance(n, str) for n in listed):
        names = [n.strip() for n in listed if n.strip()]
    else:
        raise ArgumentError(
            f"plugin {owner}: argument {listing!r} must be a comma-separated list "
            f"of resource names, got {listed!r}"
        )
    weights = {name: _non_negative(arguments, f"{listing}.{name}") for name in names}
    weights[CPU] = _non_negative(arguments, f"{prefix}.cpu")
    weights[MEMORY] = _non_negative(arguments, f"{prefix}.memory")
    given: list[str] = arguments.keys()
    for key in given:
        if key.startswith(f"{listing}.") and key[len(listing) + 1 :] not in names:
            log.warning("%s: %s has no effect: the resource is not in %s", owner, key, listing)
    return weights


def _non_negative(arguments: Arguments, key: str) -> int:
    value = arguments.get_int(key, 1)
    return 1 if value < 0 else value
