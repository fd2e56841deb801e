"""The node masks and counts find_node works with: small pure functions over the node
table's (nodes x dimensions) arrays, and kube-scheduler's words for a lacking resource.

No Python loop over nodes: each check is one comparison over a column, so a task is
checked against every node of the session at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from asyncsched.framework.hooks import BoolArray, FloatArray
from asyncsched.model.node_table import Vector
from asyncsched.model.resource import PODS

__all__ = [
    "TOO_MANY_PODS",
    "best_index",
    "first_failures",
    "fit_masks",
    "insufficient_counts",
    "insufficient_reason",
]

TOO_MANY_PODS = "Too many pods"
"""kube-scheduler's reason when a node has no pod slot left."""


def fit_masks(
    idle: Vector, releasing: Vector, pipelined: Vector, request: Vector, columns: list[int]
) -> tuple[BoolArray, BoolArray]:
    """Per node: does ``request`` fit idle, and does it fit future idle, in every column?

    The arrays are the table's (nodes x dimensions) rows; only ``columns`` are
    read, one strided column at a time, which avoids copying the table. Most
    sessions have nothing releasing or pipelined; then future idle is idle.
    """
    now: BoolArray = np.ones(idle.shape[0], dtype=np.bool_)
    for c in columns:
        now &= idle[:, c] >= request[c]
    if not (np.count_nonzero(releasing) or np.count_nonzero(pipelined)):
        return now, now
    future: BoolArray = np.ones(idle.shape[0], dtype=np.bool_)
    for c in columns:
        future &= idle[:, c] + releasing[:, c] - pipelined[:, c] >= request[c]
    return now, future


def insufficient_counts(
    available: Vector, request: Vector, columns: list[int], rows: BoolArray
) -> list[int]:
    """For each of ``columns``, how many of the ``rows`` nodes have less than the request."""
    return [int(np.count_nonzero((available[:, c] < request[c]) & rows)) for c in columns]


def first_failures(
    failures: Sequence[tuple[str, BoolArray]], n: int
) -> tuple[BoolArray, list[tuple[str, int]]]:
    """Nodes failing any check, and how many nodes each reason was the first failure of."""
    blocked: BoolArray = np.zeros(n, dtype=np.bool_)
    counts: list[tuple[str, int]] = []
    for reason, failed in failures:
        new = np.asarray(failed[:n], dtype=np.bool_) & ~blocked
        count = int(np.count_nonzero(new))
        if count:
            counts.append((reason, count))
            blocked |= new
    return blocked, counts


def best_index(scores: FloatArray) -> int:
    """Position of the highest score; the first one (lowest node index) on ties."""
    return int(np.argmax(scores))


def insufficient_reason(dimension: str) -> str:
    """kube-scheduler's wording, which autoscalers and users recognise."""
    return TOO_MANY_PODS if dimension == PODS else f"Insufficient {dimension}"
